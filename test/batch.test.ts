/**
 * Batches over an EnvironmentGroup (issue 14 §4, seed 004's date-range batches): `plan --group`
 * prints one token for every environment's plan; `reconcile --group --plan <token>` records the
 * batch on the group's ref and reconciles each environment in turn; the same token continues an
 * interrupted batch (SIGKILL mid-environment) without running environments done again. Executions
 * are counted with marker files the units append to.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  command,
  copyDir,
  GIT_ENV,
  git,
  makeRepo,
  nyl,
  nylJson,
  startNyl,
  tempDir,
  waitForFile,
} from './helpers/repo.js';

const ENVS = ['e1', 'e2', 'e3', 'e4'];

interface BatchEnv {
  environment: string;
  state: string;
  created?: boolean;
  run?: string;
  result: string;
  exit: number;
}
interface BatchJson {
  operation: string;
  outcome: string;
  exit: number;
  rows: { environment: string; unit: string; result: string }[];
  facts: { group: string; token: string; batch?: string; environments: BatchEnv[] };
  problems: { code: string; message: string; fix?: string }[];
}
interface BatchDocJson {
  schema: string;
  token: string;
  environments: { environment: string; started?: { at: string }; done?: { run?: string; result: string } }[];
}

function groupConfig(envs: string[], marks: string, ctl: string, group = 'fleet'): string {
  return [
    `kind: EnvironmentGroup\nname: ${group}\n`,
    ...envs.map((e) => `---\nkind: Environment\nname: ${e}\ngroup: ${group}\n`),
    command('base', `echo base >> ${marks}/$NYL_ENVIRONMENT`),
    // app fails while ctl/fail-ENV exists, and hangs (saying so) while ctl/hang-ENV does: removing
    // the file ends the hang (a fixed sleep would outlive it); at most 120 s, so a unit orphaned by a
    // failed test does not linger.
    command(
      'app',
      `echo app >> ${marks}/$NYL_ENVIRONMENT; if [ -f ${ctl}/fail-$NYL_ENVIRONMENT ]; then exit 3; fi; if [ -f ${ctl}/hang-$NYL_ENVIRONMENT ]; then touch ${ctl}/started-$NYL_ENVIRONMENT; i=0; while [ -f ${ctl}/hang-$NYL_ENVIRONMENT ] && [ $i -lt 1200 ]; do sleep 0.1; i=$((i + 1)); done; fi`,
      { needs: ['base'], spec: { idempotent: true } },
    ),
  ].join('');
}

/**
 * The group of setup(), made once: the marker and control folders are .marks/ and .ctl/ in the work
 * repository (ignored by git; units run there), so a copy of the repository has its own.
 */
let groupOnce: Promise<{ root: string; work: string }> | undefined;
function failedGroup() {
  groupOnce ??= (async () => {
    const root = tempDir('nyl-batch-');
    git(root, 'init', '-q', '--bare', '-b', 'main', 'remote.git');
    const work = makeRepo({ 'nyl.yaml': groupConfig(ENVS, '.marks', '.ctl'), '.gitignore': '.marks/\n.ctl/\n' });
    mkdirSync(join(work, '.marks'));
    mkdirSync(join(work, '.ctl'));
    git(work, 'remote', 'add', 'origin', `file://${join(root, 'remote.git')}`);
    git(work, 'push', '-q', 'origin', 'main');
    for (const e of ENVS) {
      writeFileSync(join(work, '.ctl', `fail-${e}`), '');
      const r = await nyl(work, ['reconcile', '-e', e]);
      expect(r.code, r.stdout + r.stderr).toBe(1);
      rmSync(join(work, '.ctl', `fail-${e}`));
    }
    return { root, work };
  })();
  return groupOnce;
}

/** A group of four environments on a bare remote over file://, each with app failed (a copy of failedGroup()). */
async function setup() {
  const made = await failedGroup();
  const bare = join(copyDir(made.root, 'nyl-batch-'), 'remote.git');
  const work = copyDir(made.work, 'nyl-batch-work-');
  git(work, 'remote', 'set-url', 'origin', `file://${bare}`);
  const marks = join(work, '.marks');
  const ctl = join(work, '.ctl');
  /** How many times each unit ran in an environment. */
  const runs = (env: string, unit: string) => {
    const f = join(marks, env);
    return existsSync(f)
      ? readFileSync(f, 'utf8')
          .split('\n')
          .filter((l) => l === unit).length
      : 0;
  };
  const batchDoc = (ref: string): BatchDocJson | undefined => {
    try {
      return JSON.parse(git(bare, 'show', `${ref}:batch.json`)) as BatchDocJson;
    } catch {
      return undefined;
    }
  };
  return { bare, work, ctl, marks, runs, batchDoc };
}

