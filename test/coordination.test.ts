import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
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
} from './helpers/repo.js';

/**
 * Coordination through a real remote: a bare repository over file://, several nyl processes,
 * real signals. Every command runs online (the remote is the authority) unless the case is --local.
 */

const dirs: string[] = [];
afterAll(() => {
  if (process.env.NYL_KEEP_TEST_REPOS) return;
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

function tempDir(prefix = 'nyl-coord-'): string {
  const d = mkdtempSync(join(tmpdir(), prefix));
  dirs.push(d);
  return d;
}

interface Remote {
  bare: string;
  work: string;
  /** A folder outside every repository, for logs and markers the units write. */
  scratch: string;
}

/** An empty bare remote over file:// and a work repository with `files` committed and pushed. */
function withRemote(files: (scratch: string) => Record<string, string>): Remote {
  const root = tempDir();
  const scratch = tempDir('nyl-coord-scratch-');
  git(root, 'init', '-q', '--bare', '-b', 'main', 'remote.git');
  const bare = join(root, 'remote.git');
  const work = makeRepo(files(scratch));
  git(work, 'remote', 'add', 'origin', `file://${bare}`);
  git(work, 'push', '-q', 'origin', 'main');
  return { bare, work, scratch };
}

/** Runs git without throwing. */
function tryGit(cwd: string, ...args: string[]) {
  const r = spawnSync('git', args, { cwd, env: { ...process.env, ...GIT_ENV }, encoding: 'utf8' });
  return { status: r.status, stdout: r.stdout.trim(), stderr: r.stderr };
}

function refsOf(repo: string, prefix = 'refs/nyl/'): string[] {
  const out = git(repo, 'for-each-ref', '--format=%(refname)', prefix);
  return out ? out.split('\n') : [];
}

function refTips(repo: string, prefix = 'refs/nyl/'): string {
  return git(repo, 'for-each-ref', '--format=%(objectname) %(refname)', prefix);
}

function showJson<T = Record<string, unknown>>(repo: string, spec: string): T {
  return JSON.parse(git(repo, 'show', spec)) as T;
}

function results(stdout: string): Record<string, string> {
  return Object.fromEntries(parseTable(stdout).map((r) => [r.UNIT, r.RESULT ?? r.STATE ?? '']));
}

function lines(file: string): string[] {
  return existsSync(file) ? readFileSync(file, 'utf8').split('\n').filter(Boolean) : [];
}

async function waitFor(what: string, pred: () => boolean, timeoutMs = 20_000): Promise<void> {
  const until = Date.now() + timeoutMs;
  while (!pred()) {
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

/** Live (non-zombie) members of a process group: a zombie that PID 1 never reaps counts as dead. */
function groupMembers(pgid: number): number[] {
  const out: number[] = [];
  for (const e of readdirSync('/proc')) {
    if (!/^\d+$/.test(e)) continue;
    let stat: string;
    try {
      stat = readFileSync(`/proc/${e}/stat`, 'utf8');
    } catch {
      continue;
    }
    // pid (comm) state ppid pgrp …: comm may hold spaces, so split after the last ')'.
    const [state, , pgrp] = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    if (Number(pgrp) === pgid && state !== 'Z') out.push(Number(e));
  }
  return out;
}

function alive(pid: number): boolean {
  try {
    return !/State:\s+Z/.test(readFileSync(`/proc/${pid}/status`, 'utf8'));
  } catch {
    return false;
  }
}

describe('a race for one environment between processes and clones', () => {
  it('serializes 4 concurrent reconciles under --wait-lease; every transition lands', async () => {
    const shared = join(tempDir('nyl-race-shared-'), 'runs.log');
    const cfg = (tag: string) =>
      ENV_DEV +
      command('race', `echo "start $NYL_RUN" >> '${shared}'; sleep 0.3; echo "end $NYL_RUN" >> '${shared}' # ${tag}`, {
        spec: { idempotent: true },
      });
    const { bare } = withRemote(() => ({ 'nyl.yaml': cfg('seed') }));
    const root = tempDir();
    // Every clone has its own desired document for `race`, so every run has work whoever ran before.
    const clones = [0, 1, 2, 3].map((i) => {
      const dir = join(root, `clone${i}`);
      git(root, 'clone', '-q', `file://${bare}`, dir);
      commitFiles(dir, { 'nyl.yaml': cfg(`clone ${i}`) }, `clone ${i}`);
      return dir;
    });

    const runs = await Promise.all(
      clones.map((c) => startNyl(c, ['reconcile', '-e', 'dev', '--wait-lease', '60s', '--json']).done),
    );
    // Soft: a run that exits early must not hide what the others show about serialization.
    for (const r of runs) expect.soft(r.code, `--wait-lease 60s run exited early: ${r.stdout}${r.stderr}`).toBe(0);
    const ok = runs.filter((r) => r.code === 0);
    const ids = ok.map((r) => (JSON.parse(r.stdout) as { run: string }).run);
    for (const r of ok)
      expect((JSON.parse(r.stdout) as { rows: { unit: string; result: string }[] }).rows).toEqual([
        expect.objectContaining({ unit: 'race', result: 'executed' }),
      ]);
    expect(new Set(ids).size).toBe(ok.length);

    // Never two holders at once: start/end markers of the runs never interleave.
    const log = lines(shared);
    expect(log).toHaveLength(2 * ok.length);
    const order: string[] = [];
    for (let k = 0; k < log.length; k += 2) {
      const m = /^start (\S+)$/.exec(log[k] as string);
      expect(m, log.join('\n')).not.toBeNull();
      expect(log[k + 1], log.join('\n')).toBe(`end ${m?.[1]}`);
      order.push(m?.[1] as string);
    }
    expect(new Set(order)).toEqual(new Set(ids));

    // One transition commit per run on the remote's observed ref, as a fetch sees it.
    git(clones[0] as string, 'fetch', '-q', 'origin', '+refs/nyl/dev/observed:refs/check/observed');
    const subjects = git(clones[0] as string, 'log', '--format=%s', 'refs/check/observed').split('\n');
    expect.soft(subjects, 'one transition commit per run (4 runs)').toHaveLength(4);
    for (const s of subjects) expect(s).toBe('nyl: reconcile dev (1 executed)');
    // Transitions landed in the order the tool ran: each commit's receipt names its run (newest first in the log).
    const commits = git(clones[0] as string, 'log', '--format=%H', 'refs/check/observed').split('\n');
    const runsInLog = commits
      .map((c) => JSON.parse(git(clones[0] as string, 'show', `${c}:units/race.json`)).receipt.run as string)
      .reverse();
    expect(runsInLog).toEqual(order);
    expect(refsOf(bare).filter((r) => r.includes('/runs/'))).toEqual([]);
    expect(showJson(bare, 'refs/nyl/dev/lease:lease.json')).toMatchObject({ state: 'released' });
  });

  /** The `race` unit running `run`, as a nyl.yaml. */
  const raceUnit = (run: string) => ({ 'nyl.yaml': ENV_DEV + command('race', run, { spec: { idempotent: true } }) });

  /**
   * A first run that landed, whose unit noted the run's own ref and tip while it ran: its
   * transition deleted that ref, and history starts with it (no parents), so nothing on the remote
   * reaches that commit.
   */
  async function landedFirstRun() {
    const remote = withRemote(() => ({ 'nyl.yaml': ENV_DEV }));
    const { bare, work, scratch } = remote;
    const note = join(scratch, 'run-ref');
    const runRefs = `git --git-dir='${bare}' for-each-ref --format='%(objectname) %(refname)' refs/nyl/dev/runs/`;
    commitFiles(work, raceUnit(`${runRefs} > '${note}'`), 'a');
    git(work, 'push', '-q', 'origin', 'main');
    const first = await nyl(work, ['reconcile', '-e', 'dev']);
    expect(first.code, `${first.stdout}${first.stderr}`).toBe(0);
    const [tip, ref] = readFileSync(note, 'utf8').trim().split(' ') as [string, string];
    expect(refsOf(bare)).not.toContain(ref);
    return { ...remote, tip, ref };
  }

  it('a fresh clone that read a landing write half done (its run ref still listed) still lands its transition', async () => {
    const { bare, work, tip, ref } = await landedFirstRun();

    // What a fetch sees while git commits that write (it moves refs before it deletes any): the
    // lease released, the run ref still there. A fresh clone reads it at depth 1 and imports the
    // run; the ref is gone by the time it lands (its unit deletes it, as that write did).
    git(bare, 'update-ref', ref, tip);
    const fresh = join(tempDir(), 'fresh');
    git(work, 'clone', '-q', `file://${bare}`, fresh);
    commitFiles(fresh, raceUnit(`git --git-dir='${bare}' update-ref -d ${ref}`), 'b');
    const r = await nylJson<{ run: string; problems: { code: string }[] }>(fresh, ['reconcile', '-e', 'dev']);
    expect(readFileSync(join(fresh, '.git', 'shallow'), 'utf8')).toContain(tip);
    expect(r.json.problems.map((p) => p.code)).not.toContain('NYL-REMOTE-REJECTED');
    expect(r.code, r.stdout).toBe(0);
    // Its transition landed; history records the first run once, and reaches no commit of its ref.
    expect(showJson(bare, 'refs/nyl/dev/lease:lease.json')).toMatchObject({ state: 'released', run: r.json.run });
    expect(refsOf(bare).filter((x) => x.includes('/runs/'))).toEqual([]);
    const subjects = git(bare, 'log', '--first-parent', '--format=%s', 'refs/nyl/dev/history').split('\n');
    expect(subjects).toHaveLength(2);
    expect(subjects[0]).toContain(r.json.run);
    expect(tryGit(bare, 'merge-base', '--is-ancestor', tip, 'refs/nyl/dev/history').status).toBe(1);
  });

  it('a clone that read a landing write half done reads the refs once more and does not import the run that landed', async () => {
    const { bare, work, scratch, tip, ref } = await landedFirstRun();

    // Another clone's first fetch sees what a fetch sees while git commits a landing write (it
    // moves refs before it deletes any): the lease released by the first run, its run ref listed.
    // The remote's upload-pack lists that ref again for that one fetch only; later fetches are plain.
    const other = join(tempDir(), 'other');
    git(work, 'clone', '-q', `file://${bare}`, other);
    const calls = join(scratch, 'upload-pack-calls');
    const wrapper = join(scratch, 'upload-pack');
    writeFileSync(
      wrapper,
      `#!/bin/sh\necho call >> '${calls}'\n` +
        `if [ "$(wc -l < '${calls}')" -eq 1 ]; then\n` +
        `  git --git-dir='${bare}' update-ref ${ref} ${tip}\n  git upload-pack "$@"; s=$?\n` +
        `  git --git-dir='${bare}' update-ref -d ${ref}\n  exit $s\nfi\nexec git upload-pack "$@"\n`,
      { mode: 0o755 },
    );
    git(other, 'config', 'remote.origin.uploadpack', wrapper);
    commitFiles(other, raceUnit('true'), 'b');
    type R = { rows: { unit: string; result: string }[]; stats: { remoteRoundTrips: number } };
    const r = await nylJson<R>(other, ['reconcile', '-e', 'dev']);
    expect(r.code, r.stdout).toBe(0);
    expect(r.json.rows.map((x) => [x.unit, x.result])).toEqual([['race', 'executed']]);
    // Both reads went through the wrapper: the torn one and the one more it took.
    expect(lines(calls)).toHaveLength(2);
    const observed = showJson<{ condition?: unknown }>(bare, 'refs/nyl/dev/observed:units/race.json');
    expect(observed.condition).toBeUndefined();
    const subjects = git(bare, 'log', '--first-parent', '--format=%s', 'refs/nyl/dev/history').split('\n');
    expect(subjects).toHaveLength(2);
    expect(subjects.filter((x) => x.includes(ref.split('/').at(-1) as string))).toHaveLength(1);
    expect(refsOf(bare).filter((x) => x.includes('/runs/'))).toEqual([]);

    // An untorn read of the same change costs one round trip less.
    commitFiles(other, raceUnit('true # c'), 'c');
    const plain = await nylJson<R>(other, ['reconcile', '-e', 'dev']);
    expect(plain.code, plain.stdout).toBe(0);
    expect(lines(calls)).toHaveLength(3);
    expect(r.json.stats.remoteRoundTrips).toBe(plain.json.stats.remoteRoundTrips + 1);
  });

  it('refuses a concurrent second run with NYL-LEASE-HELD, also after --wait-lease 100ms', async () => {
    const { bare, work, scratch } = withRemote((d) => ({
      'nyl.yaml':
        ENV_DEV +
        command('hold', `echo up > '${d}/started'; while [ ! -f '${d}/release' ]; do sleep 0.05; done`, {
          timeout: '1m',
        }),
    }));
    const other = join(tempDir(), 'other');
    git(work, 'clone', '-q', `file://${bare}`, other);

    const a = startNyl(work, ['reconcile', '-e', 'dev']);
    try {
      await waitFor('the first run to start its unit', () => existsSync(join(scratch, 'started')));
      const held = showJson<{ run: string; state: string }>(bare, 'refs/nyl/dev/lease:lease.json');
      expect(held.state).toBe('held');
      const before = refTips(bare);

      const b = await nyl(other, ['reconcile', '-e', 'dev']);
      expect(b.code, `${b.stdout}${b.stderr}`).toBe(2);
      expect(b.stderr).toMatch(/^error NYL-LEASE-HELD/m);
      expect(b.stderr).toContain(`dev is held by run ${held.run} (reconcile)`);
      expect(b.stderr).toMatch(/fix: .*--wait-lease <duration>/);

      const t0 = Date.now();
      type Refused = { exit: number; problems: { code: string }[]; stats: { remoteRoundTrips: number } };
      const c = await nylJson<Refused>(other, ['reconcile', '-e', 'dev', '--wait-lease', '100ms']);
      expect(Date.now() - t0).toBeGreaterThanOrEqual(100);
      expect(c.code).toBe(2);
      expect(c.json.problems.map((p) => p.code)).toEqual(['NYL-LEASE-HELD']);
      expect(c.json.stats.remoteRoundTrips).toBeGreaterThanOrEqual(2); // it read the lease again after waiting
      expect(refTips(bare)).toBe(before); // the refused runs wrote nothing
    } finally {
      writeFileSync(join(scratch, 'release'), '');
    }
    const ra = await a.done;
    expect(ra.code).toBe(0);
  });
});

describe('cancellation with real signals', () => {
  /** `tool` traps INT and TERM and reports them; `after` (next wave) must never start. */
  async function cancelRun(sig: 'SIGINT' | 'SIGTERM', idempotent: boolean) {
    const { bare, work, scratch } = withRemote((d) => ({
      'nyl.yaml':
        ENV_DEV +
        command(
          'tool',
          `trap 'echo got-INT >> "${d}/sig.log"; exit 130' INT; trap 'echo got-TERM >> "${d}/sig.log"; exit 143' TERM; ` +
            `echo run >> '${d}/tool.log'; if [ -f '${d}/fast' ]; then exit 0; fi; echo $$ > '${d}/pid'; sleep 30 & wait`,
          { timeout: '5m', spec: idempotent ? { idempotent: true } : {} },
        ) +
        command('after', `echo after >> '${d}/after.log'`, { needs: ['tool'] }),
    }));
    const a = startNyl(work, ['reconcile', '-e', 'dev']);
    await waitFor('the tool to start', () => existsSync(join(scratch, 'pid')));
    const signalledAt = Date.now();
    a.child.kill(sig);
    const r = await a.done;
    const out = `${r.stdout}\n${r.stderr}`;
    expect(Date.now() - signalledAt).toBeLessThan(10_000);
    expect(r.code, out).toBe(4);
    expect(out).toMatch(/^error NYL-RUN-CANCELLED/m);
    expect(readFileSync(join(scratch, 'sig.log'), 'utf8')).toBe(`got-${sig.slice(3)}\n`);
    expect(results(r.stdout)).toMatchObject({ tool: 'uncertain' });
    const pgid = Number(readFileSync(join(scratch, 'pid'), 'utf8'));
    expect(groupMembers(pgid)).toEqual([]); // the `sleep 30 &` went with its group

    // The remote: lease released, run ref finished and cancelled, no transition commit.
    const runRefs = refsOf(bare, 'refs/nyl/dev/runs/');
    expect(runRefs).toHaveLength(1);
    const runRef = runRefs[0] as string;
    const id = runRef.split('/').pop() as string;
    expect(showJson(bare, 'refs/nyl/dev/lease:lease.json')).toMatchObject({ state: 'released', run: id });
    expect(showJson(bare, `${runRef}:run.json`)).toMatchObject({ phase: 'finished', state: 'cancelled' });
    expect(showJson(bare, `${runRef}:units/tool/checkpoint.json`)).toMatchObject({ result: 'uncertain' });
    expect(git(bare, 'ls-tree', '-r', '--name-only', runRef)).not.toContain('units/after/');
    expect(tryGit(bare, 'rev-parse', '--verify', '-q', 'refs/nyl/dev/observed').status).not.toBe(0);
    expect(existsSync(join(scratch, 'after.log'))).toBe(false);

    // Status names the cancelled run until it is imported.
    const st = await nyl(work, ['status', '-e', 'dev']);
    expect(st.code, `${st.stdout}${st.stderr}`).toBe(4);
    expect(`${st.stdout}${st.stderr}`).toMatch(/^warning NYL-RUN-UNIMPORTED/m);
    expect(`${st.stdout}${st.stderr}`).toContain(id);

    // The next run takes over at once: no --wait-lease, no lease break.
    if (idempotent) writeFileSync(join(scratch, 'fast'), '');
    const t1 = Date.now();
    const next = await nyl(work, ['reconcile', '-e', 'dev']);
    const nextOut = `${next.stdout}${next.stderr}`;
    expect(Date.now() - t1).toBeLessThan(8_000);
    expect(nextOut).not.toMatch(/NYL-LEASE-HELD|NYL-LEASE-BROKEN/);
    if (idempotent) {
      expect(next.code, nextOut).toBe(0);
      expect(results(next.stdout)).toEqual({ tool: 'recovered', after: 'executed' });
      expect(lines(join(scratch, 'tool.log'))).toHaveLength(2);
      expect(lines(join(scratch, 'after.log'))).toHaveLength(1);
    } else {
      expect(next.code, nextOut).toBe(4);
      expect(results(next.stdout)).toMatchObject({ tool: 'uncertain' });
      expect(results(next.stdout).after).not.toBe('executed');
      expect(lines(join(scratch, 'tool.log'))).toHaveLength(1);
      expect(existsSync(join(scratch, 'after.log'))).toBe(false);
      const unit = showJson<{ condition?: { state: string; run: string } }>(
        bare,
        'refs/nyl/dev/observed:units/tool.json',
      );
      expect(unit.condition).toMatchObject({ state: 'uncertain', run: id });
    }
    const lease = showJson<Record<string, unknown>>(bare, 'refs/nyl/dev/lease:lease.json');
    expect(lease.state).toBe('released');
    expect(lease.broken).toBeUndefined();
    expect(git(bare, 'log', '-1', '--format=%B', 'refs/nyl/dev/observed')).not.toContain('leaseBroken');
    expect(refsOf(bare, 'refs/nyl/dev/runs/')).toEqual([]); // consumed (or retired to evidence)
  }

  it('SIGINT: forwarded to the tool, run ref finished, lease released; the next run takes over (manual: uncertain)', async () => {
    await cancelRun('SIGINT', false);
  });

  it('SIGTERM: same, and an idempotent unit is recovered by the next run', async () => {
    await cancelRun('SIGTERM', true);
  });

  it('SIGKILLs the process group of a tool that ignores SIGINT after --cancel-grace 1s', async () => {
    const { work, scratch } = withRemote((d) => ({
      'nyl.yaml': ENV_DEV + command('deaf', `trap '' INT; echo $$ > '${d}/pid'; sleep 30`, { timeout: '5m' }),
    }));
    const t0 = Date.now();
    const a = startNyl(work, ['reconcile', '-e', 'dev', '--cancel-grace', '1s']);
    await waitFor('the tool to start', () => existsSync(join(scratch, 'pid')));
    const pgid = Number(readFileSync(join(scratch, 'pid'), 'utf8'));
    await waitFor('the tool’s sleep', () => groupMembers(pgid).length > 0);
    a.child.kill('SIGINT');
    const r = await a.done;
    expect(Date.now() - t0).toBeLessThan(10_000);
    expect(r.code, `${r.stdout}${r.stderr}`).toBe(4);
    expect(`${r.stdout}${r.stderr}`).toMatch(/^error NYL-RUN-CANCELLED/m);
    expect(alive(pgid)).toBe(false);
    expect(groupMembers(pgid)).toEqual([]);
  });
});

describe('recovery policies', () => {
  it('after timeouts: inspect applied → recovered with outputs, not applied → executed again, unknown → uncertain; idempotent converges', async () => {
    const slow = (d: string, name: string) => `echo run >> '${d}/${name}.log'; [ -f '${d}/fast' ] || sleep 5`;
    const { bare, work, scratch } = withRemote((d) => ({
      'nyl.yaml':
        ENV_DEV +
        command('applied', slow(d, 'applied'), {
          timeout: '1s',
          spec: { inspect: 'echo k=v >> "$NYL_OUTPUT"' },
        }) +
        command('notapplied', slow(d, 'notapplied'), { timeout: '1s', spec: { inspect: 'exit 2' } }) +
        command('unknown', slow(d, 'unknown'), { timeout: '1s', spec: { inspect: 'echo cannot tell; exit 1' } }) +
        command('idem', slow(d, 'idem'), { timeout: '1s', spec: { idempotent: true } }),
    }));
    const first = await nyl(work, ['reconcile', '-e', 'dev']);
    expect(first.code, first.stdout + first.stderr).toBe(4);
    expect(results(first.stdout)).toEqual({
      applied: 'uncertain',
      notapplied: 'uncertain',
      unknown: 'uncertain',
      idem: 'uncertain',
    });
    expect(first.stdout).toContain('timed out after 1.0s');

    writeFileSync(join(scratch, 'fast'), '');
    const second = await nyl(work, ['reconcile', '-e', 'dev']);
    expect(second.code, second.stdout + second.stderr).toBe(4);
    expect(results(second.stdout)).toEqual({
      applied: 'recovered',
      notapplied: 'recovered',
      unknown: 'uncertain',
      idem: 'recovered',
    });
    const count = (n: string) => lines(join(scratch, `${n}.log`)).length;
    expect([count('applied'), count('notapplied'), count('unknown'), count('idem')]).toEqual([1, 2, 1, 2]);
    const applied = showJson<{ receipt?: { outputs: Record<string, string> }; condition?: unknown }>(
      bare,
      'refs/nyl/dev/observed:units/applied.json',
    );
    expect(applied.receipt?.outputs).toMatchObject({ k: 'v' });
    expect(applied.condition).toBeUndefined();
    const unknown = showJson<{ condition?: { state: string; reason: string } }>(
      bare,
      'refs/nyl/dev/observed:units/unknown.json',
    );
    expect(unknown.condition).toMatchObject({ state: 'uncertain' });
    // The condition stays for `nyl recover`; the run says what inspect answered.
    const row = parseTable(second.stdout).find((r) => r.UNIT === 'unknown');
    expect(row?.DETAIL).toContain('inspect exited with 1: cannot tell');
  });

  it('a non-retryable failure waits for `nyl recover --retry`; a retryable one runs again', async () => {
    const failing = (d: string, name: string) => `echo x >> '${d}/${name}.log'; [ -f '${d}/ok' ] || exit 3`;
    const { bare, work, scratch } = withRemote((d) => ({
      'nyl.yaml':
        ENV_DEV + command('nr', failing(d, 'nr'), { spec: { retryable: false } }) + command('rf', failing(d, 'rf')),
    }));
    const count = (n: string) => lines(join(scratch, `${n}.log`)).length;
    const first = await nyl(work, ['reconcile', '-e', 'dev']);
    expect(first.code).toBe(1);
    expect(results(first.stdout)).toEqual({ nr: 'failed', rf: 'failed' });

    const second = await nyl(work, ['reconcile', '-e', 'dev']);
    expect(second.code).toBe(1);
    expect(results(second.stdout)).toEqual({ nr: 'failed', rf: 'failed' });
    expect([count('nr'), count('rf')]).toEqual([1, 2]);

    writeFileSync(join(scratch, 'ok'), '');
    const rec = await nyl(work, ['recover', '-e', 'dev', '--unit', 'nr', '--retry', '--reason', 'r']);
    expect(rec.code, rec.stdout + rec.stderr).toBe(0);
    expect(rec.stdout).toMatch(/^recover dev: done/);
    expect(showJson(bare, 'refs/nyl/dev/observed:units/nr.json')).not.toHaveProperty('condition');

    const third = await nyl(work, ['reconcile', '-e', 'dev']);
    expect(third.code, third.stdout + third.stderr).toBe(0);
    expect(results(third.stdout)).toEqual({ nr: 'executed', rf: 'executed' });
    expect([count('nr'), count('rf')]).toEqual([2, 3]);
  });
});

describe('local and online state', () => {
  it('online reconcile refuses to leave --local work behind; --local keeps working', async () => {
    const { bare, work } = withRemote(() => ({ 'nyl.yaml': ENV_DEV + command('a', 'echo a') }));
    const local = await nyl(work, ['reconcile', '-e', 'dev', '--local']);
    expect(local.code, local.stdout + local.stderr).toBe(0);
    expect(refsOf(work, 'refs/nyl/dev/')).toEqual(
      expect.arrayContaining(['refs/nyl/dev/desired', 'refs/nyl/dev/lease', 'refs/nyl/dev/observed']),
    );

    const online = await nyl(work, ['reconcile', '-e', 'dev']);
    expect(online.code, online.stdout + online.stderr).toBe(2);
    expect(online.stderr).toMatch(/^error NYL-LOCAL-UNPUBLISHED/m);
    expect(refsOf(bare)).toEqual([]); // nothing written to the remote

    commitFiles(work, { 'nyl.yaml': ENV_DEV + command('a', 'echo a # v2') });
    const again = await nyl(work, ['reconcile', '-e', 'dev', '--local']);
    expect(again.code, again.stdout + again.stderr).toBe(0);
    expect(results(again.stdout)).toEqual({ a: 'executed' });
    expect(refsOf(bare)).toEqual([]);
  });
});

describe('round trips to the remote', () => {
  it('a no-op reconcile makes 1; a first reconcile of 3 waves at most W + 2 = 5', async () => {
    const { work } = withRemote(() => ({
      'nyl.yaml':
        ENV_DEV +
        command('a', 'echo a') +
        command('b', 'echo b', { needs: ['a'] }) +
        command('c', 'echo c', { needs: ['b'] }),
    }));
    type R = { exit: number; rows: { unit: string; result: string }[]; stats: { remoteRoundTrips: number } };
    const first = await nylJson<R>(work, ['reconcile', '-e', 'dev']);
    expect(first.code, first.stdout + first.stderr).toBe(0);
    expect(first.json.rows.map((r) => r.result)).toEqual(['executed', 'executed', 'executed']);
    expect(first.json.stats.remoteRoundTrips).toBeLessThanOrEqual(5);
    const noop = await nylJson<R>(work, ['reconcile', '-e', 'dev']);
    expect(noop.code).toBe(0);
    expect(noop.json.rows.map((r) => r.result)).toEqual(['current', 'current', 'current']);
    expect(noop.json.stats.remoteRoundTrips).toBe(1);
  });
});

describe('the heartbeat: lease renewal while a run holds it', () => {
  it('renews the lease (and the run record) every interval while units run; moves the deadline only when near', async () => {
    const leaseDocs = (dir: string) =>
      git(dir, 'log', '--format=%H %s', 'refs/nyl/dev/lease')
        .split('\n')
        .filter((l) => l.includes('nyl: renew lease dev'))
        .map(
          (l) =>
            JSON.parse(git(dir, 'show', `${l.split(' ')[0]}:lease.json`)) as {
              renewedAt: string;
              deadline: string;
              heartbeatMs: number;
            },
        );
    const dir = makeRepo({ 'nyl.yaml': `${ENV_DEV}${command('long', 'sleep 2')}` });
    const r = await nyl(dir, ['reconcile', '-e', 'dev', '--local'], { NYL_HEARTBEAT_INTERVAL: '200ms' });
    expect(r.code, r.stderr).toBe(0);
    const subjects = git(dir, 'log', '--format=%s', 'refs/nyl/dev/lease').split('\n');
    // Taken, renewed several times while `sleep 2` ran, released in the transition.
    const renewals = leaseDocs(dir);
    expect(renewals.length).toBeGreaterThanOrEqual(3);
    expect(renewals.every((l) => l.heartbeatMs === 200)).toBe(true);
    // The wave's deadline (30m timeout + 10m grace) is far: renewals keep it.
    expect(new Set(renewals.map((l) => l.deadline)).size).toBe(1);
    expect(new Set(renewals.map((l) => l.renewedAt)).size).toBe(renewals.length);
    expect(subjects[0]).toMatch(/^nyl: release lease dev/);
    expect(subjects[subjects.length - 1]).toMatch(/^nyl: lease dev for reconcile/);
    // Near the deadline (a margin longer than it), each renewal moves it.
    const near = makeRepo({ 'nyl.yaml': `${ENV_DEV}${command('long', 'sleep 2')}` });
    const n = await nyl(near, ['reconcile', '-e', 'dev', '--local'], {
      NYL_HEARTBEAT_INTERVAL: '200ms',
      NYL_TEST_RENEW_MARGIN_MS: String(24 * 3_600_000),
    });
    expect(n.code, n.stderr).toBe(0);
    const moved = leaseDocs(near);
    expect(new Set(moved.map((l) => l.deadline)).size).toBe(moved.length);
    // With the default interval (30 s) a two-second wave takes the lease and releases it, nothing in between.
    const plain = makeRepo({ 'nyl.yaml': `${ENV_DEV}${command('long', 'sleep 2')}` });
    expect((await nyl(plain, ['reconcile', '-e', 'dev', '--local'])).code).toBe(0);
    expect(git(plain, 'rev-list', '--count', 'refs/nyl/dev/lease')).toBe('2');
  });
});
