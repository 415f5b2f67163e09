/**
 * End-to-end tests of the built `nyl` against a bare remote over file:// (one case with --local):
 * `nyl verify` and drift observations, drift repair (driftRepair converge/manual, --approve,
 * --reapply), holds and `nyl exec` repairs with plan tokens, teardown, the state commands, and
 * NYL-LEASE-BROKEN for writes that do not import a broken run (seed 000: "Verifying receipts",
 * "Repairing drift", "Recovering a unit", "Breaking a lease").
 *
 * Check scripts are real: they read `<unit>.state` in the repository root, which the unit's run
 * writes `ok` to and the tests overwrite to make the unit drift.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  command,
  commitFiles,
  ENV_DEV,
  GIT_ENV,
  git,
  makeRepo,
  nyl,
  nylJson,
  parseTable,
  startNyl,
  tempDir,
  waitForFile,
} from './helpers/repo.js';

const ENV = ['-e', 'dev'];
/** Who the tests' git identity is (helpers/repo.ts GIT_ENV). */
const BY = `${GIT_ENV.GIT_AUTHOR_NAME} <${GIT_ENV.GIT_AUTHOR_EMAIL}>`;
const UUID = '[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}';
const TIME = '\\d{4}-\\d\\d-\\d\\dT\\d\\d:\\d\\d:\\d\\d(?:\\.\\d+)?(?:Z|[+-]\\d\\d:\\d\\d)';
/** Files the units and tests write in the repository root: untracked, never committed. */
const GITIGNORE = '*.state\n*.runs\n*.log\n*.seen\nctl/\n';

interface Setup {
  dir: string;
  /** The bare remote on disk (file://), read directly by assertions. */
  bare: string;
  ctl: string;
}

/** A work repository with `nyl.yaml` committed and `origin` a bare repository over file://. */
function setup(config: string): Setup {
  const bare = join(tempDir('nyl-drift-remote-'), 'r.git');
  execFileSync('git', ['init', '--bare', '-q', bare], { env: { ...process.env, GIT_CONFIG_NOSYSTEM: '1' } });
  const dir = makeRepo({ 'nyl.yaml': config, '.gitignore': GITIGNORE });
  git(dir, 'remote', 'add', 'origin', `file://${bare}`);
  const ctl = join(dir, 'ctl');
  mkdirSync(ctl);
  return { dir, bare, ctl };
}

function commitConfig(dir: string, config: string, message = 'change'): string {
  return commitFiles(dir, { 'nyl.yaml': config }, message);
}

function refs(bare: string): Map<string, string> {
  const out = git(bare, 'for-each-ref', '--format=%(objectname) %(refname)', 'refs/nyl/');
  return new Map(
    out
      .split('\n')
      .filter(Boolean)
      .map((l) => {
        const [oid, ref] = l.split(' ');
        return [ref as string, oid as string];
      }),
  );
}

function runRefs(bare: string): string[] {
  return [...refs(bare).keys()].filter((r) => r.startsWith('refs/nyl/dev/runs/'));
}

const OBSERVED = 'refs/nyl/dev/observed';
const DESIRED = 'refs/nyl/dev/desired';

function files(bare: string, ref: string): string[] {
  return git(bare, 'ls-tree', '-r', '--name-only', ref).split('\n').filter(Boolean);
}

function show(bare: string, ref: string, path: string): string {
  return git(bare, 'show', `${ref}:${path}`);
}

// biome-ignore lint/suspicious/noExplicitAny: JSON documents read back from the refs
type Json = any;

function observedUnit(bare: string, unit: string): Json {
  return JSON.parse(show(bare, OBSERVED, `units/${unit}.json`));
}

function desiredUnit(bare: string, unit: string): Json {
  return JSON.parse(show(bare, DESIRED, `units/${unit}.json`));
}

/** The last commit message on a state ref, ending in its newline (git() trims). */
function message(repo: string, ref = OBSERVED): string {
  return `${git(repo, 'log', '-1', '--format=%B', ref)}\n`;
}

function results(stdout: string): Record<string, string> {
  return Object.fromEntries(parseTable(stdout).map((r) => [r.UNIT, r.RESULT ?? r.STATE ?? r.DRIFT ?? '']));
}

function runs(dir: string, unit: string): number {
  const p = join(dir, `${unit}.runs`);
  return existsSync(p) ? readFileSync(p, 'utf8').split('\n').filter(Boolean).length : 0;
}

function setState(dir: string, unit: string, state: string): void {
  writeFileSync(join(dir, `${unit}.state`), `${state}\n`);
}

