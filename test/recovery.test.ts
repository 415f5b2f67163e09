/**
 * Recovery runs (seed 004's ideas): `--failed` re-runs the failed units and what depends on them
 * and reuses the rest; `--from U` re-runs a subtree; a retried unit whose launch settings changed
 * needs `--allow-config-change` while a rotated secret value does not; an accepted plan token
 * whose run landed answers with that run. Real git, a file:// remote, real processes.
 */
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  command,
  commitFiles,
  ENV_DEV,
  git,
  makeRepo,
  nyl,
  nylJson,
  startNyl,
  tempDir,
  waitForFile,
} from './helpers/repo.js';

interface Row {
  unit: string;
  result: string;
  detail: string;
}
interface Report {
  exit: number;
  run?: string;
  rows: Row[];
  problems: { code: string; message: string }[];
  facts?: Record<string, unknown>;
}

/** a → b → c (three waves), and d next to b; b fails until `ok` exists in the control folder. */
function setup(opts: { bTimeout?: string } = {}) {
  const root = tempDir('nyl-recovery-');
  const ctl = tempDir('nyl-recovery-ctl-');
  git(root, 'init', '-q', '--bare', '-b', 'main', 'remote.git');
  const log = join(ctl, 'log');
  const say = (u: string) => `echo ${u} >> ${log}`;
  const config = (b: { timeout: string; d: string; bNote: string; dRetryable: boolean }) =>
    ENV_DEV +
    command('a', say('a')) +
    command(
      'b',
      `echo "b $API_TOKEN" >> ${log}; [ -f ${ctl}/hang ] && { touch ${ctl}/started; sleep 60; }; [ -f ${ctl}/ok ] || exit 3 # ${b.bNote}`,
      { needs: ['a'], timeout: b.timeout, spec: { idempotent: true } },
    ) +
    command('c', say('c'), { needs: ['b'], spec: { idempotent: true } }) +
    command('d', b.d, { needs: ['a'], ...(b.dRetryable ? {} : { spec: { retryable: false } }) });
  let current = { timeout: opts.bTimeout ?? '1m', d: say('d'), bNote: 'v1', dRetryable: true };
  const work = makeRepo({ 'nyl.yaml': config(current) });
  git(work, 'remote', 'add', 'origin', `file://${join(root, 'remote.git')}`);
  git(work, 'push', '-q', 'origin', 'main');
  const change = (c: Partial<typeof current>) => {
    current = { ...current, ...c };
    commitFiles(work, { 'nyl.yaml': config(current) });
    git(work, 'push', '-q', 'origin', 'main');
  };
  /** The units that ran since the last call, in order, and the values b saw. */
  const ran = () => {
    let text = '';
    try {
      text = readFileSync(log, 'utf8');
    } catch {}
    writeFileSync(log, '');
    return text.split('\n').filter(Boolean);
  };
  const fix = () => writeFileSync(join(ctl, 'ok'), '');
  const unfix = () => rmSync(join(ctl, 'ok'), { force: true });
  return { work, ctl, change, ran, fix, unfix, say };
}

const resultOf = (r: Report) => Object.fromEntries(r.rows.map((x) => [x.unit, x.result]));

async function failOnce(s: ReturnType<typeof setup>) {
  const r = await nylJson<Report>(s.work, ['reconcile', '-e', 'dev'], { API_TOKEN: 'first-secret-value' });
  expect(r.code, r.stderr).toBe(1);
  expect(resultOf(r.json)).toEqual({ a: 'executed', b: 'failed', c: 'blocked', d: 'executed' });
  expect(s.ran().sort()).toEqual(['a', 'b first-secret-value', 'd']);
}

