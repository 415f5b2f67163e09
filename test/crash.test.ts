import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { CLI, command, ENV_DEV, GIT_ENV, git, makeRepo, parseTable } from './helpers/repo.js';

/**
 * Crash safety through a real remote (a bare repository over file://, every command online, the
 * remote the authority): for every fault-injection point (NYL_TEST_CRASH_AT, see
 * src/core/util/crash.ts) the nyl process SIGKILLs itself, and the test checks exactly what the
 * protocol promises at that point (seed 000: "Leases, run refs, and checkpoints", "Taking over",
 * "Uncertain units and recovery policies", "Breaking a lease"): what the dead run recorded is
 * imported and never executed again, what it did not record is never guessed, counted per unit
 * across the crash and every run after it.
 */

const POINTS = [
  'before-lease',
  'after-lease',
  'mid-wave',
  'before-checkpoint',
  'after-checkpoint',
  'before-transition',
  'after-transition',
] as const;
type Point = (typeof POINTS)[number];

const UNITS = ['a', 'b', 'p', 'c'] as const;
type Unit = (typeof UNITS)[number];
type Counts = Record<Unit, number>;

const MIN = 60_000;
const GRACE_MS = 10 * MIN;
/** Unit timeouts: each wave's deadline is its longest unit timeout plus the 10-minute grace. */
const TIMEOUT_MS: Record<Unit, number> = { a: 2 * MIN, b: 3 * MIN, p: 1 * MIN, c: 4 * MIN };

/**
 * Three waves:  1: a   2: b (consumes a's output), p (needs a)   3: c (consumes b's output).
 * a and b are idempotent (recovery policy converge), p and c are not (manual). Every unit appends
 * a line to exec-<unit>.log in the repository, so executions can be counted.
 */
const CONFIG =
  ENV_DEV +
  command('a', 'echo a >> exec-a.log; echo "x=from-a" >> "$NYL_OUTPUT"', {
    timeout: '2m',
    spec: { idempotent: true },
  }) +
  command('b', 'echo "b ${{ units.a.outputs.x }}" >> exec-b.log; echo "y=from-b" >> "$NYL_OUTPUT"', {
    timeout: '3m',
    spec: { idempotent: true },
  }) +
  command('p', 'echo p >> exec-p.log', { timeout: '1m', needs: ['a'] }) +
  command('c', 'echo "c ${{ units.b.outputs.y }}" >> exec-c.log', { timeout: '4m' });

const BROKEN_BY = 'Test Operator <operator@example.com>';
const REASON = 'runner was killed';
const RUN_ID = /[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}/;

