/**
 * Mapped units (issue 14 §2): `forEach` over a list in the configuration or over a JSON list an
 * upstream unit outputs; each item is an instance `name#key` with its own receipt, uid, condition
 * and log. Real repositories, real processes.
 */
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  commitFiles,
  ENV_DEV,
  git,
  makeRepo,
  nyl,
  nylJson,
  parseTable,
  sleep,
  startNyl,
  tempDir,
  waitForFile,
} from './helpers/repo.js';

const L = ['--local'];
const rowsOf = (stdout: string) => Object.fromEntries(parseTable(stdout).map((x) => [x.UNIT, x]));
/** What ran, in order: each script appends its name to a file outside the repository. */
const ran = (ctl: string) => {
  try {
    return readFileSync(join(ctl, 'ran'), 'utf8').trim().split('\n').filter(Boolean).sort();
  } catch {
    return [];
  }
};

function staticSetup() {
  const ctl = tempDir('nyl-foreach-ctl-');
  const yaml = `${ENV_DEV}---
kind: Command
name: regions
forEach: [eu, us, ap, sa, af]
spec:
  run: 'echo "regions#\${{ each.key }}" >> ${ctl}/ran; if [ -e "${ctl}/fail-\${{ each.key }}" ]; then echo "no \${{ each.key }}"; exit 3; fi'
---
kind: Command
name: after
needs: [regions]
spec:
  run: 'echo after >> ${ctl}/ran'
`;
  return { work: makeRepo({ 'nyl.yaml': yaml }), ctl };
}