function re(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

/** A unit's run: counts executions and puts what it manages in sync. */
function runOf(unit: string, extra = ''): string {
  return `echo run >> ${unit}.runs; echo ok > ${unit}.state${extra ? `; ${extra}` : ''}`;
}

/** spec.check: exit 0 when `<unit>.state` says ok, else 2 with the drift on stdout; `attest` lines go to NYL_OUTPUT. */
function checkOf(unit: string, attest = ''): string {
  return (
    `${attest ? `echo "${attest}" >> "$NYL_OUTPUT"; ` : ''}s=$(cat ${unit}.state 2>/dev/null || echo missing); ` +
    `if [ "$s" = ok ]; then exit 0; fi; echo "${unit} is $s"; exit 2`
  );
}

/** A Command unit with a check; idempotent units converge. */
function unit(name: string, opts: { idempotent?: boolean; extra?: string; needs?: string[] } = {}): string {
  return command(name, runOf(name, opts.extra), {
    ...(opts.needs ? { needs: opts.needs } : {}),
    spec: { ...(opts.idempotent ? { idempotent: true } : {}), check: checkOf(name) },
  });
}

function receiptAndCondition(bare: string, name: string) {
  const o = observedUnit(bare, name);
  return { receipt: o.receipt, condition: o.condition };
}

/** The seed's NYL-LEASE-BROKEN, exactly. */
function leaseBrokenStderr(run: string): string {
  return [
    'error NYL-LEASE-BROKEN',
    `  the lease of dev was broken and its run ${run} has not been imported yet`,
    '  fix: run `nyl recover -e dev` to import it (a `nyl reconcile` or `nyl teardown` of dev imports it too), then run this command again',
    '',
  ].join('\n');
}

interface JsonRows {
  rows: { unit: string; result: string; detail: string }[];
}

function rowsOf(json: JsonRows): Record<string, string> {
  return Object.fromEntries(json.rows.map((r) => [r.unit, r.result]));
}

// ---------------------------------------------------------------------------------------------

describe('nyl verify', () => {
  it('records drift observations and attestations; writes nothing when nothing changed; never touches receipts or conditions', async () => {
    const failing = (v: string) =>
      command('d', `if [ -f ctl/d.fail ]; then echo boom; exit 1; fi; echo ok > d.state; echo ${v} > /dev/null`, {
        spec: { idempotent: true, check: checkOf('d') },
      });
    const config = (v: string) =>
      ENV_DEV +
      command('a', runOf('a'), { spec: { idempotent: true, check: checkOf('a', 'digest=sha256:aaa') } }) +
      unit('b') +
      command('c', runOf('c')) +
      failing(v);
    const { dir, bare, ctl } = setup(config('v1'));
    const first = await nyl(dir, ['reconcile', ...ENV]);
    expect(first.code, first.stderr).toBe(0);
    expect(results(first.stdout)).toEqual({ a: 'executed', b: 'executed', c: 'executed', d: 'executed' });

    // d fails its next execution: it keeps its receipt and gets a failed condition.
    // (reapplied, so its receipt stays the one of the current configuration, which verify checks)
    writeFileSync(join(ctl, 'd.fail'), '');
    const failed = await nyl(dir, ['reconcile', ...ENV, '--unit', 'd', '--reapply', '--reason', 'test a failure']);
    expect(failed.code).toBe(1);
    expect(results(failed.stdout)).toMatchObject({ d: 'failed' });
    expect(observedUnit(bare, 'd').condition).toMatchObject({ state: 'failed' });

    // In sync: exit 0, the first observation is recorded, a unit without spec.check is skipped.
    const before = refs(bare).get(OBSERVED);
    const sync = await nyl(dir, ['verify', ...ENV]);
    expect(sync.stderr).toBe('');
    expect(sync.code).toBe(0);
    expect(results(sync.stdout)).toEqual({ a: 'in-sync', b: 'in-sync', c: 'skipped', d: 'in-sync' });
    expect(parseTable(sync.stdout).find((r) => r.UNIT === 'c')?.DETAIL).toBe('its kind or spec has no check');
    expect(sync.stdout).toContain('  recorded: yes');
    const afterFirst = refs(bare).get(OBSERVED);
    expect(afterFirst).not.toBe(before);
    expect(message(bare)).toMatch(/^nyl: verify dev/);
    // Attestations from the check's NYL_OUTPUT are recorded.
    const a1 = observedUnit(bare, 'a');
    expect(a1.attestations).toEqual({ digest: 'sha256:aaa' });
    expect(a1.drift).toMatchObject({ state: 'in-sync', receiptKey: a1.receipt.executionKey });
    expect(observedUnit(bare, 'c').drift).toBeUndefined();

    // Nothing changed: no commit at all.
    const again = await nyl(dir, ['verify', ...ENV]);
    expect(again.code, again.stderr).toBe(0);
    expect(again.stdout).toContain('  recorded: no change');
    expect(refs(bare).get(OBSERVED)).toBe(afterFirst);

    // Drift: exit 3, one warning per drifted unit saying what the next reconcile does.
    const kept = Object.fromEntries(['a', 'b', 'c', 'd'].map((n) => [n, receiptAndCondition(bare, n)]));
    setState(dir, 'a', 'bad');
    setState(dir, 'b', 'gone');
    setState(dir, 'd', 'bad');
    const drift = await nyl(dir, ['verify', ...ENV]);
    expect(drift.stderr).toBe('');
    expect(drift.code).toBe(3);
    expect(results(drift.stdout)).toEqual({ a: 'drifted', b: 'drifted', c: 'skipped', d: 'drifted' });
    expect(drift.stdout).toContain(
      [
        'warning NYL-VERIFY-DRIFT (a)',
        '  unit a drifted: a is bad; the next reconcile re-executes it (driftRepair: converge)',
      ].join('\n'),
    );
    expect(drift.stdout).toContain(
      [
        'warning NYL-VERIFY-DRIFT (b)',
        '  unit b drifted: b is gone; the next reconcile waits for approval: it is not safe to re-run (recovery policy manual)',
        '  fix: run `nyl reconcile -e dev --approve b` once re-running it is safe',
      ].join('\n'),
    );
    expect(drift.stdout).toContain('warning NYL-VERIFY-DRIFT (d)');
    expect(drift.stdout).not.toContain('NYL-VERIFY-DRIFT (c)');
    expect(drift.stdout.match(/^warning NYL-VERIFY-DRIFT /gm)).toHaveLength(3);
    expect(refs(bare).get(OBSERVED)).not.toBe(afterFirst);
    expect(message(bare)).toContain('drifted: [a, b, d]');
    // Verify never changes a receipt or a condition (d keeps its failed condition).
    for (const n of ['a', 'b', 'c', 'd']) expect(receiptAndCondition(bare, n)).toEqual(kept[n]);
    expect(observedUnit(bare, 'd').condition).toMatchObject({ state: 'failed' });
    const b = observedUnit(bare, 'b');
    expect(b.drift).toMatchObject({ state: 'drifted', detail: 'b is gone', receiptKey: b.receipt.executionKey });
    expect(observedUnit(bare, 'a').attestations).toEqual({ digest: 'sha256:aaa' });

    // The same drift observed again: still exit 3, and no commit.
    const driftTip = refs(bare).get(OBSERVED);
    const same = await nyl(dir, ['verify', ...ENV]);
    expect(same.code).toBe(3);
    expect(same.stdout).toContain('  recorded: no change');
    expect(refs(bare).get(OBSERVED)).toBe(driftTip);
  });
});

// ---------------------------------------------------------------------------------------------

describe('drift in status and plan, and drift repair (driftRepair: converge)', () => {
  const config = (cVersion: string) =>
    ENV_DEV + unit('a', { idempotent: true }) + unit('b') + command('c', runOf('c', `echo ${cVersion} > /dev/null`));

  it('status shows drifted (exit 2); plan lists execute/approval; reconcile repairs the safe unit, waits for approval of the other, and runs on', async () => {
    const { dir, bare } = setup(config('c1'));
    expect((await nyl(dir, ['reconcile', ...ENV])).code).toBe(0);
    setState(dir, 'a', 'bad');
    setState(dir, 'b', 'bad');
    expect((await nyl(dir, ['verify', ...ENV])).code).toBe(3);

    const st = await nyl(dir, ['status', ...ENV]);
    expect(st.code).toBe(2);
    expect(results(st.stdout)).toEqual({ a: 'drifted', b: 'drifted', c: 'current' });
    expect(st.stdout).toContain('warning NYL-UNIT-DRIFTED (a)');
    expect(st.stdout).toContain('warning NYL-UNIT-DRIFTED (b)');

    const pl = await nyl(dir, ['plan', ...ENV]);
    expect(pl.code, pl.stderr).toBe(0);
    expect(results(pl.stdout)).toEqual({ a: 'execute', b: 'awaiting-approval', c: 'current' });
    expect(pl.stdout).toMatch(/\n {2}token: +v2\.\S+\n$/);

    // A changed unit in the same run: c executes while b waits for approval.
    commitConfig(dir, config('c2'));
    const rec = await nyl(dir, ['reconcile', ...ENV]);
    expect(rec.code).toBe(2);
    expect(results(rec.stdout)).toEqual({ a: 'executed', b: 'awaiting-approval', c: 'executed' });
    expect(runs(dir, 'a')).toBe(2);
    expect(runs(dir, 'b')).toBe(1);
    expect(runs(dir, 'c')).toBe(2);
    const msg = message(bare);
    expect(msg).toMatch(/\ndriftRepaired: \[a\]\n/);
    expect(msg).not.toMatch(/approved:/);
    // The new receipt clears the drift observation.
    const a = observedUnit(bare, 'a');
    expect(a.receipt.run).toBe(/\n {2}run: {6}(\S+)\n/.exec(rec.stdout)?.[1]);
    expect(a.drift).toBeUndefined();
    expect(observedUnit(bare, 'b').drift).toMatchObject({ state: 'drifted' });

    // Not repaired again until verify finds new drift.
    const quiet = await nyl(dir, ['reconcile', ...ENV]);
    expect(quiet.code).toBe(2);
    expect(results(quiet.stdout)).toEqual({ a: 'current', b: 'awaiting-approval', c: 'current' });
    expect(runs(dir, 'a')).toBe(2);
    setState(dir, 'a', 'bad again');
    expect((await nyl(dir, ['verify', ...ENV])).code).toBe(3);

    // --approve b: b is repaired too, and the approval's identity is recorded.
    const approved = await nyl(dir, ['reconcile', ...ENV, '--approve', 'b']);
    expect(approved.code, approved.stdout + approved.stderr).toBe(0);
    expect(results(approved.stdout)).toEqual({ a: 'executed', b: 'executed', c: 'current' });
    expect(runs(dir, 'a')).toBe(3);
    expect(runs(dir, 'b')).toBe(2);
    const msg2 = message(bare);
    expect(msg2).toMatch(/\ndriftRepaired: \[a, b\]\n/);
    expect(msg2).toMatch(new RegExp(`\\napproved: \\{"at":"${TIME}","by":"${re(BY)}","units":\\["b"\\]\\}\\n`));
    expect(observedUnit(bare, 'b').drift).toBeUndefined();

    const clean = await nyl(dir, ['status', ...ENV]);
    expect(clean.code).toBe(0);
    expect(results(clean.stdout)).toEqual({ a: 'current', b: 'current', c: 'current' });
  });

  it('--unit U --reapply --reason executes a current unit again and records who and why; an unsafe one needs --approve', async () => {
    const { dir, bare } = setup(config('c1'));
    expect((await nyl(dir, ['reconcile', ...ENV])).code).toBe(0);
    const tip = refs(bare).get(OBSERVED);

    const re1 = await nyl(dir, ['reconcile', ...ENV, '--unit', 'a', '--reapply', '--reason', 'why']);
    expect(re1.code, re1.stderr).toBe(0);
    expect(results(re1.stdout)).toEqual({ a: 'executed', b: 'current', c: 'current' });
    expect(runs(dir, 'a')).toBe(2);
    expect(refs(bare).get(OBSERVED)).not.toBe(tip);
    expect(message(bare)).toMatch(
      new RegExp(`\\nreapplied: \\{"by":"${re(BY)}","reason":"why","units":\\["a"\\]\\}\\n`),
    );
    expect(message(bare)).not.toMatch(/driftRepaired/);

    // b is not safe to re-run: awaiting approval, nothing executed.
    const re2 = await nyl(dir, ['reconcile', ...ENV, '--unit', 'b', '--reapply', '--reason', 'why']);
    expect(re2.code).toBe(2);
    expect(results(re2.stdout)).toEqual({ a: 'current', b: 'awaiting-approval', c: 'current' });
    expect(runs(dir, 'b')).toBe(1);

    const re3 = await nyl(dir, ['reconcile', ...ENV, '--unit', 'b', '--reapply', '--reason', 'why', '--approve', 'b']);
    expect(re3.code, re3.stderr).toBe(0);
    expect(results(re3.stdout)).toEqual({ a: 'current', b: 'executed', c: 'current' });
    expect(runs(dir, 'b')).toBe(2);
    const msg = message(bare);
    expect(msg).toMatch(new RegExp(`\\nreapplied: \\{"by":"${re(BY)}","reason":"why","units":\\["b"\\]\\}\\n`));
    expect(msg).toMatch(new RegExp(`\\napproved: \\{"at":"${TIME}","by":"${re(BY)}","units":\\["b"\\]\\}\\n`));
  });
});

describe.each([
  ['on the Environment', 'kind: Environment\nname: dev\ndriftRepair: manual\n'],
  [
    'on its EnvironmentGroup',
    'kind: EnvironmentGroup\nname: g\ndriftRepair: manual\n---\nkind: Environment\nname: dev\ngroup: g\n',
  ],
])('driftRepair: manual %s', (_where, env) => {
  it('leaves drifted units drifted: nothing executes until a forced run', async () => {
    const { dir, bare } = setup(`${env}${unit('a', { idempotent: true })}${unit('b')}`);
    expect((await nyl(dir, ['reconcile', ...ENV])).code).toBe(0);
    setState(dir, 'a', 'bad');
    setState(dir, 'b', 'bad');
    const v = await nyl(dir, ['verify', ...ENV]);
    expect(v.code).toBe(3);
    expect(v.stdout).toContain(
      'warning NYL-VERIFY-DRIFT (a)\n  unit a drifted: a is bad; the next reconcile leaves it drifted (driftRepair: manual)',
    );
    expect(v.stdout).toContain(
      'warning NYL-VERIFY-DRIFT (b)\n  unit b drifted: b is bad; the next reconcile leaves it drifted (driftRepair: manual)',
    );
    const tips = refs(bare);
    const rec = await nyl(dir, ['reconcile', ...ENV]);
    expect(results(rec.stdout)).toEqual({ a: 'drifted', b: 'drifted' });
    expect(runs(dir, 'a')).toBe(1);
    expect(runs(dir, 'b')).toBe(1);
    expect(refs(bare)).toEqual(tips);
    const st = await nyl(dir, ['status', ...ENV]);
    expect(st.code).toBe(2);
    expect(results(st.stdout)).toEqual({ a: 'drifted', b: 'drifted' });

    // A forced run repairs it.
    const forced = await nyl(dir, ['reconcile', ...ENV, '--unit', 'a', '--reapply', '--reason', 'repair by hand']);
    expect(forced.code, forced.stderr).toBe(0);
    expect(results(forced.stdout)).toEqual({ a: 'executed', b: 'drifted' });
    expect(runs(dir, 'a')).toBe(2);
  });
});

describe('drift with --local', () => {
  it('verify records drift on local refs and reconcile repairs it', async () => {
    const dir = makeRepo({ 'nyl.yaml': ENV_DEV + unit('a', { idempotent: true }), '.gitignore': GITIGNORE });
    const L = [...ENV, '--local'];
    expect((await nyl(dir, ['reconcile', ...L])).code).toBe(0);
    setState(dir, 'a', 'bad');
    const v = await nyl(dir, ['verify', ...L]);
    expect(v.code).toBe(3);
    expect(v.stdout).toContain('warning NYL-VERIFY-DRIFT (a)');
    expect(JSON.parse(git(dir, 'show', `${OBSERVED}:units/a.json`)).drift).toMatchObject({ state: 'drifted' });
    const rec = await nyl(dir, ['reconcile', ...L]);
    expect(rec.code, rec.stderr).toBe(0);
    expect(results(rec.stdout)).toEqual({ a: 'executed' });
    expect(message(dir)).toMatch(/\ndriftRepaired: \[a\]\n/);
    const v2 = await nyl(dir, ['verify', ...L]);
    expect(v2.code).toBe(0);
  });
});

// ---------------------------------------------------------------------------------------------

describe('holds', () => {
  it('a held unit neither executes nor re-resolves; its consumers resolve from its receipt', async () => {
    const config = (v: string, cVersion: string) =>
      ENV_DEV +
      command('u', `echo run >> u.runs; echo "v=${v}" >> "$NYL_OUTPUT"`) +
      command('c', `echo "\${{ units.u.outputs.v }}" >> c.seen; echo ${cVersion} > /dev/null`);
    const { dir, bare } = setup(config('one', 'c1'));
    expect((await nyl(dir, ['reconcile', ...ENV])).code).toBe(0);
    const desiredBefore = show(bare, DESIRED, 'units/u.json');

    const h = await nyl(dir, ['hold', ...ENV, '--unit', 'u', '--reason', 'r']);
    expect(h.stderr).toBe('');
    expect(h.code).toBe(0);
    expect(h.stdout).toMatch(/^hold dev: done\n/);
    expect(observedUnit(bare, 'u').hold).toMatchObject({ by: BY, reason: 'r' });

    commitConfig(dir, config('two', 'c2'));
    const rec = await nyl(dir, ['reconcile', ...ENV]);
    expect(rec.code, rec.stderr).toBe(0);
    expect(results(rec.stdout)).toEqual({ u: 'held', c: 'executed' });
    expect(runs(dir, 'u')).toBe(1);
    // The consumer resolved from u's receipt.
    expect(readFileSync(join(dir, 'c.seen'), 'utf8')).toBe('one\none\n');
    expect(desiredUnit(bare, 'c').inputs).toEqual({ 'units.u.outputs.v': 'one' });
    // u's desired document stays the one of its last receipt.
    expect(show(bare, DESIRED, 'units/u.json')).toBe(desiredBefore);
    expect(desiredUnit(bare, 'u').executionKey).toBe(observedUnit(bare, 'u').receipt.executionKey);

    const st = await nyl(dir, ['status', ...ENV]);
    expect(results(st.stdout)).toMatchObject({ u: 'held' });
  });

  it('an uncertain held unit keeps its condition across hold and resume; recover --retry clears only the condition; --accept refuses', async () => {
    const { dir, bare } = setup(ENV_DEV + command('t', 'echo run >> t.runs; sleep 5', { timeout: '1s' }));
    const first = await nyl(dir, ['reconcile', ...ENV]);
    expect(first.code).toBe(4);
    expect(results(first.stdout)).toEqual({ t: 'uncertain' });
    const condition = observedUnit(bare, 't').condition;
    expect(condition).toMatchObject({ state: 'uncertain' });

    expect((await nyl(dir, ['hold', ...ENV, '--unit', 't', '--reason', 'investigating'])).code).toBe(0);
    expect(observedUnit(bare, 't').condition).toEqual(condition);
    expect((await nyl(dir, ['resume', ...ENV, '--unit', 't', '--reason', 'done'])).code).toBe(0);
    const resumed = observedUnit(bare, 't');
    expect(resumed.hold).toBeUndefined();
    expect(resumed.condition).toEqual(condition);

    expect((await nyl(dir, ['hold', ...ENV, '--unit', 't', '--reason', 'again'])).code).toBe(0);
    const acc = await nyl(dir, ['recover', ...ENV, '--unit', 't', '--accept', condition.run, '--reason', 'r']);
    expect(acc.code).toBe(2);
    expect(acc.stdout).toBe('recover dev: refused\n\n');
    expect(acc.stderr).toMatch(/^error NYL-UNIT-HELD \(t\)\n/);

    const retry = await nyl(dir, ['recover', ...ENV, '--unit', 't', '--retry', '--reason', 'checked']);
    expect(retry.code, retry.stderr).toBe(0);
    const after = observedUnit(bare, 't');
    expect(after.condition).toBeUndefined();
    expect(after.hold).toMatchObject({ reason: 'again' });
    const rec = await nyl(dir, ['reconcile', ...ENV]);
    expect(results(rec.stdout)).toEqual({ t: 'held' });
    expect(runs(dir, 't')).toBe(1);
  });
});

// ---------------------------------------------------------------------------------------------

describe('nyl exec', () => {
  it('runs only on a held unit, is recorded before the tool starts, keeps its output, and the next execution needs an approved plan', async () => {
    const config = (v: string) => ENV_DEV + command('u', `echo run >> u.runs; echo ${v} > /dev/null`);
    const { dir, bare, ctl } = setup(config('v1'));
    expect((await nyl(dir, ['reconcile', ...ENV])).code).toBe(0);

    const notHeld = await nyl(dir, ['exec', ...ENV, '--unit', 'u', '--', 'bash', '-c', 'echo repaired; exit 0']);
    expect(notHeld.code).toBe(2);
    expect(notHeld.stdout).toBe('exec dev: refused\n\n');
    expect(notHeld.stderr).toMatch(/^error NYL-UNIT-NOT-HELD \(u\)\n/);

    expect((await nyl(dir, ['hold', ...ENV, '--unit', 'u', '--reason', 'state lock stuck'])).code).toBe(0);
    const script = `touch ${ctl}/started; while [ ! -f ${ctl}/release ]; do sleep 0.05; done; echo repaired; exit 0`;
    const running = startNyl(dir, ['exec', ...ENV, '--unit', 'u', '--reason', 'unlock', '--', 'bash', '-c', script]);
    await waitForFile(join(ctl, 'started'));
    const live = runRefs(bare);
    expect(live).toHaveLength(1);
    const record = JSON.parse(show(bare, live[0] as string, 'run.json'));
    expect(record).toMatchObject({
      operation: 'exec',
      executing: ['u'],
      exec: { unit: 'u', command: ['bash', '-c', script], by: BY, reason: 'unlock' },
    });
    expect(JSON.parse(show(bare, 'refs/nyl/dev/lease', 'lease.json'))).toMatchObject({
      state: 'held',
      run: record.run,
      operation: 'exec',
    });
    writeFileSync(join(ctl, 'release'), '');
    const ex = await running.done;
    expect(ex.code, ex.stderr).toBe(0);
    expect(ex.stdout).toContain('repaired\n');
    expect(ex.stdout).toContain('exec dev: done');
    expect(runRefs(bare)).toEqual([]);

    const shown = await nyl(dir, ['state', 'show', ...ENV, '--unit', 'u', '--json']);
    expect(shown.code).toBe(0);
    const repairs = JSON.parse(shown.stdout).facts.units.u.observed.repairs;
    expect(repairs).toHaveLength(1);
    expect(repairs[0]).toMatchObject({ run: record.run, command: ['bash', '-c', script], exitCode: 0, by: BY });
    expect(repairs[0].output).toContain('repaired');

    const resumed = await nyl(dir, ['resume', ...ENV, '--unit', 'u', '--reason', 'unlocked']);
    expect(resumed.code, resumed.stderr).toBe(0);
    commitConfig(dir, config('v2'));
    const waiting = await nyl(dir, ['reconcile', ...ENV]);
    expect(waiting.code).toBe(2);
    expect(results(waiting.stdout)).toEqual({ u: 'awaiting-approval' });
    expect(runs(dir, 'u')).toBe(1);

    const pl = await nyl(dir, ['plan', ...ENV]);
    expect(pl.code, pl.stderr).toBe(0);
    expect(results(pl.stdout)).toEqual({ u: 'awaiting-approval' });
    const token = /\n {2}token: +(v2\.\S+)\n/.exec(pl.stdout)?.[1] as string;
    expect(token).toMatch(/^v2\./);

    const go = await nyl(dir, ['reconcile', ...ENV, '--plan', token]);
    expect(go.code, go.stdout + go.stderr).toBe(0);
    expect(results(go.stdout)).toEqual({ u: 'executed' });
    expect(runs(dir, 'u')).toBe(2);
    expect(observedUnit(bare, 'u').approvalRequired).toBeUndefined();

    // The same accepted plan again: answered with the run that executed it, nothing runs twice.
    const reuse = await nyl(dir, ['reconcile', ...ENV, '--plan', token]);
    expect(reuse.code, reuse.stderr).toBe(0);
    expect(reuse.stdout).toMatch(/\n {2}created: +no\n/);
    expect(runs(dir, 'u')).toBe(2);

    // A token made before an unrelated commit (the same documents) still names the plan.
    const pl2 = await nyl(dir, ['plan', ...ENV]);
    const token2 = /\n {2}token: +(v2\.\S+)\n/.exec(pl2.stdout)?.[1] as string;
    commitConfig(dir, `# unrelated\n${config('v2')}`);
    const ok = await nyl(dir, ['reconcile', ...ENV, '--plan', token2]);
    expect(ok.code, ok.stderr).toBe(0);
    expect(results(ok.stdout)).toEqual({ u: 'current' });
    expect(runs(dir, 'u')).toBe(2);
  });
});

// ---------------------------------------------------------------------------------------------

describe('nyl teardown', () => {
  const destroyed = (n: string) => `echo ${n} >> destroy.log`;
  const tunit = (n: string, needs?: string[], destroy = destroyed(n)) =>
    command(n, runOf(n), { ...(needs ? { needs } : {}), spec: destroy ? { destroy } : {} });

  it('destroys in reverse dependency order, removed units included, and drops their state', async () => {
    const full = ENV_DEV + tunit('a') + tunit('b', ['a']) + tunit('c', ['b']) + tunit('n', undefined, '');
    const { dir, bare } = setup(full + tunit('gone', ['a']));
    expect((await nyl(dir, ['reconcile', ...ENV])).code).toBe(0);

    // gone leaves the configuration: reported as removed until torn down.
    commitConfig(dir, full);
    const rec = await nyl(dir, ['reconcile', ...ENV]);
    expect(rec.code, rec.stderr).toBe(0);
    expect(results(rec.stdout)).toEqual({ a: 'current', b: 'current', c: 'current', n: 'current', gone: 'removed' });
    const st = await nyl(dir, ['status', ...ENV]);
    expect(results(st.stdout)).toMatchObject({ gone: 'removed' });
    expect(files(bare, OBSERVED)).toContain('units/gone.json');

    const td = await nyl(dir, ['teardown', ...ENV]);
    expect(td.code, td.stdout + td.stderr).toBe(0);
    expect(results(td.stdout)).toEqual({
      a: 'destroyed',
      b: 'destroyed',
      c: 'destroyed',
      gone: 'destroyed',
      n: 'removed',
    });
    const log = readFileSync(join(dir, 'destroy.log'), 'utf8').trim().split('\n');
    expect([...log].sort()).toEqual(['a', 'b', 'c', 'gone']);
    expect(log.indexOf('c')).toBeLessThan(log.indexOf('b'));
    expect(log.indexOf('b')).toBeLessThan(log.indexOf('a'));
    expect(log.indexOf('gone')).toBeLessThan(log.indexOf('a'));
    expect(files(bare, OBSERVED).filter((f) => f.startsWith('units/') || f.startsWith('logs/'))).toEqual([]);
    expect(files(bare, DESIRED).filter((f) => f.startsWith('units/'))).toEqual([]);
    expect(message(bare)).toMatch(/^nyl: teardown dev/);
    expect(runRefs(bare)).toEqual([]);
    // Torn down: gone is no longer listed; the configured units are new again.
    const after = await nyl(dir, ['status', ...ENV]);
    expect(results(after.stdout)).toEqual({ a: 'pending', b: 'pending', c: 'pending', n: 'pending' });
  });

  it('a failing destroy keeps the unit with a failed condition and blocks the units it needs', async () => {
    const { dir, bare } = setup(
      ENV_DEV + tunit('a') + tunit('b', ['a'], 'echo b >> destroy.log; exit 1') + tunit('c', ['b']),
    );
    expect((await nyl(dir, ['reconcile', ...ENV])).code).toBe(0);
    const td = await nyl(dir, ['teardown', ...ENV]);
    expect(td.code).toBe(1);
    expect(results(td.stdout)).toEqual({ c: 'destroyed', b: 'failed', a: 'blocked' });
    expect(parseTable(td.stdout).find((r) => r.UNIT === 'a')?.DETAIL).toBe('still needed by b');
    expect(readFileSync(join(dir, 'destroy.log'), 'utf8')).toBe('c\nb\n');
    const unitsLeft = files(bare, OBSERVED).filter((f) => f.startsWith('units/'));
    expect(unitsLeft.sort()).toEqual(['units/a.json', 'units/b.json']);
    expect(observedUnit(bare, 'b').condition).toMatchObject({ state: 'failed' });
    expect(observedUnit(bare, 'b').receipt).toBeDefined();
    expect(observedUnit(bare, 'a').condition).toBeUndefined();
    expect(files(bare, DESIRED)).not.toContain('units/c.json');
  });
});

// ---------------------------------------------------------------------------------------------

describe('state commands', () => {
  it('state forget drops a removed unit from observed and desired; until then reconcile and status list it as removed', async () => {
    const base = (v: string) => ENV_DEV + command('keep', runOf('keep', `echo ${v} > /dev/null`));
    const { dir, bare } = setup(base('k1') + command('u', runOf('u')));
    expect((await nyl(dir, ['reconcile', ...ENV])).code).toBe(0);
    // u leaves the configuration in a run that executes keep: listed as removed.
    commitConfig(dir, base('k2'));
    const run = await nyl(dir, ['reconcile', ...ENV]);
    expect(run.code, run.stderr).toBe(0);
    expect(results(run.stdout)).toEqual({ keep: 'executed', u: 'removed' });
    expect(parseTable(run.stdout).find((r) => r.UNIT === 'u')?.DETAIL).toBe(
      'no longer in the configuration; its state is kept until `nyl teardown -e dev` or `nyl state forget -e dev --unit u`',
    );
    // …and in a reconcile with nothing to do.
    const rec = await nylJson<JsonRows>(dir, ['reconcile', ...ENV]);
    expect(rec.code).toBe(0);
    expect(rowsOf(rec.json)).toEqual({ keep: 'current', u: 'removed' });
    const st = await nyl(dir, ['status', ...ENV]);
    expect(results(st.stdout)).toEqual({ keep: 'current', u: 'removed' });
    expect(files(bare, DESIRED)).toContain('units/u.json');

    const f = await nyl(dir, ['state', 'forget', ...ENV, '--unit', 'u', '--reason', 'gone for good']);
    expect(f.stderr).toBe('');
    expect(f.code).toBe(0);
    expect(f.stdout).toMatch(/^state-forget dev: done\n/);
    expect(files(bare, OBSERVED)).not.toContain('units/u.json');
    expect(files(bare, DESIRED)).not.toContain('units/u.json');
    expect(files(bare, OBSERVED)).toContain('units/keep.json');
    const st2 = await nyl(dir, ['status', ...ENV]);
    expect(results(st2.stdout)).toEqual({ keep: 'current' });
    const rec2 = await nyl(dir, ['reconcile', ...ENV]);
    expect(results(rec2.stdout)).toEqual({ keep: 'current' });
  });

  it('after `nyl lease break`, state forget, verify and hold refuse with NYL-LEASE-BROKEN (also under --wait-lease); teardown imports the run first', async () => {
    const base = ENV_DEV + unit('u', { idempotent: true });
    const { dir, bare, ctl } = setup(base);
    expect((await nyl(dir, ['reconcile', ...ENV])).code).toBe(0);
    commitConfig(
      dir,
      base +
        command(
          's',
          `echo $$ > ${ctl}/s.pgid; touch ${ctl}/s.started; while [ ! -f ${ctl}/never ]; do sleep 0.05; done`,
        ),
    );
    const running = startNyl(dir, ['reconcile', ...ENV]);
    await waitForFile(join(ctl, 's.started'));
    running.child.kill('SIGKILL');
    try {
      process.kill(-Number(readFileSync(join(ctl, 's.pgid'), 'utf8').trim()), 'SIGKILL');
    } catch {
      /* already gone */
    }
    expect((await running.done).code).toBe(-1);
    const dead = (runRefs(bare)[0] as string).slice('refs/nyl/dev/runs/'.length);
    expect(dead).toMatch(new RegExp(`^${UUID}$`));

    const brk = await nyl(dir, ['lease', 'break', ...ENV, '--reason', 'runner was killed']);
    expect(brk.code, brk.stderr).toBe(0);
    expect(brk.stdout).toMatch(new RegExp(`^lease-break dev: done\\n {2}broken: run ${dead}\\n`));
    const tips = refs(bare);

    const forget = await nyl(dir, ['state', 'forget', ...ENV, '--unit', 'u']);
    expect(forget.code).toBe(2);
    expect(forget.stdout).toBe('state-forget dev: refused\n\n');
    expect(forget.stderr).toBe(leaseBrokenStderr(dead));

    const verify = await nyl(dir, ['verify', ...ENV]);
    expect(verify.code).toBe(2);
    expect(verify.stderr).toBe(leaseBrokenStderr(dead));
    expect(verify.stdout).not.toContain('UNIT');

    const hold = await nyl(dir, ['hold', ...ENV, '--unit', 'u', '--reason', 'r']);
    expect(hold.code).toBe(2);
    expect(hold.stdout).toBe('hold dev: refused\n\n');
    expect(hold.stderr).toBe(leaseBrokenStderr(dead));

    // --wait-lease 1s: they wait, then refuse the same way.
    const waited = await Promise.all(
      [
        ['state', 'forget', ...ENV, '--unit', 'u'],
        ['verify', ...ENV],
        ['hold', ...ENV, '--unit', 'u', '--reason', 'r'],
      ].map(async (args) => {
        const t0 = Date.now();
        const r = await nyl(dir, [...args, '--wait-lease', '1s']);
        return { ...r, ms: Date.now() - t0 };
      }),
    );
    for (const r of waited) {
      expect(r.code).toBe(2);
      expect(r.stderr).toBe(leaseBrokenStderr(dead));
      expect(r.ms).toBeGreaterThanOrEqual(1000);
    }
    expect(waited[0]?.stdout).toBe('state-forget dev: refused\n\n');
    expect(refs(bare)).toEqual(tips);

    // teardown takes the broken lease over and imports the run first.
    const td = await nyl(dir, ['teardown', ...ENV]);
    expect(td.code, td.stdout + td.stderr).toBe(0);
    const msg = message(bare);
    expect(msg).toMatch(/^nyl: teardown dev/);
    expect(msg).toMatch(/\nrecovered: \[s\]\n/);
    expect(msg).toMatch(
      new RegExp(`\\nleaseBroken: \\{"at":"${TIME}","by":"${re(BY)}","reason":"runner was killed"\\}\\n`),
    );
    expect(runRefs(bare)).toEqual([]);
    expect(JSON.parse(show(bare, 'refs/nyl/dev/lease', 'lease.json')).state).toBe('released');
    expect(files(bare, OBSERVED).filter((f) => f.startsWith('units/'))).toEqual([]);

    // The lease is free again: the refused commands work.
    const v2 = await nyl(dir, ['verify', ...ENV]);
    expect(v2.code, v2.stderr).toBe(0);
  });
});