const dirs: string[] = [];
afterAll(() => {
  if (process.env.NYL_KEEP_TEST_REPOS) return;
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

interface Env {
  bare: string;
  work: string;
}

/** An empty bare remote over file:// and a work repository with the configuration, pushed. */
function withRemote(): Env {
  const root = mkdtempSync(join(tmpdir(), 'nyl-crash-'));
  dirs.push(root);
  git(root, 'init', '-q', '--bare', '-b', 'main', 'remote.git');
  const bare = join(root, 'remote.git');
  const work = makeRepo({ 'nyl.yaml': CONFIG, '.gitignore': 'exec-*.log\n' });
  git(work, 'remote', 'add', 'origin', `file://${bare}`);
  git(work, 'push', '-q', 'origin', 'main');
  return { bare, work };
}

interface Result {
  /** Exit code; null when the process died by a signal. */
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

/**
 * Runs the built nyl as the helper does, but keeps the signal: the helper's `nyl` reports a
 * signal death as code -1 and drops which signal it was.
 */
function run(cwd: string, args: string[], env: Record<string, string> = {}): Promise<Result> {
  return new Promise((res, rej) => {
    const child = spawn('node', [CLI, ...args], {
      cwd,
      env: { ...process.env, ...GIT_ENV, NYL_PROGRESS: '0', ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => {
      stdout += d;
    });
    child.stderr.on('data', (d) => {
      stderr += d;
    });
    child.on('error', rej);
    child.on('close', (code, signal) => res({ code, signal, stdout, stderr }));
  });
}

const reconcile = (e: Env, crashAt?: string) =>
  run(e.work, ['reconcile', '-e', 'dev'], crashAt ? { NYL_TEST_CRASH_AT: crashAt } : {});
const leaseBreak = (e: Env, reason = REASON) => run(e.work, ['lease', 'break', '-e', 'dev', '--reason', reason]);

/** The remote's refs under refs/nyl/, as the authority sees them. */
function remoteRefs(e: Env): Map<string, string> {
  const out = git(e.work, 'ls-remote', 'origin', 'refs/nyl/*');
  const m = new Map<string, string>();
  for (const line of out ? out.split('\n') : []) {
    const [oid, ref] = line.split('\t');
    m.set(ref as string, oid as string);
  }
  return m;
}

const refNames = (e: Env) => [...remoteRefs(e).keys()].sort();
const runRefs = (e: Env) => refNames(e).filter((r) => r.startsWith('refs/nyl/dev/runs/'));
const evidenceRefs = (e: Env) => refNames(e).filter((r) => r.startsWith('refs/nyl/dev/evidence/'));

/** A JSON document read from the bare remote. */
function remoteJson<T = Record<string, unknown>>(e: Env, spec: string): T {
  return JSON.parse(git(e.bare, 'show', spec)) as T;
}

function remoteFiles(e: Env, ref: string): string[] {
  return git(e.bare, 'ls-tree', '-r', '--name-only', ref).split('\n').filter(Boolean).sort();
}

function counts(e: Env): Counts {
  const n = (u: Unit) => {
    const f = join(e.work, `exec-${u}.log`);
    return existsSync(f) ? readFileSync(f, 'utf8').split('\n').filter(Boolean).length : 0;
  };
  return { a: n('a'), b: n('b'), p: n('p'), c: n('c') };
}

function execLog(e: Env, u: Unit): string[] {
  return readFileSync(join(e.work, `exec-${u}.log`), 'utf8')
    .split('\n')
    .filter(Boolean);
}

function rows(stdout: string): Record<string, { result: string; detail: string }> {
  return Object.fromEntries(
    parseTable(stdout).map((r) => [r.UNIT, { result: r.RESULT ?? r.STATE ?? '', detail: r.DETAIL ?? '' }]),
  );
}

const results = (stdout: string) => Object.fromEntries(Object.entries(rows(stdout)).map(([u, r]) => [u, r.result]));

function runOf(stdout: string): string | undefined {
  return /^ {2}run: +(\S+)$/m.exec(stdout)?.[1];
}

interface Transition {
  subject: string;
  units: Record<string, Record<string, unknown>>;
  lists: Record<string, string[]>;
  leaseBroken?: Record<string, unknown> | Record<string, unknown>[];
}

/** The machine-readable transition commit message on refs/nyl/dev/observed. */
function transition(e: Env): Transition {
  const msg = git(e.bare, 'log', '-1', '--format=%B', 'refs/nyl/dev/observed');
  const lines = msg.split('\n');
  const t: Transition = { subject: lines[0] as string, units: {}, lists: {} };
  for (const line of lines) {
    const unit = /^ {2}([\w-]+): (\{.*\})$/.exec(line);
    if (unit) t.units[unit[1] as string] = JSON.parse(unit[2] as string);
    const list = /^(recovered|imported): \[(.*)\]$/.exec(line);
    if (list) t.lists[list[1] as string] = (list[2] as string).split(',').map((s) => s.trim());
    const broken = /^leaseBroken: (\{.*\}|\[.*\])$/.exec(line);
    if (broken) t.leaseBroken = JSON.parse(broken[1] as string);
  }
  return t;
}

interface RunRecordDoc {
  run: string;
  operation: string;
  state: string;
  phase: string;
  wave?: number;
  executing: string[];
  updatedAt: string;
  deadline: string;
}

interface LeaseDocJson {
  state: string;
  run: string;
  operation: string;
  renewedAt: string;
  deadline: string;
  broken?: { at: string; by: string; reason: string };
}

interface ObservedDoc {
  uid: string;
  lastRun: string;
  receipt?: { executionKey: string; uid: string; run: string; outputs: Record<string, string> };
  condition?: { state: string; reason: string; run: string };
}

const lease = (e: Env) => remoteJson<LeaseDocJson>(e, 'refs/nyl/dev/lease:lease.json');
const observed = (e: Env, u: string) => remoteJson<ObservedDoc>(e, `refs/nyl/dev/observed:units/${u}.json`);

/** What the remote must hold right after the crash, and what the runs after it must do. */
interface Case {
  point: Point;
  /** Units whose tool ran before the process died. */
  ranBeforeCrash: Counts;
  /** The dead run's ref: units it started and had not checkpointed, wave (0-based), files. */
  runRef?: { executing: Unit[]; wave: number; desired: Unit[]; checkpoints: Unit[]; deadlineMs: number };
  /** The taking-over reconcile after `nyl lease break`. */
  takeover?: {
    exit: number;
    results: Record<Unit, string>;
    imported: Unit[];
    /** Uncertain after the import (manual policy): they wait for `nyl recover`. */
    uncertain: Unit[];
    /** `recovered:` in the transition commit: every unit the import marked uncertain. */
    recovered: Unit[];
    counts: Counts;
  };
  /** Executions per unit once every uncertain unit was retried by an operator and reconciled. */
  final: Counts;
}

const c = (a: number, b: number, p: number, cc: number): Counts => ({ a, b, p, c: cc });

const CASES: Case[] = [
  // Nothing was written: the next reconcile simply runs.
  { point: 'before-lease', ranBeforeCrash: c(0, 0, 0, 0), final: c(1, 1, 1, 1) },
  // Lease and run ref written, nothing executed: a was "executing" without checkpoint, so it is
  // uncertain (nothing unrecorded is guessed), and converges (idempotent) in the taking-over run.
  {
    point: 'after-lease',
    ranBeforeCrash: c(0, 0, 0, 0),
    runRef: { executing: ['a'], wave: 0, desired: ['a'], checkpoints: [], deadlineMs: TIMEOUT_MS.a + GRACE_MS },
    takeover: {
      exit: 0,
      results: { a: 'recovered', b: 'executed', p: 'executed', c: 'executed' },
      imported: [],
      uncertain: [],
      recovered: ['a'],
      counts: c(1, 1, 1, 1),
    },
    final: c(1, 1, 1, 1),
  },
  // Crash points fire the first time they are reached: mid-wave in wave 1, whose only unit is a, and
  // before-checkpoint at the write that opens wave 2. Either way a ran but its checkpoint was never
  // written: it is not imported (nothing unrecorded is guessed) and runs again (converge).
  {
    point: 'mid-wave',
    ranBeforeCrash: c(1, 0, 0, 0),
    runRef: { executing: ['a'], wave: 0, desired: ['a'], checkpoints: [], deadlineMs: TIMEOUT_MS.a + GRACE_MS },
    takeover: {
      exit: 0,
      results: { a: 'recovered', b: 'executed', p: 'executed', c: 'executed' },
      imported: [],
      uncertain: [],
      recovered: ['a'],
      counts: c(2, 1, 1, 1),
    },
    final: c(2, 1, 1, 1),
  },
  {
    point: 'before-checkpoint',
    ranBeforeCrash: c(1, 0, 0, 0),
    runRef: { executing: ['a'], wave: 0, desired: ['a'], checkpoints: [], deadlineMs: TIMEOUT_MS.a + GRACE_MS },
    takeover: {
      exit: 0,
      results: { a: 'recovered', b: 'executed', p: 'executed', c: 'executed' },
      imported: [],
      uncertain: [],
      recovered: ['a'],
      counts: c(2, 1, 1, 1),
    },
    final: c(2, 1, 1, 1),
  },
  // a checkpointed with wave 2 recorded as started: a imported (not run again); b (converge)
  // recovered by running it; p (manual) uncertain until an operator retries it.
  {
    point: 'after-checkpoint',
    ranBeforeCrash: c(1, 0, 0, 0),
    runRef: {
      executing: ['b', 'p'],
      wave: 1,
      desired: ['a', 'b', 'p'],
      checkpoints: ['a'],
      deadlineMs: Math.max(TIMEOUT_MS.b, TIMEOUT_MS.p) + GRACE_MS,
    },
    takeover: {
      exit: 4,
      results: { a: 'imported', b: 'recovered', p: 'uncertain', c: 'executed' },
      imported: ['a'],
      uncertain: ['p'],
      recovered: ['b', 'p'],
      counts: c(1, 1, 0, 1),
    },
    final: c(1, 1, 1, 1),
  },
  // Every unit ran; a, b, p checkpointed; c's checkpoint was to ride in the transition that never
  // landed: a, b, p imported, c (manual) uncertain, nothing run again.
  {
    point: 'before-transition',
    ranBeforeCrash: c(1, 1, 1, 1),
    runRef: {
      executing: ['c'],
      wave: 2,
      desired: ['a', 'b', 'c', 'p'],
      checkpoints: ['a', 'b', 'p'],
      deadlineMs: TIMEOUT_MS.c + GRACE_MS,
    },
    takeover: {
      exit: 4,
      results: { a: 'imported', b: 'imported', p: 'imported', c: 'uncertain' },
      imported: ['a', 'b', 'p'],
      uncertain: ['c'],
      recovered: ['c'],
      counts: c(1, 1, 1, 1),
    },
    final: c(1, 1, 1, 2),
  },
  // Landed: nothing left to take over.
  { point: 'after-transition', ranBeforeCrash: c(1, 1, 1, 1), final: c(1, 1, 1, 1) },
];

async function crash(e: Env, point: string): Promise<void> {
  const r = await reconcile(e, point);
  expect(r.signal, `nyl reconcile with NYL_TEST_CRASH_AT=${point}: ${r.stderr}`).toBe('SIGKILL');
  expect(r.code).toBeNull();
}

/** A reconcile that must find nothing to do: every unit current, no run, nothing written or executed. */
async function expectAllCurrent(e: Env): Promise<void> {
  const refs = remoteRefs(e);
  const before = counts(e);
  const r = await reconcile(e);
  expect(r.stderr).toBe('');
  expect(r.code, r.stderr).toBe(0);
  expect(results(r.stdout)).toEqual({ a: 'current', b: 'current', p: 'current', c: 'current' });
  expect(r.stdout).not.toMatch(/^ {2}run:/m);
  expect(remoteRefs(e)).toEqual(refs);
  expect(counts(e)).toEqual(before);
}

function expectBrokenLeaseRecorded(t: Transition): void {
  expect(t.leaseBroken).toEqual({ at: expect.stringMatching(/^\d{4}-\d\d-\d\dT/), by: BROKEN_BY, reason: REASON });
}

describe('crash at every fault-injection point, taken over through a bare remote over file://', () => {
  it.each(CASES)('$point', { timeout: 120_000 }, async (k) => {
    const e = withRemote();
    await crash(e, k.point);
    expect(counts(e)).toEqual(k.ranBeforeCrash);

    if (k.point === 'before-lease') {
      // Nothing was written: no lease, no run ref, no state.
      expect(refNames(e)).toEqual([]);
      const lb = await leaseBreak(e);
      expect(lb.code, lb.stderr).toBe(0);
      expect(lb.stdout).toMatch(/^lease-break dev: nothing to break\n/);
      const r = await reconcile(e);
      expect(r.code, r.stderr).toBe(0);
      expect(results(r.stdout)).toEqual({ a: 'executed', b: 'executed', p: 'executed', c: 'executed' });
      expect(counts(e)).toEqual(k.final);
      expect(refNames(e)).toEqual([
        'refs/nyl/dev/desired',
        'refs/nyl/dev/history',
        'refs/nyl/dev/lease',
        'refs/nyl/dev/observed',
      ]);
      await expectAllCurrent(e);
      return;
    }

    if (k.point === 'after-transition') {
      // Landed in the transition's one atomic push: state refs, run ref deleted, lease released.
      expect(refNames(e)).toEqual([
        'refs/nyl/dev/desired',
        'refs/nyl/dev/history',
        'refs/nyl/dev/lease',
        'refs/nyl/dev/observed',
      ]);
      const l = lease(e);
      expect(l.state).toBe('released');
      const t = transition(e);
      expect(t.subject).toBe('nyl: reconcile dev (4 executed)');
      for (const u of UNITS) {
        expect(t.units[u]).toMatchObject({ result: 'executed' });
        expect(observed(e, u).receipt?.run).toBe(l.run);
      }
      const s = await run(e.work, ['status', '-e', 'dev']);
      expect(s.code, s.stderr).toBe(0);
      expect(results(s.stdout)).toEqual({ a: 'current', b: 'current', p: 'current', c: 'current' });
      const lb = await leaseBreak(e);
      expect(lb.code, lb.stderr).toBe(0);
      expect(lb.stdout).toMatch(/^lease-break dev: nothing to break\n/);
      await expectAllCurrent(e);
      expect(counts(e)).toEqual(k.final);
      return;
    }

    const ref = k.runRef as NonNullable<Case['runRef']>;
    const take = k.takeover as NonNullable<Case['takeover']>;

    // The dead run holds the environment: its lease and its run ref, nothing on the state refs.
    const runs = runRefs(e);
    expect(runs).toHaveLength(1);
    const runRef = runs[0] as string;
    const dead = runRef.slice('refs/nyl/dev/runs/'.length);
    expect(dead).toMatch(RUN_ID);
    expect(refNames(e)).toEqual(['refs/nyl/dev/lease', runRef]);
    const held = lease(e);
    expect(held).toMatchObject({ state: 'held', run: dead, operation: 'reconcile' });
    const record = remoteJson<RunRecordDoc>(e, `${runRef}:run.json`);
    expect(record).toMatchObject({ run: dead, operation: 'reconcile', state: 'executing', phase: 'wave' });
    expect(record.wave).toBe(ref.wave);
    expect([...record.executing].sort()).toEqual([...ref.executing].sort());
    // Each phase moves the deadline: the wave's longest unit timeout plus the 10-minute grace.
    expect(Date.parse(record.deadline) - Date.parse(record.updatedAt)).toBe(ref.deadlineMs);
    expect(Date.parse(held.deadline) - Date.parse(held.renewedAt)).toBe(ref.deadlineMs);
    expect(held.deadline).toBe(record.deadline);
    // Before a unit starts its desired document (and uid) is on the run ref; a checkpoint per finished unit.
    const files = remoteFiles(e, runRef);
    expect(files).toEqual(
      [
        'run.json',
        ...ref.desired.map((u) => `units/${u}/desired.json`),
        ...ref.checkpoints.flatMap((u) => [`units/${u}/checkpoint.json`, `units/${u}/log.txt`]),
      ].sort(),
    );
    const deadUids = new Map(
      ref.desired.map((u) => [u, remoteJson<{ uid: string }>(e, `${runRef}:units/${u}/desired.json`).uid]),
    );
    const checkpoints = new Map(
      ref.checkpoints.map((u) => [
        u,
        remoteJson<{ result: string; executionKey: string; uid: string }>(e, `${runRef}:units/${u}/checkpoint.json`),
      ]),
    );
    for (const cp of checkpoints.values()) expect(cp.result).toBe('succeeded');

    // While its lease holds, nobody else gets in: NYL-LEASE-HELD, exit 2, nothing written or run.
    const tips = remoteRefs(e);
    const refused = await reconcile(e);
    expect(refused.code, refused.stderr).toBe(2);
    expect(refused.stderr).toMatch(
      new RegExp(
        `^error NYL-LEASE-HELD\\n {2}dev is held by run ${dead} \\(reconcile\\) by \\S+@\\S+, until ${held.deadline.replace(/[.]/g, '\\.').replace(/Z$/, '\\+00:00')}\\n {2}fix: wait for that run to finish, pass --wait-lease <duration>, or run \`nyl lease break\` if its runner is gone\\n$`,
      ),
    );
    expect(remoteRefs(e)).toEqual(tips);
    expect(counts(e)).toEqual(k.ranBeforeCrash);

    // Breaking the lease declares the runner gone.
    const lb = await leaseBreak(e);
    expect(lb.code, lb.stderr).toBe(0);
    expect(lb.stdout).toMatch(new RegExp(`^lease-break dev: done\\n {2}broken: run ${dead}\\n`));
    expect(`${lb.stdout}${lb.stderr}`).toMatch(
      new RegExp(
        `warning NYL-LEASE-HELD\\n {2}the lease of run ${dead} by \\S+ was broken; if that run is still alive it may still cause effects, but it can no longer write state\\n {2}fix: make sure the runner is gone; units it was executing become uncertain at the next run`,
      ),
    );
    expect(lease(e)).toMatchObject({ state: 'broken', run: dead, broken: { by: BROKEN_BY, reason: REASON } });
    expect(remoteRefs(e).get(runRef)).toBe(tips.get(runRef)); // the run ref itself is untouched

    // The next reconcile takes over: imports what was recorded, marks uncertain what was not.
    const r = await reconcile(e);
    expect(r.code, r.stderr).toBe(take.exit);
    const got = rows(r.stdout);
    expect(results(r.stdout)).toEqual(take.results);
    for (const u of take.uncertain)
      expect(got[u]?.detail).toBe(`run ${dead} was executing it when its lease was broken`);
    const taker = runOf(r.stdout);
    expect(taker).toMatch(RUN_ID);
    expect(counts(e)).toEqual(take.counts);

    // Its transition commit lists the import, the uncertain units and the break.
    const t = transition(e);
    expect([...(t.lists.imported ?? [])].sort()).toEqual([...take.imported].sort());
    expect([...(t.lists.recovered ?? [])].sort()).toEqual([...take.recovered].sort());
    expectBrokenLeaseRecorded(t);
    for (const u of take.imported)
      expect(t.units[u]).toEqual({ executionKey: checkpoints.get(u)?.executionKey, result: 'imported', run: dead });
    for (const u of take.uncertain)
      expect(t.units[u]).toEqual({
        reason: `run ${dead} was executing it when its lease was broken`,
        result: 'uncertain',
      });

    // Nothing recorded is lost: an imported checkpoint is the receipt, with the dead run's outputs.
    for (const u of take.imported) {
      const o = observed(e, u);
      expect(o.receipt).toMatchObject({ run: dead, executionKey: checkpoints.get(u)?.executionKey });
      expect(o.condition).toBeUndefined();
    }
    // Nothing unrecorded is guessed: an uncertain unit keeps no receipt and names the dead run.
    for (const u of take.uncertain) {
      const o = observed(e, u);
      expect(o.receipt).toBeUndefined();
      expect(o.condition).toMatchObject({ state: 'uncertain', run: dead });
    }
    // A converged unit was run again by the taking-over run.
    for (const u of UNITS)
      if (take.results[u] === 'recovered' || take.results[u] === 'executed')
        expect(observed(e, u).receipt?.run).toBe(taker);
    // Every uid the dead run created is reused.
    for (const [u, uid] of deadUids) expect(observed(e, u).uid).toBe(uid);
    // Consumers resolved the outputs recorded upstream (imported or executed).
    if (counts(e).b) expect(execLog(e, 'b').at(-1)).toBe('b from-a');
    if (counts(e).c) expect(execLog(e, 'c').at(-1)).toBe('c from-b');

    // The dead run ref is consumed: deleted, or retired to evidence (same commit) while an
    // uncertain unit needs it; the taker's own run ref is gone and the lease released.
    expect(runRefs(e)).toEqual([]);
    expect(lease(e)).toMatchObject({ state: 'released', run: taker });
    if (take.uncertain.length) {
      expect(evidenceRefs(e)).toEqual([`refs/nyl/dev/evidence/${dead}`]);
      expect(remoteRefs(e).get(`refs/nyl/dev/evidence/${dead}`)).toBe(tips.get(runRef));
    } else {
      // Seed 000: "After its transition commit lands, the run deletes the run refs it consumed";
      // only a run ref "whose checkpoints an uncertain unit still needs" is retired instead.
      // Soft, so that the rest of the protocol is still checked when this fails.
      expect.soft(evidenceRefs(e), 'no unit is uncertain, so no evidence ref should remain').toEqual([]);
    }

    // Importing is idempotent: the next reconcile changes nothing and runs nothing.
    const tipsAfter = remoteRefs(e);
    const again = await reconcile(e);
    expect(again.code, again.stderr).toBe(take.uncertain.length ? 4 : 0);
    for (const u of UNITS)
      expect(results(again.stdout)[u]).toBe(take.uncertain.includes(u as Unit) ? 'uncertain' : 'current');
    expect(remoteRefs(e)).toEqual(tipsAfter);
    expect(counts(e)).toEqual(take.counts);

    // Manual policy: the unit waits for an operator, then the next reconcile runs it.
    if (take.uncertain.length) {
      const s = await run(e.work, ['status', '-e', 'dev']);
      expect(s.code, s.stderr).toBe(4);
      for (const u of take.uncertain) {
        expect(s.stdout).toContain(`warning NYL-UNIT-UNCERTAIN (${u})`);
        const rec = await run(e.work, ['recover', '-e', 'dev', '--unit', u, '--retry', '--reason', 'checked it']);
        expect(rec.code, rec.stderr).toBe(0);
        expect(rec.stdout).toMatch(/^recover dev: done\n/);
      }
      // recover deletes evidence refs once no uncertain unit needs them.
      expect(evidenceRefs(e)).toEqual([]);
      const after = await reconcile(e);
      expect(after.code, after.stderr).toBe(0);
      for (const u of UNITS)
        expect(results(after.stdout)[u]).toBe(take.uncertain.includes(u as Unit) ? 'executed' : 'current');
    }
    expect(counts(e)).toEqual(k.final);
    await expectAllCurrent(e);
  });
});

describe('nyl recover -e after a crash and a broken lease', () => {
  it('imports without executing, once; the next reconcile converges the uncertain unit', {
    timeout: 120_000,
  }, async () => {
    const e = withRemote();
    await crash(e, 'mid-wave');
    expect(counts(e)).toEqual(c(1, 0, 0, 0));
    const dead = (runRefs(e)[0] as string).slice('refs/nyl/dev/runs/'.length);
    expect((await leaseBreak(e)).code).toBe(0);

    // Until it is imported, status says so, and writes that are not imports refuse.
    const s = await run(e.work, ['status', '-e', 'dev']);
    expect(s.code, s.stderr).toBe(4);
    expect(s.stdout).toContain(`warning NYL-RUN-UNIMPORTED (${dead})`);
    expect(rows(s.stdout).a).toEqual({
      result: 'uncertain',
      detail: `run ${dead} was executing it when its lease was broken`,
    });
    const tips = remoteRefs(e);
    const refused = await run(e.work, ['recover', '-e', 'dev', '--unit', 'a', '--retry', '--reason', 'y']);
    expect(refused.code, refused.stderr).toBe(2);
    expect(refused.stdout).toBe('recover dev: refused\n\n');
    expect(refused.stderr).toBe(
      `error NYL-LEASE-BROKEN\n  the lease of dev was broken and its run ${dead} has not been imported yet\n  fix: run \`nyl recover -e dev\` to import it (a \`nyl reconcile\` or \`nyl teardown\` of dev imports it too), then run this command again\n`,
    );
    expect(remoteRefs(e)).toEqual(tips);

    const r = await run(e.work, ['recover', '-e', 'dev', '--reason', 'x']);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toMatch(
      new RegExp(
        '^recover dev: done\\n' +
          ' {2}desired: +[0-9a-f]{40}\\n' +
          ' {2}observed: +[0-9a-f]{40}\\n' +
          ' {2}imported: +\\[\\]\\n' +
          ` {2}leaseBroken: +\\{"at":"[^"]+","by":"${BROKEN_BY}","reason":"${REASON}"\\}\\n` +
          ' {2}recovered: +\\["a"\\]\\n',
      ),
    );
    // Executes nothing; one transition commit, no run record of its own; the dead run consumed.
    expect(counts(e)).toEqual(c(1, 0, 0, 0));
    expect(runRefs(e)).toEqual([]);
    expect(evidenceRefs(e)).toEqual([`refs/nyl/dev/evidence/${dead}`]); // a is uncertain and names it
    expect(git(e.bare, 'rev-list', '--count', 'refs/nyl/dev/observed')).toBe('1');
    const t = transition(e);
    expect(t.subject).toBe('nyl: recover dev (1 uncertain)');
    expect(t.lists.recovered).toEqual(['a']);
    expect(t.lists.imported ?? []).toEqual([]);
    expectBrokenLeaseRecorded(t);
    expect(observed(e, 'a').condition).toMatchObject({
      state: 'uncertain',
      run: dead,
      reason: `run ${dead} was executing it when its lease was broken`,
    });
    expect(lease(e).state).toBe('released');

    // Idempotent: a second import finds nothing and writes nothing.
    const tips2 = remoteRefs(e);
    const second = await run(e.work, ['recover', '-e', 'dev', '--reason', 'x']);
    expect(second.code, second.stderr).toBe(0);
    expect(second.stdout).toMatch(/^recover dev: nothing to import\n/);
    expect(remoteRefs(e)).toEqual(tips2);
    expect(counts(e)).toEqual(c(1, 0, 0, 0));

    // The next reconcile runs a under its policy (converge: run again, result recovered).
    const next = await reconcile(e);
    expect(next.code, next.stderr).toBe(0);
    expect(results(next.stdout)).toEqual({ a: 'recovered', b: 'executed', p: 'executed', c: 'executed' });
    expect(transition(e).lists.recovered).toEqual(['a']);
    expect(counts(e)).toEqual(c(2, 1, 1, 1));
    await expectAllCurrent(e);
  });
});

describe('a crash without a lease break', () => {
  it('is respected until its deadline: reconcile and recover exit 2, nothing is written or run', {
    timeout: 120_000,
  }, async () => {
    const e = withRemote();
    await crash(e, 'mid-wave');
    const runRef = runRefs(e)[0] as string;
    const dead = runRef.slice('refs/nyl/dev/runs/'.length);
    const tips = remoteRefs(e);

    const s = await run(e.work, ['status', '-e', 'dev', '--json']);
    const st = JSON.parse(s.stdout) as { facts: { lease?: { state: string; run: string; deadline: string } } };
    expect(st.facts.lease).toMatchObject({ state: 'held', run: dead });
    expect(Date.parse(st.facts.lease?.deadline ?? '')).toBeGreaterThan(Date.now() + GRACE_MS);

    const r = await reconcile(e);
    expect(r.code, r.stderr).toBe(2);
    expect(r.stderr).toMatch(new RegExp(`^error NYL-LEASE-HELD\\n {2}dev is held by run ${dead} \\(reconcile\\)`));
    const rec = await run(e.work, ['recover', '-e', 'dev', '--reason', 'x']);
    expect(rec.code, rec.stderr).toBe(2);
    expect(rec.stderr).toContain('error NYL-LEASE-HELD');
    expect(remoteRefs(e)).toEqual(tips);
    expect(counts(e)).toEqual(c(1, 0, 0, 0));

    // Deleting the lease ref alone does not let a run in: the run ref still carries the deadline.
    git(e.work, 'push', '-q', 'origin', ':refs/nyl/dev/lease');
    const r2 = await reconcile(e);
    expect(r2.code, r2.stderr).toBe(2);
    expect(r2.stderr).toMatch(new RegExp(`^error NYL-LEASE-HELD\\n {2}dev is held by run ${dead} \\(reconcile\\)`));
    expect(counts(e)).toEqual(c(1, 0, 0, 0));

    // Takeover after the deadline is not waited for here (it is 12 minutes away, 40 for a run that
    // dies in resolution): an expired lease is the lease-verdict logic's business
    // (src/core/state/lease.ts leaseVerdict: a held lease or unfinished run ref whose deadline plus
    // the clock-skew margin has passed is `expired`, and reconcile/recover import it exactly as a
    // broken one, naming "its deadline … passed" instead of "its lease was broken").
    // A lease break still works from the run ref alone, and the import follows.
    const lb = await leaseBreak(e);
    expect(lb.code, lb.stderr).toBe(0);
    expect(lb.stdout).toMatch(new RegExp(`^lease-break dev: done\\n {2}broken: run ${dead}\\n`));
    const taken = await reconcile(e);
    expect(taken.code, taken.stderr).toBe(0);
    expect(results(taken.stdout)).toEqual({ a: 'recovered', b: 'executed', p: 'executed', c: 'executed' });
    expect(counts(e)).toEqual(c(2, 1, 1, 1));
    expect(runRefs(e)).toEqual([]);
  });
});

describe('two crashes in a row: the taking-over run dies too', () => {
  it('the next run takes over from both dead runs once the second lease is broken', { timeout: 120_000 }, async () => {
    const e = withRemote();
    await crash(e, 'after-checkpoint'); // a checkpointed; b, p started
    const first = (runRefs(e)[0] as string).slice('refs/nyl/dev/runs/'.length);
    expect((await leaseBreak(e)).code).toBe(0);
    // The taking-over run imports a, runs b (converge) and c, leaves p uncertain, dies before landing.
    await crash(e, 'before-transition');
    expect(counts(e)).toEqual(c(1, 1, 0, 1));
    const runs = runRefs(e).map((r) => r.slice('refs/nyl/dev/runs/'.length));
    expect(runs).toHaveLength(2);
    const second = runs.find((r) => r !== first) as string;
    expect(lease(e)).toMatchObject({ state: 'held', run: second });
    // Nothing reached the state refs.
    expect(refNames(e).filter((r) => /\/(desired|observed)$/.test(r))).toEqual([]);

    const lb = await leaseBreak(e, 'second runner was killed');
    expect(lb.code, lb.stderr).toBe(0);
    expect(lb.stdout).toMatch(new RegExp(`^lease-break dev: done\\n {2}broken: run ${second}\\n`));

    // Both runners are gone and both were declared gone: the next reconcile imports both.
    const r = await reconcile(e);
    expect(r.code, `${r.stdout}${r.stderr}`).toBe(4);
    const got = rows(r.stdout);
    expect(results(r.stdout)).toEqual({ a: 'imported', b: 'imported', p: 'uncertain', c: 'uncertain' });
    expect(got.p?.detail).toContain(`run ${first} was executing it`);
    // Its lease was broken too (the first `nyl lease break`); its deadline has not passed.
    expect.soft(got.p?.detail).toBe(`run ${first} was executing it when its lease was broken`);
    expect(got.c?.detail).toBe(`run ${second} was executing it when its lease was broken`);
    // Nothing recorded is lost (a from the first run, b from the second), nothing run again.
    expect(counts(e)).toEqual(c(1, 1, 0, 1));
    expect(observed(e, 'a').receipt?.run).toBe(first);
    expect(observed(e, 'b').receipt?.run).toBe(second);
    const t = transition(e);
    expect([...(t.lists.imported ?? [])].sort()).toEqual(['a', 'b']);
    expect([...(t.lists.recovered ?? [])].sort()).toEqual(['c', 'p']);
    // Both breaks are recorded, oldest first: the first importer died before recording its own.
    expect(t.leaseBroken).toMatchObject([
      { by: BROKEN_BY, reason: REASON },
      { by: BROKEN_BY, reason: 'second runner was killed' },
    ]);
    expect(runRefs(e)).toEqual([]);
    expect(evidenceRefs(e)).toEqual([`refs/nyl/dev/evidence/${first}`, `refs/nyl/dev/evidence/${second}`].sort());
  });
});