describe('recovery runs', () => {
  it('--failed re-runs the failed unit and its dependants, reuses the rest, and leaves changed units outside alone', async () => {
    const s = setup();
    await failOnce(s);
    s.fix();
    // d changes meanwhile: a full reconcile would run it, a recovery run does not.
    s.change({ d: `${s.say('d')}; echo d-v2` });

    const secret = { API_TOKEN: 'first-secret-value' };
    const plan = await nylJson<Report>(s.work, ['plan', '-e', 'dev', '--failed'], secret);
    expect(plan.code, plan.stderr).toBe(0);
    expect(plan.json.problems).toEqual([]);
    expect(resultOf(plan.json)).toEqual({ a: 'current', b: 'execute', c: 'execute', d: 'skipped' });
    expect(plan.json.facts?.selection).toBe('--failed: b, then c (dependants)');
    expect(plan.json.facts?.reused).toBe('a');
    expect(plan.json.facts?.revision).toMatch(/^[0-9a-f]{12}$/);
    const token = plan.json.facts?.token as string;

    const r = await nylJson<Report>(s.work, ['reconcile', '-e', 'dev', '--failed', '--plan', token], secret);
    expect(r.code, JSON.stringify(r.json.problems)).toBe(0);
    expect(resultOf(r.json)).toMatchObject({ a: 'current', b: 'executed', c: 'executed' });
    expect(r.json.rows.find((x) => x.unit === 'd')?.result).not.toBe('executed');
    expect(s.ran()).toEqual(['b first-secret-value', 'c']);

    // The transition says which recovery it was.
    git(s.work, 'fetch', '-q', 'origin', '+refs/nyl/*:refs/nyl/*');
    expect(git(s.work, 'log', '-1', '--format=%B', 'refs/nyl/dev/observed')).toContain('"selection":"--failed"');

    // The same accepted token again: that run, not a new execution.
    const again = await nylJson<Report>(s.work, ['reconcile', '-e', 'dev', '--failed', '--plan', token], secret);
    expect(again.code, again.stderr).toBe(0);
    expect(again.json.run).toBe(r.json.run);
    expect(again.json.facts?.created).toBe(false);
    expect(s.ran()).toEqual([]);

    // Now a full reconcile picks up d's change.
    const full = await nylJson<Report>(s.work, ['reconcile', '-e', 'dev'], secret);
    expect(resultOf(full.json).d).toBe('executed');
  });

  it('--from U re-runs U and its subtree although current, with a reason, and reuses the rest', async () => {
    const s = setup();
    s.fix();
    expect((await nyl(s.work, ['reconcile', '-e', 'dev'])).code).toBe(0);
    s.ran();
    const noReason = await nyl(s.work, ['reconcile', '-e', 'dev', '--from', 'b']);
    expect(noReason.code).toBe(1);
    expect(noReason.stderr).toContain('reconcile --from needs a reason');
    const unknown = await nyl(s.work, ['reconcile', '-e', 'dev', '--from', 'zz', '--reason', 'x']);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toContain('NYL-UNIT-UNKNOWN');
    expect(s.ran()).toEqual([]);

    const r = await nylJson<Report>(s.work, ['reconcile', '-e', 'dev', '--from', 'b', '--reason', 're-run b']);
    expect(r.code, r.stderr).toBe(0);
    expect(resultOf(r.json)).toEqual({ a: 'current', b: 'executed', c: 'executed', d: 'current' });
    expect(s.ran()).toEqual(['b ', 'c']);
    git(s.work, 'fetch', '-q', 'origin', '+refs/nyl/*:refs/nyl/*');
    const message = git(s.work, 'log', '-1', '--format=%B', 'refs/nyl/dev/observed');
    expect(message).toContain('"reason":"re-run b","units":["b","c"]');
    expect(message).toContain('"roots":["b"]');

    // A unit that is not safe to re-run waits for approval; the plan's token approves exactly it.
    const fromA = await nylJson<Report>(s.work, ['plan', '-e', 'dev', '--from', 'a']);
    expect(resultOf(fromA.json)).toMatchObject({ a: 'awaiting-approval' });
  });

  it('a changed launch setting needs --allow-config-change; a rotated secret value does not', async () => {
    const s = setup();
    await failOnce(s);
    s.fix();
    // Rotated secret: same revision, runs.
    const rotated = await nylJson<Report>(s.work, ['plan', '-e', 'dev', '--failed'], { API_TOKEN: 'rotated-value' });
    expect(rotated.json.problems.map((p) => p.code)).not.toContain('NYL-CONFIG-CHANGED');

    // A changed timeout is another configuration: refused, nothing runs.
    s.change({ timeout: '2m' });
    const refused = await nylJson<Report>(s.work, ['reconcile', '-e', 'dev', '--failed'], { API_TOKEN: 'rotated' });
    expect(refused.code).toBe(2);
    const problem = refused.json.problems.find((p) => p.code === 'NYL-CONFIG-CHANGED');
    expect(problem?.message).toMatch(/^the configuration of b \([0-9a-f]{12} → [0-9a-f]{12}\) changed/);
    expect(s.ran()).toEqual([]);
    const warned = await nylJson<Report>(s.work, ['plan', '-e', 'dev', '--failed'], { API_TOKEN: 'rotated' });
    expect(warned.code).toBe(0);
    expect(warned.json.problems.map((p) => p.code)).toContain('NYL-CONFIG-CHANGED');

    const r = await nylJson<Report>(s.work, ['reconcile', '-e', 'dev', '--failed', '--allow-config-change'], {
      API_TOKEN: 'rotated-value',
    });
    expect(r.code, r.stderr).toBe(0);
    expect(s.ran()).toEqual(['b rotated-value', 'c']);
  });

  it('--failed leaves a current dependant alone when what it consumes did not change', async () => {
    const s = setup();
    s.fix();
    expect((await nyl(s.work, ['reconcile', '-e', 'dev'])).code).toBe(0);
    // b changes and fails; c keeps its receipt (blocked, not failed).
    s.unfix();
    s.change({ bNote: 'v2' });
    const failed = await nylJson<Report>(s.work, ['reconcile', '-e', 'dev']);
    expect(resultOf(failed.json)).toMatchObject({ b: 'failed', c: 'blocked' });
    s.fix();
    s.ran();
    const r = await nylJson<Report>(s.work, ['reconcile', '-e', 'dev', '--failed']);
    expect(r.code, JSON.stringify(r.json.problems)).toBe(0);
    expect(resultOf(r.json)).toMatchObject({ b: 'executed', c: 'current' });
    expect(s.ran()).toEqual(['b ']);
    // Nothing failed any more, d changed meanwhile: a recovery run has nothing to do, writes nothing.
    s.change({ d: `${s.say('d')} # v2` });
    const refs = () => git(s.work, 'ls-remote', 'origin', 'refs/nyl/*');
    const before = refs();
    const idle = await nylJson<Report>(s.work, ['reconcile', '-e', 'dev', '--failed']);
    expect(idle.code).toBe(0);
    expect(idle.json.run).toBeUndefined();
    expect(resultOf(idle.json).d).toBe('skipped');
    expect(refs()).toBe(before);
  });

  it('--failed after a SIGKILLed run: the uncertain unit runs again, no configuration change claimed', async () => {
    const s = setup();
    writeFileSync(join(s.ctl, 'hang'), '');
    const killed = startNyl(s.work, ['reconcile', '-e', 'dev']);
    await waitForFile(join(s.ctl, 'started'));
    killed.child.kill('SIGKILL');
    await killed.done;
    rmSync(join(s.ctl, 'hang'));
    s.fix();
    expect((await nyl(s.work, ['lease', 'break', '-e', 'dev', '--reason', 'runner died'])).code).toBe(0);
    s.ran();
    const r = await nylJson<Report>(s.work, ['reconcile', '-e', 'dev', '--failed']);
    expect(r.json.problems.map((p) => p.code)).not.toContain('NYL-CONFIG-CHANGED');
    // The dead run is imported first: a's checkpoint; b converges (idempotent), so it is recovered
    // by running again, then c. d (manual) was killed mid-run too: it stays uncertain for a person
    // (exit 4), as in any reconcile.
    expect(resultOf(r.json)).toEqual({ a: 'imported', b: 'recovered', c: 'executed', d: 'uncertain' });
    expect(r.code).toBe(4);
    expect(s.ran()).toEqual(['b ', 'c']);
  });

  it('--from a failed unit that is not retryable runs it; the order of --from does not change the token', async () => {
    const s = setup();
    s.fix();
    s.change({ d: `${s.say('d')}; [ -f ${s.ctl}/d-ok ] || exit 4`, dRetryable: false });
    const first = await nylJson<Report>(s.work, ['reconcile', '-e', 'dev']);
    expect(resultOf(first.json).d).toBe('failed');
    writeFileSync(join(s.ctl, 'd-ok'), '');
    s.ran();
    const plain = await nylJson<Report>(s.work, ['reconcile', '-e', 'dev']);
    expect(resultOf(plain.json).d).toBe('failed'); // waits for a person: not retryable
    expect(s.ran()).toEqual([]);
    const one = await nylJson<Report>(s.work, ['plan', '-e', 'dev', '--from', 'd', '--from', 'c']);
    const two = await nylJson<Report>(s.work, ['plan', '-e', 'dev', '--from', 'c', '--from', 'd']);
    expect(one.json.facts?.token).toBe(two.json.facts?.token);
    const r = await nylJson<Report>(s.work, ['reconcile', '-e', 'dev', '--from', 'd', '--reason', 'fixed the input']);
    expect(r.code, JSON.stringify(r.json.problems)).toBe(0);
    expect(resultOf(r.json).d).toBe('executed');
  });

  it('--allow-config-change alone is a usage error', async () => {
    const s = setup();
    const r = await nyl(s.work, ['reconcile', '-e', 'dev', '--allow-config-change']);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain('NYL-USAGE');
  });
});
