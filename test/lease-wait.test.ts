/**
 * Waiting for a held lease (--wait-lease): the poll schedule (its budget, its windows, its
 * jitter), the expected release read from the holder's past, and the poll itself against real
 * remotes — one request listing the lease and run refs, the environment read again only once
 * they moved, a file:// remote's refs watched, a remote that does not answer. No timing asserted.
 */
import { execFileSync } from 'node:child_process';
import { symlinkSync } from 'node:fs';
import { createServer, type Socket } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectedRelease, runIdTime } from '../src/core/ops/lease/expect.js';
import { LeasePoller, sameLeaseTips } from '../src/core/ops/lease/poll.js';
import { PollSchedule } from '../src/core/ops/lease/schedule.js';
import { loadEnvironment, type OpContext, openWorkspace } from '../src/core/ops/workspace/workspace.js';
import type { ObservedUnit, RunRecord } from '../src/core/state/documents.js';
import { emptyEnvState, type RunRefState } from '../src/core/state/read.js';
import { NylError } from '../src/core/util/errors.js';
import { isoTime } from '../src/core/util/time.js';
import { uuid7 } from '../src/core/util/uuid7.js';
import { type GitHttpServer, makeBareRepo, startGitHttpServer } from './helpers/http-git.js';
import {
  CLI,
  command,
  ENV_DEV,
  git,
  makeRepo,
  nyl,
  startNyl,
  tempDir,
  waitForFile,
  writeFiles,
} from './helpers/repo.js';

/** A deterministic stand-in for Math.random. */
function seeded(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    return s / 2 ** 32;
  };
}

/** The times (ms after the start) a schedule polls at over `horizonMs`, each poll costing `cost`. */
function pollTimes(s: PollSchedule, horizonMs: number, cost = 1): number[] {
  const out: number[] = [];
  for (let now = s.next(0, cost); now <= horizonMs; now += s.next(now, cost)) {
    s.polled(now, cost);
    out.push(now);
  }
  return out;
}

describe('poll schedule', () => {
  it('spends at most 0.48 polls a second over any wait, and about that many', () => {
    for (const horizon of [5_000, 10_000, 60_000, 600_000]) {
      const polls = pollTimes(new PollSchedule(0, { random: seeded(horizon) }), horizon);
      expect(polls.length).toBeLessThanOrEqual(0.48 * (horizon / 1000));
      expect(polls.length).toBeGreaterThanOrEqual(0.4 * (horizon / 1000) - 1);
    }
  });

  it('saves polls ahead of a likely release and spends them inside its window, within the same budget', () => {
    const s = new PollSchedule(0, { random: seeded(1) });
    s.expectRelease({ at: 60_000, spreadMs: 6_000 });
    const polls = pollTimes(s, 120_000);
    const rate = (from: number, to: number) => polls.filter((t) => t >= from && t < to).length / ((to - from) / 1000);
    expect(rate(54_000, 66_000)).toBeGreaterThan(2 * rate(20_000, 54_000));
    expect(polls.length).toBeLessThanOrEqual(0.48 * 120);
    // Past the window the release was not where expected: even polls again.
    expect(rate(70_000, 120_000)).toBeGreaterThan(0.35);
  });

  it('inside a window its polls end slots of it, not open it: a repeated deploy is found soon after it ends', () => {
    // As the repeat bench makes them: the deploy took 4 s ± a fifth last time and takes that again,
    // each plus the landing; the expectation is built from the last time (lease-expect.ts).
    const random = seeded(99);
    const delays: number[] = [];
    for (let seed = 0; seed < 500; seed++) {
      const took = 3_200 + random() * 1_600;
      const release = 3_200 + random() * 1_600 + 300;
      const s = new PollSchedule(0, { random: seeded(seed) });
      s.expectRelease({ at: took + 300, spreadMs: 500 + took / 4 });
      const polls = pollTimes(s, 30_000);
      // Nothing spent as the window opens, and the budget kept over the wait.
      expect(polls[0]).toBeGreaterThan(took + 300 - (500 + took / 4) + 250);
      const upTo = polls.find((t) => t >= release) as number;
      expect(polls.filter((t) => t <= upTo).length).toBeLessThanOrEqual(0.48 * (upTo / 1000) + 1e-9);
      delays.push(upTo - release);
    }
    delays.sort((a, b) => a - b);
    // Half a second after the release, in the median (polls opening the window: ~850 ms).
    expect(delays[250]).toBeLessThan(650);
  });

  it('a poll that costs two requests counts twice', () => {
    const two = pollTimes(new PollSchedule(0, { random: seeded(2) }), 300_000, 2).length;
    expect(two).toBeLessThanOrEqual((0.48 * 300) / 2);
    expect(two).toBeGreaterThanOrEqual((0.4 * 300) / 2 - 1);
  });

  it('jitters: two waiters started together do not poll in step', () => {
    const a = pollTimes(new PollSchedule(0, { random: seeded(3) }), 60_000);
    const b = pollTimes(new PollSchedule(0, { random: seeded(4) }), 60_000);
    const apart = a.filter((t, i) => b[i] !== undefined && Math.abs(t - (b[i] as number)) > 100).length;
    expect(apart).toBeGreaterThan(a.length / 2);
  });
});