describe('forEach over a list in the configuration', () => {
  it('runs one instance per item; --failed reruns exactly the failed ones and their dependants, the others stay current', async () => {
    const { work, ctl } = staticSetup();
    writeFileSync(join(ctl, 'fail-us'), '');
    writeFileSync(join(ctl, 'fail-ap'), '');
    const first = await nyl(work, ['reconcile', '-e', 'dev', ...L, '--parallelism', '5']);
    expect(first.code, first.stdout + first.stderr).toBe(1);
    const rows = rowsOf(first.stdout);
    for (const k of ['eu', 'sa', 'af']) expect(rows[`regions#${k}`]?.RESULT).toBe('executed');
    for (const k of ['us', 'ap'])
      expect(rows[`regions#${k}`]).toMatchObject({ RESULT: 'failed', DETAIL: `exited with 3: no ${k}` });
    expect(rows.after?.RESULT).toBe('blocked');
    expect(ran(ctl)).toEqual(['regions#af', 'regions#ap', 'regions#eu', 'regions#sa', 'regions#us']);

    // Each instance has its own uid and log.
    const shown = await nylJson<{ facts: { units: Record<string, { observed: { uid: string } }> } }>(work, [
      'state',
      'show',
      '-e',
      'dev',
      ...L,
    ]);
    const uids = Object.values(shown.json.facts.units).map((u) => u.observed.uid);
    expect(new Set(uids).size).toBe(5);
    const runId = /run:\s+(\S+)/.exec(first.stdout)?.[1] as string;
    const logs = await nyl(work, ['runs', 'logs', '-e', 'dev', ...L, runId, '--unit', 'regions#us']);
    expect(logs.code, logs.stderr).toBe(0);
    expect(logs.stdout).toContain('no us');
    expect(logs.stdout).not.toContain('regions#eu');
    // The group's name: every instance's log.
    const all = await nyl(work, ['runs', 'logs', '-e', 'dev', ...L, runId, '--unit', 'regions']);
    expect(all.stdout).toContain('no us');
    expect(all.stdout).toContain('no ap');

    rmSync(join(ctl, 'fail-us'));
    rmSync(join(ctl, 'fail-ap'));
    rmSync(join(ctl, 'ran'));
    const plan = await nyl(work, ['plan', '-e', 'dev', ...L, '--failed']);
    const planned = rowsOf(plan.stdout);
    expect(planned['regions#us']?.RESULT).toBe('execute');
    expect(planned['regions#eu']?.RESULT).toBe('current');
    const again = await nyl(work, ['reconcile', '-e', 'dev', ...L, '--failed']);
    expect(again.code, again.stdout + again.stderr).toBe(0);
    const r2 = rowsOf(again.stdout);
    for (const k of ['eu', 'sa', 'af']) expect(r2[`regions#${k}`]?.RESULT).toBe('current');
    for (const k of ['us', 'ap']) expect(r2[`regions#${k}`]?.RESULT).toBe('executed');
    expect(r2.after?.RESULT).toBe('executed');
    expect(ran(ctl)).toEqual(['after', 'regions#ap', 'regions#us']);

    // status lists the instances.
    const st = await nyl(work, ['status', '-e', 'dev', ...L]);
    expect(st.code, st.stderr).toBe(0);
    expect(Object.keys(rowsOf(st.stdout)).sort()).toEqual([
      'after',
      'regions#af',
      'regions#ap',
      'regions#eu',
      'regions#sa',
      'regions#us',
    ]);
  });

  it('holds one instance by its key, or all of them by the group name; --from takes the group', async () => {
    const { work, ctl } = staticSetup();
    expect((await nyl(work, ['reconcile', '-e', 'dev', ...L])).code).toBe(0);
    const held = await nyl(work, ['hold', '-e', 'dev', ...L, '--unit', 'regions#eu', '--reason', 'maintenance']);
    expect(held.code, held.stderr).toBe(0);
    let st = rowsOf((await nyl(work, ['status', '-e', 'dev', ...L])).stdout);
    expect(st['regions#eu']?.STATE).toBe('held');
    expect(st['regions#us']?.STATE).toBe('current');
    // --from the group: every instance and its dependants run again, except the held one.
    rmSync(join(ctl, 'ran'));
    // Not idempotent: a reapply is approved, the group's name approving all its instances.
    const approve = ['--approve', 'regions', '--approve', 'after'];
    const from = await nyl(work, [
      'reconcile',
      '-e',
      'dev',
      ...L,
      '--from',
      'regions',
      '--reason',
      'redeploy',
      ...approve,
    ]);
    expect(from.code, from.stdout + from.stderr).toBe(0);
    expect(rowsOf(from.stdout)['regions#eu']?.RESULT).toBe('held');
    expect(ran(ctl)).toEqual(['after', 'regions#af', 'regions#ap', 'regions#sa', 'regions#us']);
    // The group's name holds (then resumes) every instance.
    const all = await nyl(work, ['hold', '-e', 'dev', ...L, '--unit', 'regions', '--reason', 'freeze']);
    expect(all.code, all.stderr).toBe(0);
    st = rowsOf((await nyl(work, ['status', '-e', 'dev', ...L])).stdout);
    for (const k of ['eu', 'us', 'ap', 'sa', 'af']) expect(st[`regions#${k}`]?.STATE).toBe('held');
    expect((await nyl(work, ['resume', '-e', 'dev', ...L, '--unit', 'regions', '--reason', 'thaw'])).code).toBe(0);
    st = rowsOf((await nyl(work, ['status', '-e', 'dev', ...L])).stdout);
    for (const k of ['eu', 'us', 'ap', 'sa', 'af']) expect(st[`regions#${k}`]?.STATE).toBe('current');
    // An unknown key is refused, naming the group.
    const bad = await nyl(work, ['hold', '-e', 'dev', ...L, '--unit', 'regions#mars', '--reason', 'x']);
    expect(bad.code).toBe(1);
    expect(bad.stderr).toContain('NYL-UNIT-UNKNOWN');
  });
});

describe('status of mapped units', () => {
  it('--unit takes an instance key or the group name (all its instances), and an unknown name is refused', async () => {
    const { work, ctl } = staticSetup();
    writeFileSync(join(ctl, 'fail-us'), '');
    expect((await nyl(work, ['reconcile', '-e', 'dev', ...L])).code).toBe(1);
    const group = await nyl(work, ['status', '-e', 'dev', ...L, '--unit', 'regions']);
    expect(Object.keys(rowsOf(group.stdout)).sort()).toEqual([
      'regions#af',
      'regions#ap',
      'regions#eu',
      'regions#sa',
      'regions#us',
    ]);
    expect(group.code).toBe(1); // regions#us failed
    const one = await nyl(work, ['status', '-e', 'dev', ...L, '--unit', 'regions#eu', '--unit', 'after']);
    expect(Object.keys(rowsOf(one.stdout))).toEqual(['regions#eu', 'after']);
    expect(one.stdout + one.stderr).not.toContain('NYL-UNIT-FAILED');
    expect(one.code).toBe(0);
    const unknown = await nyl(work, ['status', '-e', 'dev', ...L, '--unit', 'regions#zz']);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toContain('NYL-UNIT-UNKNOWN');
  });
});

