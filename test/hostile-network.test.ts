/**
 * The built `nyl` against a smart-HTTP remote behind a fault-injecting proxy: pushes whose answer
 * is lost after the server applied them, requests that never arrive, stalled and truncated
 * answers, a remote that goes dark, a server hook that declines, and signals while git waits.
 * Each push of a run is picked by its index: a 3-wave reconcile pushes 4 times (the lease with
 * the run record, one write per later wave, the transition).
 */
import { execFileSync } from 'node:child_process';
import { chmodSync, existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { type FaultProxy, type FaultRule, startFaultProxy } from './helpers/fault-proxy.js';
import { type GitHttpServer, makeBareRepo, startGitHttpServer } from './helpers/http-git.js';
import {
  command,
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

let server: GitHttpServer;
let proxy: FaultProxy;
beforeAll(async () => {
  server = await startGitHttpServer(tempDir('nyl-hostile-root-'));
  proxy = await startFaultProxy(server.url);
});
afterAll(async () => {
  await proxy?.close();
  await server?.close();
});
beforeEach(async () => {
  await proxy.arm([]);
});

let count = 0;
interface Setup {
  dir: string;
  bare: string;
  url: string;
  /** Where the units write one line per execution. */
  marks: string;
}

/** A work repository whose origin is reached through the proxy; units a → b → c in three waves. */
function setup(extraConfig = ''): Setup {
  const name = `h${++count}`;
  const rel = makeBareRepo(server.root, name);
  const marks = tempDir('nyl-marks-');
  const mark = (u: string) => `echo run >> ${marks}/${u}`;
  const dir = makeRepo({
    'nyl.yaml':
      ENV_DEV +
      command('a', `${mark('a')}; echo v=1 >> "$NYL_OUTPUT"`) +
      command('b', `${mark('b')}; echo "\${{ units.a.outputs.v }}" >/dev/null; echo v=2 >> "$NYL_OUTPUT"`) +
      command('c', `${mark('c')}; echo "\${{ units.b.outputs.v }}" >/dev/null`) +
      extraConfig,
  });
  const url = `${proxy.url}/${rel}`;
  git(dir, 'remote', 'add', 'origin', url);
  return { dir, bare: join(server.root, rel), url, marks };
}

function runs(s: Setup, unit: string): number {
  const f = join(s.marks, unit);
  return existsSync(f) ? readFileSync(f, 'utf8').split('\n').filter(Boolean).length : 0;
}

function remoteRefs(s: Setup): string[] {
  return git(s.bare, 'for-each-ref', '--format=%(refname)', 'refs/nyl/').split('\n').filter(Boolean);
}

function leaseState(s: Setup): string {
  return (JSON.parse(git(s.bare, 'show', 'refs/nyl/dev/lease:lease.json')) as { state: string }).state;
}

function results(stdout: string): Record<string, string> {
  return Object.fromEntries(parseTable(stdout).map((r) => [r.UNIT, r.RESULT ?? r.STATE ?? '']));
}

/** Nyl with short network bounds, as the tests need them (through options, not sleeps). */
const FAST = ['--network-timeout', '3s'];

/** After a fault-free-looking outcome: every unit ran once, the transition landed, the lease is free. */
function expectCleanLanding(s: Setup): void {
  expect({ a: runs(s, 'a'), b: runs(s, 'b'), c: runs(s, 'c') }).toEqual({ a: 1, b: 1, c: 1 });
  expect(remoteRefs(s).filter((r) => /\/(runs|evidence)\//.test(r))).toEqual([]);
  expect(leaseState(s)).toBe('released');
  const observed = git(s.bare, 'log', '-1', '--format=%s', 'refs/nyl/dev/observed');
  expect(observed).toBe('nyl: reconcile dev (3 executed)');
}

describe('a push whose answer is lost is settled, not guessed', () => {
  // Two faults in a row: git itself resends a request on a reused connection once.
  const twice = (nth: number, fault: FaultRule['fault'], extra: Partial<FaultRule> = {}): FaultRule[] => [
    { match: 'receive-pack', nth, fault, ...extra },
    { match: 'receive-pack', nth: nth + 1, fault, ...extra },
  ];

  it.each([1, 2, 3, 4])(
    'answer dropped after the server applied push %i: carries on as if it had arrived',
    async (k) => {
      const s = setup();
      await proxy.arm(twice(k, 'drop-response'));
      const r = await nylJson<{ stats: { remoteRetries: number } }>(s.dir, ['reconcile', '-e', 'dev', ...FAST]);
      expect(r.code, r.stderr + r.stdout).toBe(0);
      expectCleanLanding(s);
      expect(r.json.stats.remoteRetries).toBeGreaterThan(0);
    },
  );

  it.each([1, 2, 4])('request of push %i never reached the server: sent again, once', async (k) => {
    const s = setup();
    await proxy.arm(twice(k, 'drop-request'));
    const r = await nyl(s.dir, ['reconcile', '-e', 'dev', ...FAST]);
    expect(r.code, r.stderr + r.stdout).toBe(0);
    expectCleanLanding(s);
  });

  it('an answer cut off after 4 bytes (push 2) is settled by reading the remote again', async () => {
    const s = setup();
    await proxy.arm(twice(2, 'truncate-response'));
    const r = await nyl(s.dir, ['reconcile', '-e', 'dev', ...FAST]);
    expect(r.code, r.stderr).toBe(0);
    expectCleanLanding(s);
  });

  it('an answer that never comes (push 3, stalled) ends within the network bound and is settled', async () => {
    const s = setup();
    await proxy.arm([{ match: 'receive-pack', nth: 3, fault: 'stall-response' }]);
    const r = await nyl(s.dir, ['reconcile', '-e', 'dev', ...FAST]);
    expect(r.code, r.stderr).toBe(0);
    expectCleanLanding(s);
    expect(r.ms).toBeLessThan(20_000);
  });
});

describe('a remote that goes dark in the middle of a run', () => {
  it('stops at the write in doubt, names it and what the next run will do; units it did not start stay unstarted', async () => {
    const s = setup();
    // Push 2 (wave 2: a's checkpoint, b listed as executing) is applied, its answer stalls, and
    // from then on the remote answers nothing at all.
    await proxy.arm([{ match: 'receive-pack', nth: 2, fault: 'stall-response' }]);
    const run = startNyl(s.dir, ['reconcile', '-e', 'dev', '--network-timeout', '2s']);
    while (proxy.pushes < 2 + countBefore()) await sleep(20);
    await proxy.arm([{ match: 'any', nth: 1, andAfter: true, fault: 'refuse' }]);
    const r = await run.done;
    expect(r.code, r.stderr).toBe(4);
    expect(r.stderr).toMatch(/^error NYL-WRITE-IN-DOUBT \(origin\)\n/);
    expect(r.stderr).toContain('renews its lease and lists b as executing got no answer from remote origin');
    expect(r.stderr).toMatch(/if it landed: its record lists b as executing although nyl stopped before starting them/);
    expect(r.stderr).toMatch(/if not: run \S+ holds the lease until its previous deadline/);
    expect(r.lingerMs).toBeLessThan(1000);
    expect({ a: runs(s, 'a'), b: runs(s, 'b'), c: runs(s, 'c') }).toEqual({ a: 1, b: 0, c: 0 });
    // The write had landed: the next run, after the lease is broken, finds what the message said.
    await proxy.arm([]);
    expect((await nyl(s.dir, ['lease', 'break', '-e', 'dev', '--reason', 'runner lost the network'])).code).toBe(0);
    const next = await nyl(s.dir, ['reconcile', '-e', 'dev']);
    expect(results(next.stdout)).toEqual({ a: 'imported', b: 'uncertain', c: 'blocked' });
    expect(runs(s, 'a')).toBe(1);
  });
});

let pushesAtStart = 0;
beforeEach(() => {
  pushesAtStart = proxy.pushes;
});
function countBefore(): number {
  return pushesAtStart;
}

describe('a declined push is not a lost race', () => {
  function decline(s: Setup): void {
    const hook = join(s.bare, 'hooks', 'pre-receive');
    writeFileSync(
      hook,
      '#!/bin/sh\nwhile read old new ref; do case "$ref" in refs/nyl/*) echo "refs/nyl/* is protected by policy DEPLOY-7" >&2; exit 1;; esac; done\n',
    );
    chmodSync(hook, 0o755);
  }

  it('is NYL-REMOTE-REJECTED with the server’s own message, pushed once, never retried (also under --wait-lease)', async () => {
    const s = setup();
    decline(s);
    for (const extra of [[], ['--wait-lease', '10s']]) {
      const before = proxy.pushes;
      const r = await nyl(s.dir, ['reconcile', '-e', 'dev', ...FAST, ...extra]);
      expect(r.code, r.stderr).toBe(1);
      expect(r.stderr).toMatch(/^error NYL-REMOTE-REJECTED \(refs\/nyl\/dev\/lease\)\n/);
      expect(r.stderr).toContain('refs/nyl/* is protected by policy DEPLOY-7');
      expect(r.stderr).toContain('contents: write');
      expect(r.stderr).not.toContain('NYL-LEASE-HELD');
      expect(proxy.pushes - before).toBe(1);
      expect(r.ms).toBeLessThan(8_000);
    }
    expect(runs(s, 'a')).toBe(0);
  });
});

describe('lease polls back off', () => {
  it('a 10 s --wait-lease on a held lease polls a handful of times and pushes nothing', async () => {
    const s = setup(
      command('slow', 'touch "$GATE.started"; while [ ! -f "$GATE" ]; do sleep 0.05; done', { needs: ['c'] }),
    );
    const gate = join(tempDir('nyl-gate-'), 'open');
    const holder = startNyl(s.dir, ['reconcile', '-e', 'dev'], { GATE: gate });
    await waitForFile(`${gate}.started`);
    const pushes = proxy.pushes;
    const from = proxy.requests.length;
    const waiter = await nyl(s.dir, ['reconcile', '-e', 'dev', '--wait-lease', '10s'], { GATE: gate });
    const fetches = proxy.requests
      .slice(from)
      .filter((q) => q.service === 'git-upload-pack' && q.path.includes(s.url.split('/').pop() as string)).length;
    writeFileSync(gate, '');
    expect((await holder.done).code).toBe(0);
    expect(waiter.code, waiter.stderr).toBe(2);
    expect(waiter.stderr).toMatch(/^error NYL-LEASE-HELD\n/);
    expect(proxy.pushes).toBe(pushes + 1); // the holder's transition only
    // 250 ms doubling to 5 s, ±20%: about 6 polls in 10 s, plus the first read.
    expect(fetches).toBeGreaterThanOrEqual(4);
    expect(fetches).toBeLessThanOrEqual(10);
  });
});

describe('every network call ends', () => {
  it('a stalled fetch ends at --network-timeout with NYL-REMOTE-UNREACHABLE', async () => {
    const s = setup();
    expect((await nyl(s.dir, ['reconcile', '-e', 'dev'])).code).toBe(0);
    await proxy.arm([{ match: 'upload-pack', nth: 1, andAfter: true, fault: 'stall-response' }]);
    const r = await nyl(s.dir, ['status', '-e', 'dev', '--network-timeout', '2s']);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/^error NYL-REMOTE-UNREACHABLE \(origin\)\n {2}could not fetch from remote origin: /);
    expect(r.ms).toBeLessThan(8_000);
  });

  /** The git processes still talking to `url`. */
  const gitFor = (url: string) =>
    execFileSync('ps', ['-eo', 'pid=,args='], { encoding: 'utf8' })
      .split('\n')
      .filter((l) => l.includes(url) && !l.includes('ps -eo'));

  for (const when of ['as the fetch goes out (nyl still loading)', 'once nyl listens for signals'])
    it(`SIGTERM while the first fetch stalls, ${when}: nyl ends it and exits within the grace window`, async () => {
      const s = setup();
      expect((await nyl(s.dir, ['reconcile', '-e', 'dev'])).code).toBe(0);
      await proxy.arm([{ match: 'upload-pack', nth: 1, andAfter: true, fault: 'stall-response' }]);
      const seen = proxy.requests.length;
      const loading = when.startsWith('as');
      // Held while it loads (a test hook), nyl gets the signal before main() listens for one.
      const run = startNyl(s.dir, ['status', '-e', 'dev'], loading ? { NYL_TEST_LOAD_DELAY_MS: '5000' } : {});
      while (!proxy.requests.slice(seen).some((q) => q.service === 'git-upload-pack')) await sleep(5);
      if (!loading) await sleep(1_500);
      const signalled = Date.now();
      run.child.kill('SIGTERM');
      const r = await run.done;
      expect(Date.now() - signalled).toBeLessThan(3_500);
      expect(r.stderr).not.toContain('NYL-INTERNAL');
      if (loading) expect(r.signal).toBe('SIGTERM');
      else expect(r.stderr).toContain('stopped by the cancel');
      const until = Date.now() + 3_000;
      while (gitFor(s.url).length && Date.now() < until) await sleep(50);
      expect(gitFor(s.url)).toEqual([]);
    });

  it('SIGTERM reaches a push in flight: nyl settles it and exits within the grace window', async () => {
    const s = setup();
    // The transition (push 4) is applied; its answer never comes.
    await proxy.arm([{ match: 'receive-pack', nth: 4, fault: 'stall-response' }]);
    const run = startNyl(s.dir, ['reconcile', '-e', 'dev', '--cancel-grace', '4s']);
    while (proxy.pushes < pushesAtStart + 4) await sleep(20);
    const signalled = Date.now();
    run.child.kill('SIGTERM');
    const r = await run.done;
    expect(Date.now() - signalled).toBeLessThan(5_000);
    // It had landed: nyl said so, and the remote holds it.
    expect(r.code, r.stderr).toBe(0);
    expectCleanLanding(s);
  });

  it('a SIGKILLed nyl leaves no git push behind', async () => {
    const s = setup();
    await proxy.arm([{ match: 'receive-pack', nth: 2, fault: 'stall-response' }]);
    const run = startNyl(s.dir, ['reconcile', '-e', 'dev']);
    while (proxy.pushes < pushesAtStart + 2) await sleep(20);
    await sleep(200);
    const pushing = () =>
      execFileSync('ps', ['-eo', 'pid=,args='], { encoding: 'utf8' })
        .split('\n')
        .filter((l) => l.includes(s.url) && !l.includes('ps -eo'));
    expect(pushing().length).toBeGreaterThan(0);
    run.child.kill('SIGKILL');
    await run.done;
    const until = Date.now() + 3_000;
    while (pushing().length && Date.now() < until) await sleep(50);
    expect(pushing()).toEqual([]);
  });
});