describe('expected release', () => {
  it('reads the creation time of a UUIDv7 run id, and nothing from another id', () => {
    expect(runIdTime(uuid7(1_796_000_000_123))).toBe(1_796_000_000_123);
    expect(runIdTime('not-a-run')).toBeUndefined();
    expect(runIdTime('6ba7b810-9dad-11d1-80b4-00c04fd430c8')).toBeUndefined();
  });

  function holding(operation: string, executing: string[], receipts: Record<string, { from: number; took: number }>) {
    const state = emptyEnvState('refs/nyl', 'dev');
    const start = 1_796_000_100_000;
    const run = uuid7(start);
    const record = { schema: 'nyl.run/v1', run, operation, executing, startedAt: isoTime(start) } as RunRecord;
    state.runs.set(run, { id: run, record } as RunRefState);
    for (const [name, r] of Object.entries(receipts))
      state.observed.set(name, {
        name,
        receipt: { run: uuid7(r.from), at: isoTime(r.from + r.took) },
      } as ObservedUnit);
    return { state, run, start };
  }

  it('is when the executing units finished, the last time, after their run started, plus the landing', () => {
    const { state, run, start } = holding('reconcile', ['a', 'b'], {
      a: { from: 1_795_000_000_000, took: 3_000 },
      b: { from: 1_795_500_000_000, took: 8_000 },
      c: { from: 1_795_500_000_000, took: 60_000 },
    });
    expect(expectedRelease(state, run)).toEqual({ at: start + 8_000 + 300, spreadMs: 500 + 2_000 });
  });

  it('is unknown for a unit never run before, and for an operation other than reconcile', () => {
    const never = holding('reconcile', ['a', 'new'], { a: { from: 1_795_000_000_000, took: 3_000 } });
    expect(expectedRelease(never.state, never.run)).toBeUndefined();
    const teardown = holding('teardown', ['a'], { a: { from: 1_795_000_000_000, took: 3_000 } });
    expect(expectedRelease(teardown.state, teardown.run)).toBeUndefined();
  });
});