describe('forEach over an upstream output', () => {
  it('expands from the producer’s output; when it drops a key that instance is removed, kept keys keep their uids', async () => {
    const ctl = tempDir('nyl-foreach-ctl-');
    const yaml = (v: string) => `${ENV_DEV}---
kind: Command
name: shards
spec:
  run: 'echo "list=$(cat list.json)" >> "$NYL_OUTPUT" # ${v}'
---
kind: Command
name: apply
forEach: \${{ units.shards.outputs.list }}
spec:
  run: 'echo "apply#\${{ each.key }} \${{ each.value.region }}" >> ${ctl}/ran'
---
kind: Command
name: after
needs: [apply]
spec:
  run: 'echo after >> ${ctl}/ran'
`;
    const list = (items: [string, string][]) => JSON.stringify(items.map(([key, region]) => ({ key, region })));
    const work = makeRepo({
      'nyl.yaml': yaml('v1'),
      'list.json': list([
        ['a', 'eu'],
        ['b', 'us'],
        ['c', 'ap'],
      ]),
    });
    // Before the producer ran, the plan cannot know the instances.
    const plan = await nyl(work, ['plan', '-e', 'dev', ...L]);
    expect(rowsOf(plan.stdout).apply?.RESULT).toBe('maybe');
    expect(rowsOf(plan.stdout).apply?.DETAIL).toMatch(/^mapped over the outputs of shards: /);
    // Its reviewed token covers the instances the producer's output brings.
    const token = /token: +(\S+)/.exec(plan.stdout)?.[1] as string;
    const first = await nyl(work, ['reconcile', '-e', 'dev', ...L, '--plan', token]);
    expect(first.code, first.stdout + first.stderr).toBe(0);
    expect(Object.keys(rowsOf(first.stdout))).toEqual(['shards', 'apply#a', 'apply#b', 'apply#c', 'after']);
    expect(ran(ctl)).toEqual(['after', 'apply#a eu', 'apply#b us', 'apply#c ap']);
    const uidsOf = async () => {
      const s = await nylJson<{ facts: { units: Record<string, { observed: { uid: string } }> } }>(work, [
        'state',
        'show',
        '-e',
        'dev',
        ...L,
      ]);
      return Object.fromEntries(Object.entries(s.json.facts.units).map(([n, u]) => [n, u.observed.uid]));
    };
    const before = await uidsOf();

    // The producer runs again (its script changed) and its list drops b, changes c and adds d.
    rmSync(join(ctl, 'ran'));
    commitFiles(work, {
      'nyl.yaml': yaml('v2'),
      'list.json': list([
        ['a', 'eu'],
        ['c', 'sa'],
        ['d', 'af'],
      ]),
    });
    const second = await nyl(work, ['reconcile', '-e', 'dev', ...L]);
    expect(second.code, second.stdout + second.stderr).toBe(0);
    const rows = rowsOf(second.stdout);
    expect(rows.shards?.RESULT).toBe('executed');
    expect(rows['apply#a']?.RESULT).toBe('current');
    expect(rows['apply#c']?.RESULT).toBe('executed');
    expect(rows['apply#d']?.RESULT).toBe('executed');
    expect(rows['apply#b']?.RESULT).toBe('removed');
    expect(ran(ctl)).toEqual(['apply#c sa', 'apply#d af']);
    const after = await uidsOf();
    expect(after['apply#a']).toBe(before['apply#a']);
    expect(after['apply#c']).toBe(before['apply#c']);
    expect(after['apply#d']).toBeDefined();
    // The removed instance keeps its state until forgotten, like a unit removed from the configuration.
    const st = rowsOf((await nyl(work, ['status', '-e', 'dev', ...L])).stdout);
    expect(st['apply#b']?.STATE).toBe('removed');
    const forget = await nyl(work, ['state', 'forget', '-e', 'dev', ...L, '--unit', 'apply#b', '--reason', 'gone']);
    expect(forget.code, forget.stderr).toBe(0);
    expect(rowsOf((await nyl(work, ['status', '-e', 'dev', ...L])).stdout)['apply#b']).toBeUndefined();
  });
});