const planGroup = (cwd: string, extra: string[] = []) =>
  nylJson<BatchJson>(cwd, ['plan', '--group', 'fleet', '--failed', ...extra]);

describe('nyl plan --group / reconcile --group', () => {
  it('plans every environment of the group with one token; a batch SIGKILLed after 2 of 4 environments continues with the other 2 under the same token', async () => {
    const s = await setup();
    // The plan: every environment's app, in promotion order, one token.
    const text = await nyl(s.work, ['plan', '--group', 'fleet', '--failed']);
    expect(text.code, text.stderr).toBe(0);
    expect(text.stdout).toMatch(/^ENVIRONMENT {2}UNIT {2}KIND {5}RESULT {3}DETAIL\n/);
    expect(text.stdout.match(/^ {2}token: +b1\.[0-9a-f]{16}\.\S+$/gm)).toHaveLength(1);
    const p = await planGroup(s.work);
    expect(p.code).toBe(0);
    const token = p.json.facts.token;
    expect(text.stdout).toContain(token);
    expect(p.json.rows.filter((r) => r.unit === 'app').map((r) => [r.environment, r.result])).toEqual(
      ENVS.map((e) => [e, 'execute']),
    );
    expect(p.json.rows.filter((r) => r.unit === 'base').every((r) => r.result === 'current')).toBe(true);

    // The batch hangs in e3: by then e1 and e2 are recorded done, and e3 started.
    writeFileSync(join(s.ctl, 'hang-e3'), '');
    const killed = startNyl(s.work, ['reconcile', '--group', 'fleet', '--failed', '--plan', token]);
    await waitForFile(join(s.ctl, 'started-e3'), 60_000);
    const ref = `refs/nyl/_groups/fleet/batches/${token.split('.')[1]}`;
    const mid = s.batchDoc(ref);
    expect(mid?.schema).toBe('nyl.batch/v1');
    expect(mid?.token).toBe(token);
    expect(
      mid?.environments.map((e) => [e.environment, e.done?.result ?? (e.started ? 'started' : 'waiting')]),
    ).toEqual([
      ['e1', 'success'],
      ['e2', 'success'],
      ['e3', 'started'],
      ['e4', 'waiting'],
    ]);
    const recordedRuns = mid?.environments.slice(0, 2).map((e) => e.done?.run);
    killed.child.kill('SIGKILL');
    await killed.done;
    rmSync(join(s.ctl, 'hang-e3'));
    expect(ENVS.map((e) => s.runs(e, 'app'))).toEqual([2, 2, 2, 1]);

    // The killed process held e3's lease: break it, then the same command continues.
    const broke = await nyl(s.work, ['lease', 'break', '-e', 'e3', '--reason', 'batch runner killed']);
    expect(broke.code, broke.stderr).toBe(0);
    const again = await nylJson<BatchJson>(s.work, ['reconcile', '--group', 'fleet', '--failed', '--plan', token]);
    expect(again.code, again.stdout).toBe(0);
    expect(again.json.outcome).toBe('done');
    expect(again.json.facts.batch).toBe(ref);
    const byEnv = new Map(again.json.facts.environments.map((e) => [e.environment, e]));
    for (const [i, e] of ['e1', 'e2'].entries())
      expect(byEnv.get(e)).toMatchObject({
        state: 'recorded',
        created: false,
        run: recordedRuns?.[i],
        result: 'success',
      });
    for (const e of ['e3', 'e4'])
      expect(byEnv.get(e)).toMatchObject({ state: 'ran', created: true, result: 'success' });
    expect(again.json.rows.map((r) => r.environment)).not.toContain('e1');
    // e1 and e2 ran once in the batch; e3 once more after its killed run; e4 once; base never.
    expect(ENVS.map((e) => s.runs(e, 'app'))).toEqual([2, 2, 3, 2]);
    expect(ENVS.map((e) => s.runs(e, 'base'))).toEqual([1, 1, 1, 1]);
    const status = await nylJson<{ rows: { unit: string; result: string }[] }>(s.work, ['status', '-e', 'e3']);
    expect(status.json.rows.map((r) => r.result)).toEqual(['current', 'current']);

    // All done: the same token answers with the recorded results and runs nothing.
    const third = await nyl(s.work, ['reconcile', '--group', 'fleet', '--failed', '--plan', token]);
    expect(third.code, third.stderr).toBe(0);
    expect(third.stdout).toMatch(/^e1 +done before +success +\S+/m);
    expect(third.stdout).toMatch(/^e4 +done before +success +\S+/m);
    expect(third.stdout).not.toContain('UNIT');
    expect(ENVS.map((e) => s.runs(e, 'app'))).toEqual([2, 2, 3, 2]);
    expect(git(s.bare, 'log', '--format=%s', ref).split('\n')[0]).toMatch(/\(4 of 4 done\)$/);
  }, 180_000);

  it('refuses a stale batch token, naming the environments whose plans changed; nothing runs', async () => {
    const s = await setup();
    const p = await planGroup(s.work);
    // e2's state changes after the plan: its app is forgotten (a new unit to the plan).
    expect((await nyl(s.work, ['state', 'forget', '-e', 'e2', '--unit', 'app', '--reason', 'test'])).code).toBe(0);
    const r = await nylJson<BatchJson>(s.work, [
      'reconcile',
      '--group',
      'fleet',
      '--failed',
      '--plan',
      p.json.facts.token,
    ]);
    expect(r.code).toBe(2);
    expect(r.json.problems[0]?.code).toBe('NYL-BATCH-STALE');
    expect(r.json.problems[0]?.message).toMatch(/the plans of e2 changed/);
    expect(r.json.problems[0]?.fix).toContain('nyl plan --group fleet --failed');
    expect(ENVS.map((e) => s.runs(e, 'app'))).toEqual([1, 1, 1, 1]);
    expect(git(s.bare, 'for-each-ref', 'refs/nyl/_groups/')).toBe('');
    // The token of one environment, or none at all, is not a batch token.
    const one = await nyl(s.work, ['reconcile', '--group', 'fleet', '--plan', 'v2.none.none.0083d2834a41']);
    expect(one.code).toBe(2);
    expect(one.stderr).toMatch(
      /NYL-BATCH-STALE \(fleet\)\n {2}plan v2\.none\.none\.0083d2834a41 is stale: it is the plan token of one environment/,
    );
    // reconcile --group without a token is bad input.
    const none = await nyl(s.work, ['reconcile', '--group', 'fleet']);
    expect(none.code).toBe(1);
    expect(none.stderr).toMatch(/NYL-USAGE\n {2}reconcile --group needs --plan <batch token>/);
  }, 120_000);

  it('a request that finds the batch record changed under it stops and says another request runs the batch; the same token then continues, taking the run that landed as done', async () => {
    const s = await setup();
    const token = (await planGroup(s.work)).json.facts.token;
    const ref = `refs/nyl/_groups/fleet/batches/${token.split('.')[1]}`;
    writeFileSync(join(s.ctl, 'hang-e1'), '');
    const first = startNyl(s.work, ['reconcile', '--group', 'fleet', '--failed', '--plan', token]);
    await waitForFile(join(s.ctl, 'started-e1'), 60_000);
    // Another request writes the record meanwhile (as one continuing the batch would).
    const tip = git(s.bare, 'rev-parse', ref);
    const doc = JSON.parse(git(s.bare, 'show', `${ref}:batch.json`));
    doc.updatedBy = { request: 'another', holder: 'someone@elsewhere' };
    const blob = execFileSync('git', ['hash-object', '-w', '--stdin'], {
      cwd: s.bare,
      input: `${JSON.stringify(doc, null, 2)}\n`,
      encoding: 'utf8',
    }).trim();
    const tree = execFileSync('git', ['mktree'], {
      cwd: s.bare,
      input: `100644 blob ${blob}\tbatch.json\n`,
      encoding: 'utf8',
    }).trim();
    const commit = execFileSync('git', ['commit-tree', tree, '-p', tip, '-m', 'another request'], {
      cwd: s.bare,
      env: { ...process.env, ...GIT_ENV },
      encoding: 'utf8',
    }).trim();
    git(s.bare, 'update-ref', ref, commit, tip);
    rmSync(join(s.ctl, 'hang-e1'));
    const r = await first.done;
    expect(r.code, r.stdout + r.stderr).toBe(2);
    expect(r.stdout).toMatch(
      /error NYL-BATCH-BUSY \(fleet\)\n {2}another request \(someone@elsewhere, which wrote it at [^)]+\) is running batch b1\./,
    );
    // e1 ran and landed; the others did not run.
    expect(ENVS.map((e) => s.runs(e, 'app'))).toEqual([2, 1, 1, 1]);
    // The refusal let go of e1's lease, so nothing has to wait for it.
    const e1Run = r.stdout.match(/^e1 +ran now +success +(\S+)/m)?.[1];
    expect(e1Run).toBeDefined();
    expect(JSON.parse(git(s.bare, 'show', 'refs/nyl/e1/lease:lease.json'))).toMatchObject({
      state: 'released',
      run: e1Run,
    });

    const again = await nylJson<BatchJson>(s.work, ['reconcile', '--group', 'fleet', '--failed', '--plan', token]);
    expect(again.code, again.stdout).toBe(0);
    expect(again.json.facts.environments[0]).toMatchObject({
      environment: 'e1',
      state: 'recorded',
      created: false,
      result: 'success',
    });
    expect(again.json.facts.environments.slice(1).map((e) => e.state)).toEqual(['ran', 'ran', 'ran']);
    expect(ENVS.map((e) => s.runs(e, 'app'))).toEqual([2, 2, 2, 2]);
  }, 180_000);

  it('a run landed meanwhile by a reconcile with -e is not taken as the batch having done that environment', async () => {
    const marks = tempDir('nyl-batch-marks-');
    const ctl = tempDir('nyl-batch-ctl-');
    const config = groupConfig(['a', 'b'], marks, ctl).replace('name: fleet\n', 'name: fleet\npromote: [a, b]\n');
    const dir = makeRepo({ 'nyl.yaml': config });
    // a fails, so b's promotion gate refuses it: the batch started b and has not done it.
    writeFileSync(join(ctl, 'fail-a'), '');
    const token = (await nylJson<BatchJson>(dir, ['plan', '--group', 'fleet', '--local'])).json.facts.token;
    const first = await nylJson<BatchJson>(dir, ['reconcile', '--group', 'fleet', '--local', '--plan', token]);
    expect(first.json.facts.environments.map((e) => [e.environment, e.state, e.result])).toEqual([
      ['a', 'ran', 'failed'],
      ['b', 'refused', 'refused'],
    ]);
    rmSync(join(ctl, 'fail-a'));
    for (const e of ['a', 'b']) expect((await nyl(dir, ['reconcile', '-e', e, '--local'])).code).toBe(0);
    const again = await nylJson<BatchJson>(dir, ['reconcile', '--group', 'fleet', '--local', '--plan', token]);
    expect(again.code, again.stdout).toBe(2);
    expect(again.json.problems[0]?.code).toBe('NYL-BATCH-STALE');
    expect(again.json.problems[0]?.message).toMatch(/the plans of b changed since the batch was recorded/);
  }, 60_000);

  it('with nothing to do anywhere: the token answers at once, records no batch, runs nothing', async () => {
    const marks = tempDir('nyl-batch-marks-');
    const ctl = tempDir('nyl-batch-ctl-');
    const dir = makeRepo({ 'nyl.yaml': groupConfig(['a', 'b'], marks, ctl) });
    for (const e of ['a', 'b']) expect((await nyl(dir, ['reconcile', '-e', e, '--local'])).code).toBe(0);
    const p = await nylJson<BatchJson>(dir, ['plan', '--group', 'fleet', '--local']);
    expect(p.code).toBe(0);
    expect(p.json.outcome).toBe('nothing to do');
    const r = await nylJson<BatchJson>(dir, ['reconcile', '--group', 'fleet', '--local', '--plan', p.json.facts.token]);
    expect(r.code, r.stdout).toBe(0);
    expect(r.json.outcome).toBe('nothing to do');
    expect(r.json.facts.environments.map((e) => e.state)).toEqual(['current', 'current']);
    expect(git(dir, 'for-each-ref', 'refs/nyl/_groups/')).toBe('');
    expect(readFileSync(join(marks, 'a'), 'utf8').split('\n').filter(Boolean)).toHaveLength(2);
  }, 60_000);

  it('refuses a group of more than 100 environments, an unknown group, and -e with --group', async () => {
    const marks = tempDir('nyl-batch-marks-');
    const envs = Array.from({ length: 101 }, (_, i) => `env${i}`);
    const dir = makeRepo({ 'nyl.yaml': groupConfig(envs, marks, marks, 'big') });
    for (const args of [
      ['plan', '--group', 'big'],
      ['reconcile', '--group', 'big', '--plan', 'b1.0123456789abcdef.AA'],
    ]) {
      const r = await nyl(dir, [...args, '--local']);
      expect(r.code, r.stderr).toBe(1);
      expect(r.stderr).toMatch(
        /^error NYL-BATCH-TOO-LARGE \(big\)\n {2}environment group big has 101 environments; a batch takes at most 100\n {2}fix: split big into EnvironmentGroups of at most 100 environments/,
      );
    }
    const unknown = await nyl(dir, ['plan', '--group', 'nope', '--local']);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toMatch(
      /NYL-GROUP-UNKNOWN \(nope\)\n {2}environment group nope is not defined in nyl\.yaml\n {2}fix: use one of: big/,
    );
    const both = await nyl(dir, ['plan', '--group', 'big', '-e', 'env1', '--local']);
    expect(both.code).toBe(1);
    expect(both.stderr).toContain('plan takes -e ENV or --group G, not both');
  }, 60_000);
});