describe('polling a held lease', () => {
  let server: GitHttpServer;
  beforeAll(async () => {
    server = await startGitHttpServer(tempDir('nyl-lease-wait-root-'));
  });
  const contexts: OpContext[] = [];
  afterAll(async () => {
    for (const c of contexts) c.repo.close();
    await server?.close();
  });
  async function context(dir: string, extra: { networkTimeoutMs?: number } = {}): Promise<OpContext> {
    const ctx = await openWorkspace({ cwd: dir, local: false, remote: 'origin', ...extra });
    contexts.push(ctx);
    return ctx;
  }

  /** A work repository whose remote (served over HTTP) holds dev's state after one reconcile. */
  function recorded(): { dir: string; bare: string; path: string } {
    const rel = makeBareRepo(server.root, `w${Math.random().toString(36).slice(2)}`);
    const dir = makeRepo({ 'nyl.yaml': ENV_DEV + command('a', 'true') });
    git(dir, 'remote', 'add', 'origin', `${server.url}/${rel}`);
    expect(execFileSync(process.execPath, [CLI, 'reconcile', '-e', 'dev'], { cwd: dir, encoding: 'utf8' })).toMatch(
      /executed/,
    );
    return { dir, bare: join(server.root, rel), path: `/${rel}/` };
  }

  it('lists the lease and run refs alone, in one GET; a moved lease is told from an unchanged one', async () => {
    const w = recorded();
    const ctx = await context(w.dir);
    const loaded = await loadEnvironment(ctx, 'dev');
    const poller = await LeasePoller.open(ctx, 'refs/nyl', 'dev');
    const from = server.requests.length;
    const tips = await poller.poll();
    const requests = server.requests.slice(from);
    expect(requests).toEqual([{ method: 'GET', path: `${w.path}info/refs`, service: 'git-upload-pack' }]);
    expect(poller.cost).toBe(1);
    expect([...(tips ?? new Map()).keys()]).toEqual(['refs/nyl/dev/lease']);
    expect(sameLeaseTips(loaded.state, tips ?? new Map())).toBe(true);
    // Another run writes: a run ref appears, the lease moves.
    git(w.bare, 'update-ref', 'refs/nyl/dev/runs/other', git(w.bare, 'rev-parse', 'refs/nyl/dev/lease'));
    const withRun = await poller.poll();
    expect([...(withRun ?? new Map()).keys()].sort()).toEqual(['refs/nyl/dev/lease', 'refs/nyl/dev/runs/other']);
    expect(sameLeaseTips(loaded.state, withRun ?? new Map())).toBe(false);
    poller.close();
  });

  it('asks for the lease alone (two small requests) once the remote lists too many refs for one', async () => {
    const w = recorded();
    const oid = git(w.bare, 'rev-parse', 'refs/nyl/dev/lease');
    const many = Array.from({ length: 3_000 }, (_, i) => `create refs/heads/branch-${i} ${oid}\n`).join('');
    execFileSync('git', ['update-ref', '--stdin'], { cwd: w.bare, input: many });
    const ctx = await context(w.dir);
    const poller = await LeasePoller.open(ctx, 'refs/nyl', 'dev');
    const first = await poller.poll();
    expect([...(first ?? new Map()).keys()]).toEqual(['refs/nyl/dev/lease']);
    expect(poller.cost).toBe(2);
    const from = server.requests.length;
    const again = await poller.poll();
    expect(again).toEqual(first);
    expect(server.requests.slice(from).map((q) => q.method)).toEqual(['GET', 'POST']);
    poller.close();
  });

  it('a file:// remote: a moved lease wakes the waiter before its next poll is due', async () => {
    const bare = join(tempDir('nyl-lease-wait-file-'), 'r.git');
    execFileSync('git', ['init', '--bare', '-q', bare]);
    const dir = makeRepo({ 'nyl.yaml': ENV_DEV + command('a', 'true') });
    git(dir, 'remote', 'add', 'origin', `file://${bare}`);
    expect((await nyl(dir, ['reconcile', '-e', 'dev'])).code).toBe(0);
    const ctx = await context(dir);
    const poller = await LeasePoller.open(ctx, 'refs/nyl', 'dev');
    // Nothing moves: the sleep runs out (and says so).
    expect(await poller.sleep(50)).toBe(false);
    const woken = poller.sleep(120_000);
    git(bare, 'update-ref', 'refs/nyl/dev/lease', git(bare, 'rev-parse', 'refs/nyl/dev/observed'));
    expect(await woken).toBe(true);
    poller.close();
  });

  it('a remote that does not answer ends the poll at --network-timeout with NYL-REMOTE-UNREACHABLE', async () => {
    const sockets: Socket[] = [];
    const silent = createServer((s) => sockets.push(s));
    const port = await new Promise<number>((res) =>
      silent.listen(0, '127.0.0.1', () => res((silent.address() as { port: number }).port)),
    );
    try {
      const dir = makeRepo({ 'nyl.yaml': ENV_DEV + command('a', 'true') });
      git(dir, 'remote', 'add', 'origin', `http://127.0.0.1:${port}/r.git`);
      const ctx = await context(dir, { networkTimeoutMs: 1_000 });
      const poller = await LeasePoller.open(ctx, 'refs/nyl', 'dev');
      const e = await poller.poll().then(
        () => undefined,
        (err: unknown) => err,
      );
      expect(e).toBeInstanceOf(NylError);
      expect((e as NylError).problems[0]).toMatchObject({
        code: 'NYL-REMOTE-UNREACHABLE',
        message: 'could not list the lease of remote origin: no answer within 1s',
      });
      poller.close();
    } finally {
      for (const s of sockets) s.destroy();
      silent.close();
    }
  });

  /**
   * A holder running a unit that waits for `gate`, over smart HTTP, and a second clone (its own
   * path on the server, so its requests can be told apart) with a change to reconcile.
   */
  async function heldLease(name: string, holderEnv: Record<string, string> = {}) {
    const rel = makeBareRepo(server.root, name);
    symlinkSync(join(server.root, rel), join(server.root, `${name}-waiter.git`));
    const slow = command('slow', 'touch "$GATE.started"; while [ ! -f "$GATE" ]; do sleep 0.02; done # 1');
    const holderDir = makeRepo({ 'nyl.yaml': ENV_DEV + slow });
    git(holderDir, 'remote', 'add', 'origin', `${server.url}/${rel}`);
    git(holderDir, 'push', '-q', 'origin', 'main');
    const waiterDir = tempDir(`nyl-lease-${name}-`);
    git(waiterDir, 'clone', '-q', '-b', 'main', `${server.url}/${name}-waiter.git`, '.');
    writeFiles(waiterDir, { 'nyl.yaml': `${ENV_DEV}${slow.replace('# 1', '# 2')}` });
    git(waiterDir, 'commit', '-qam', 'next');
    const gate = join(tempDir('nyl-gate-'), 'open');
    const holder = startNyl(holderDir, ['reconcile', '-e', 'dev'], { GATE: gate, ...holderEnv });
    await waitForFile(`${gate}.started`);
    return { rel, waiterDir, gate, holder, waiterPath: `/${name}-waiter.git/` };
  }

  it('a waiter polls with single GETs while the lease is held, and takes it once released', async () => {
    const { rel, waiterDir, gate, holder, waiterPath } = await heldLease('held');
    const from = server.requests.length;
    const mine = () => server.requests.slice(from).filter((q) => q.path.startsWith(waiterPath));
    const waiter = startNyl(waiterDir, ['reconcile', '-e', 'dev', '--wait-lease', '60s'], { GATE: `${gate}-w` });
    execFileSync('touch', [`${gate}-w`]);
    // Its first read, then two polls.
    const gets = () => mine().filter((q) => q.method === 'GET').length;
    while (gets() < 3) await new Promise((r) => setTimeout(r, 50));
    const held = mine();
    execFileSync('touch', [gate]);
    expect((await holder.done).code).toBe(0);
    const w = await waiter.done;
    expect(w.code, w.stderr).toBe(0);
    // After the first read (GET and its POSTs), each poll is one GET: nothing fetched.
    const firstPoll = held.findIndex((q, i) => i > 0 && q.method === 'GET');
    expect(held.slice(firstPoll).every((q) => q.method === 'GET' && q.service === 'git-upload-pack')).toBe(true);
    expect(git(join(server.root, rel), 'log', '-1', '--format=%s', 'refs/nyl/dev/lease')).toMatch(
      /^nyl: release lease dev from /,
    );
  });

  it('a holder that renews every second costs the waiter no more than its budget: the reads count too', async () => {
    const { waiterDir, gate, holder, waiterPath } = await heldLease('busy', { NYL_HEARTBEAT_INTERVAL: '1s' });
    const from = server.requests.length;
    const conversations = () =>
      server.requests
        .slice(from)
        .filter((q) => q.path.startsWith(waiterPath) && q.method === 'GET' && q.service === 'git-upload-pack').length;
    const started = Date.now();
    const waiter = startNyl(waiterDir, ['reconcile', '-e', 'dev', '--wait-lease', '60s'], { GATE: `${gate}-w` });
    execFileSync('touch', [`${gate}-w`]);
    // Eight seconds of a lease that moves every second.
    await new Promise((r) => setTimeout(r, 8_000));
    const waited = (Date.now() - started) / 1000;
    const spent = conversations() - 1; // its first read is not waiting
    execFileSync('touch', [gate]);
    expect((await holder.done).code).toBe(0);
    expect((await waiter.done).code).toBe(0);
    // Polls, and the reads after polls that found the lease moved, within 0.48 a second.
    expect(spent).toBeGreaterThan(0);
    expect(spent).toBeLessThanOrEqual(Math.ceil(0.5 * waited));
  });
});