describe('forEach in the configuration, refused with file and line', () => {
  const problemsOf = async (yaml: string) => {
    const work = makeRepo({ 'nyl.yaml': yaml });
    const r = await nyl(work, ['plan', '-e', 'dev', ...L]);
    expect(r.code).toBe(1);
    return r.stderr;
  };
  it('repeated keys, keys unusable in a name, each outside forEach, a group’s outputs', async () => {
    const text = await problemsOf(`${ENV_DEV}---
kind: Command
name: dup
forEach: [eu, us, eu]
spec:
  run: echo \${{ each.key }}
---
kind: Command
name: badkey
forEach:
  - key: "has space"
spec:
  run: echo x
---
kind: Command
name: plain
spec:
  run: echo \${{ each.key }}
---
kind: Command
name: objects
forEach:
  - {region: eu}
  - {name: x}
spec:
  run: echo \${{ each.value.region }}
---
kind: Command
name: good
forEach: [a]
spec:
  run: echo \${{ each.value }}
---
kind: Command
name: reader
spec:
  run: echo \${{ units.good.outputs.x }}
`);
    expect(text).toContain('NYL-CONFIG-FOREACH (nyl.yaml:6 forEach.2)');
    expect(text).toContain('key "eu" repeats item 0');
    expect(text).toContain('NYL-CONFIG-FOREACH (nyl.yaml:13 forEach.0)');
    expect(text).toContain('NYL-CONFIG-FOREACH (nyl.yaml:20 spec)');
    expect(text).toContain('is only defined in a unit with forEach');
    expect(text).toContain('NYL-CONFIG-FOREACH (nyl.yaml:26 forEach.1)');
    expect(text).toContain('has no value.region');
    expect(text).toContain('NYL-CONFIG-FOREACH-OUTPUT (nyl.yaml:39 spec.run)');
  });
});

describe('a long wave killed', () => {
  it('keeps the instances that finished early: the heartbeat carries their checkpoints', async () => {
    const ctl = tempDir('nyl-foreach-ctl-');
    const yaml = `${ENV_DEV}---
kind: Command
name: m
forEach: [quick, slow]
spec:
  run: 'echo "m#\${{ each.key }}" >> ${ctl}/ran; if [ "\${{ each.key }}" = slow ]; then touch ${ctl}/slow; sleep 60; fi'
`;
    const work = makeRepo({ 'nyl.yaml': yaml });
    const run = startNyl(work, ['reconcile', '-e', 'dev', ...L], { NYL_HEARTBEAT_INTERVAL: '300ms' });
    await waitForFile(join(ctl, 'slow'));
    // quick has finished: wait for a heartbeat to carry its checkpoint onto the run ref (a fixed
    // pause was too short under load), then kill the run mid-wave.
    const carried = () =>
      git(work, 'for-each-ref', '--format=%(refname)', 'refs/nyl/dev/runs/')
        .split('\n')
        .filter(Boolean)
        .some((ref) =>
          git(work, 'ls-tree', '-r', '--name-only', ref).split('\n').includes('units/m#quick/checkpoint.json'),
        );
    for (const until = Date.now() + 20_000; !carried(); await sleep(50))
      if (Date.now() > until) throw new Error("no heartbeat carried m#quick's checkpoint");
    run.child.kill('SIGKILL');
    await run.done;
    expect((await nyl(work, ['lease', 'break', '-e', 'dev', ...L, '--reason', 'runner died'])).code).toBe(0);
    writeFileSync(join(ctl, 'ran'), '');
    const r = await nyl(work, ['recover', '-e', 'dev', ...L]);
    expect(r.stdout).toContain('imported: ["m#quick"]');
    expect(r.stdout).toContain('recovered: ["m#slow"]');
    const st = rowsOf((await nyl(work, ['status', '-e', 'dev', ...L])).stdout);
    expect(st['m#quick']?.STATE).toBe('current');
    expect(st['m#slow']?.STATE).toBe('uncertain');
    expect(ran(ctl)).toEqual([]);
  });
});
