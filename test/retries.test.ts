import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { retryDelayMs, shouldRetry } from '../src/core/ops/reconcile/retry.js';
import {
  command,
  commitFiles,
  ENV_DEV,
  git,
  makeRepo,
  nyl,
  parseTable,
  sleep,
  startNyl,
  waitForFile,
} from './helpers/repo.js';

/**
 * Retries inside a run (`retries: {limit, backoff}`), with real processes: every unit counts its
 * executions in count-<unit> in the repository, and fails (or hangs) until its count reaches a
 * number the test chose.
 */

const LOCAL = ['-e', 'dev', '--local'];

/** A script that counts its executions and succeeds from the `okFrom`-th one on. */
const countThen = (unit: string, okFrom: number, failing = 'echo "try $n"; exit 1') =>
  `n=$(cat count-${unit} 2>/dev/null || echo 0); n=$((n+1)); echo $n > count-${unit}; if [ $n -lt ${okFrom} ]; then ${failing}; fi; echo "done $n"`;

const count = (dir: string, unit: string) =>
  existsSync(join(dir, `count-${unit}`)) ? Number(readFileSync(join(dir, `count-${unit}`), 'utf8')) : 0;

const observed = (dir: string, unit: string) =>
  JSON.parse(git(dir, 'show', `refs/nyl/dev/observed:units/${unit}.json`)) as {
    receipt?: { attempts?: number };
    condition?: { state: string; attempts?: number; reason: string };
  };

const rows = (stdout: string) => Object.fromEntries(parseTable(stdout).map((r) => [r.UNIT, r]));

function repo(units: string): string {
  return makeRepo({ 'nyl.yaml': ENV_DEV + units, '.gitignore': 'count-*\nstarted-*\n' });
}

/** The tree of the live run ref, once one holds `file` (a unit's checkpoint, say). */
async function waitForRunFile(dir: string, file: string): Promise<string> {
  for (let i = 0; i < 600; i++) {
    for (const ref of git(dir, 'for-each-ref', '--format=%(refname)', 'refs/nyl/dev/runs/').split('\n').filter(Boolean))
      if (git(dir, 'ls-tree', '-r', '--name-only', ref).split('\n').includes(file)) return ref;
    await sleep(50);
  }
  throw new Error(`no run ref came to hold ${file}`);
}

describe('the retry policy', () => {
  it('doubles the backoff after each failed attempt, at most 5m', () => {
    const p = { limit: 10, backoffMs: 10_000 };
    expect([1, 2, 3, 4, 5, 6].map((n) => retryDelayMs(p, n))).toEqual([
      10_000, 20_000, 40_000, 80_000, 160_000, 300_000,
    ]);
    expect(retryDelayMs(p, 10)).toBe(300_000);
  });

  it('retries retryable failures within the limit, uncertain results only when the policy converges', () => {
    const p = { limit: 2, backoffMs: 100 };
    const failed = { status: 'failed' as const, reason: 'x', retryable: true, log: '', durationMs: 0 };
    const uncertain = { status: 'uncertain' as const, reason: 'timed out', log: '', durationMs: 0 };
    expect(shouldRetry(p, 1, failed, 'manual', false)).toBe(true);
    expect(shouldRetry(p, 2, failed, 'manual', false)).toBe(true);
    expect(shouldRetry(p, 3, failed, 'manual', false)).toBe(false);
    expect(shouldRetry(p, 1, { ...failed, retryable: false }, 'converge', false)).toBe(false);
    expect(shouldRetry(p, 1, failed, 'manual', true)).toBe(false);
    expect(shouldRetry(p, 1, uncertain, 'manual', false)).toBe(false);
    expect(shouldRetry(p, 1, uncertain, 'inspect', false)).toBe(false);
    expect(shouldRetry(p, 1, uncertain, 'converge', false)).toBe(true);
  });
});

describe('retries inside a run', () => {
  it('a unit that fails twice succeeds on its third attempt; its receipt names it', async () => {
    const dir = repo(command('a', countThen('a', 3), { retries: { limit: 3, backoff: '100ms' } }));
    const r = await nyl(dir, ['reconcile', ...LOCAL], { NYL_PROGRESS: '1' });
    expect(r.code, r.stdout + r.stderr).toBe(0);
    expect(rows(r.stdout).a).toMatchObject({ RESULT: 'executed', DETAIL: 'succeeded on attempt 3 of 4' });
    expect(count(dir, 'a')).toBe(3);
    expect(observed(dir, 'a').receipt?.attempts).toBe(3);
    // The live progress says each retry is scheduled.
    expect(r.stderr).toContain('nyl: a failed (exited with 1: try 1); retrying in 100ms: attempt 2 of 4');
    expect(r.stderr).toContain('nyl: a failed (exited with 1: try 2); retrying in 200ms: attempt 3 of 4');
    // Done: the next reconcile has nothing to run.
    const again = await nyl(dir, ['reconcile', ...LOCAL]);
    expect(rows(again.stdout).a?.RESULT).toBe('current');
    expect(count(dir, 'a')).toBe(3);
  });

  it('a unit that exhausts its limit fails naming its attempts; a non-retryable failure runs once', async () => {
    const dir = repo(
      command('a', countThen('a', 99), { retries: { limit: 2, backoff: '100ms' } }) +
        command('n', countThen('n', 99), { retries: { limit: 2, backoff: '100ms' }, spec: { retryable: false } }),
    );
    const r = await nyl(dir, ['reconcile', ...LOCAL]);
    expect(r.code, r.stdout + r.stderr).toBe(1);
    expect(rows(r.stdout).a).toMatchObject({ RESULT: 'failed', DETAIL: 'failed 3 times: exited with 1: try 3' });
    expect(count(dir, 'a')).toBe(3);
    expect(observed(dir, 'a').condition).toMatchObject({ state: 'failed', attempts: 3 });
    expect(rows(r.stdout).n).toMatchObject({ RESULT: 'failed', DETAIL: 'exited with 1: try 1' });
    expect(count(dir, 'n')).toBe(1);
    expect(observed(dir, 'n').condition).toMatchObject({ state: 'failed', attempts: 1 });
    // A later reconcile starts with a fresh budget: three more attempts.
    const later = await nyl(dir, ['reconcile', ...LOCAL]);
    expect(rows(later.stdout).a?.DETAIL).toBe('failed 3 times: exited with 1: try 6');
    expect(count(dir, 'a')).toBe(6);
  });

  it('a timeout stays uncertain and is not retried, unless the recovery policy converges', async () => {
    const hang = 'sleep 30';
    const dir = repo(
      command('slow', countThen('slow', 99, hang), { timeout: '1s', retries: { limit: 2, backoff: '100ms' } }) +
        command('idem', countThen('idem', 3, hang), {
          timeout: '1s',
          retries: { limit: 2, backoff: '100ms' },
          spec: { idempotent: true },
        }),
    );
    const r = await nyl(dir, ['reconcile', ...LOCAL]);
    expect(r.code, r.stdout + r.stderr).toBe(4);
    expect(rows(r.stdout).slow).toMatchObject({ RESULT: 'uncertain', DETAIL: expect.stringContaining('timed out') });
    expect(count(dir, 'slow')).toBe(1);
    expect(observed(dir, 'slow').condition).toMatchObject({ state: 'uncertain', attempts: 1 });
    expect(rows(r.stdout).idem).toMatchObject({ RESULT: 'executed', DETAIL: 'succeeded on attempt 3 of 3' });
    expect(count(dir, 'idem')).toBe(3);
  });

  it('a run SIGKILLed while waiting is imported as failed after its attempts; the next reconcile has a fresh budget', async () => {
    const dir = repo(command('a', countThen('a', 4), { retries: { limit: 2, backoff: '1m' } }));
    const killed = startNyl(dir, ['reconcile', ...LOCAL]);
    // The failed attempt is checkpointed before the wait.
    const ref = await waitForRunFile(dir, 'units/a/checkpoint.json');
    killed.child.kill('SIGKILL');
    await killed.done;
    expect(JSON.parse(git(dir, 'show', `${ref}:units/a/checkpoint.json`))).toMatchObject({
      result: 'failed',
      attempts: 1,
    });
    expect((await nyl(dir, ['lease', 'break', ...LOCAL, '--reason', 'runner died'])).code).toBe(0);
    const imported = await nyl(dir, ['recover', ...LOCAL, '--reason', 'import it']);
    expect(imported.code, imported.stdout + imported.stderr).toBe(0);
    expect(observed(dir, 'a').condition).toMatchObject({ state: 'failed', attempts: 1 });
    expect(count(dir, 'a')).toBe(1);
    // Three attempts again (two would not reach the fourth execution that succeeds).
    commitFiles(dir, {
      'nyl.yaml': ENV_DEV + command('a', countThen('a', 4), { retries: { limit: 2, backoff: '100ms' } }),
    });
    const next = await nyl(dir, ['reconcile', ...LOCAL]);
    expect(next.code, next.stdout + next.stderr).toBe(0);
    expect(rows(next.stdout).a).toMatchObject({ RESULT: 'executed', DETAIL: 'succeeded on attempt 3 of 3' });
    expect(count(dir, 'a')).toBe(4);
  });

  it('a run SIGKILLed during a retry leaves the unit uncertain at that attempt', async () => {
    const hangSecond = 'if [ $n -eq 2 ]; then touch started-2; sleep 60; fi; exit 1';
    const dir = repo(command('a', countThen('a', 99, hangSecond), { retries: { limit: 3, backoff: '100ms' } }));
    const killed = startNyl(dir, ['reconcile', ...LOCAL]);
    await waitForFile(join(dir, 'started-2'));
    killed.child.kill('SIGKILL');
    await killed.done;
    expect((await nyl(dir, ['lease', 'break', ...LOCAL, '--reason', 'runner died'])).code).toBe(0);
    const imported = await nyl(dir, ['recover', ...LOCAL, '--reason', 'import it']);
    expect(imported.code, imported.stdout + imported.stderr).toBe(0);
    const c = observed(dir, 'a').condition;
    expect(c).toMatchObject({ state: 'uncertain', attempts: 2 });
    expect(c?.reason).toMatch(/^run \S+ was executing it \(attempt 2\) when its lease was broken$/);
    expect(count(dir, 'a')).toBe(2);
  });

  it('a cancel during the wait ends the run at once, cancelled, with no new attempt', { timeout: 60_000 }, async () => {
    const dir = repo(command('a', countThen('a', 99), { retries: { limit: 3, backoff: '5m' } }));
    const run = startNyl(dir, ['reconcile', ...LOCAL]);
    await waitForRunFile(dir, 'units/a/checkpoint.json');
    run.child.kill('SIGINT');
    const r = await run.done;
    expect(r.code, r.stdout + r.stderr).toBe(4);
    expect(r.stdout).toContain('error NYL-RUN-CANCELLED (dev)');
    expect(rows(r.stdout).a).toMatchObject({ RESULT: 'failed', DETAIL: 'exited with 1: try 1' });
    expect(count(dir, 'a')).toBe(1);
    // The cancelled run's ref keeps the failure; the next reconcile imports it and runs again.
    const ref = git(dir, 'for-each-ref', '--format=%(refname)', 'refs/nyl/dev/runs/');
    expect(JSON.parse(git(dir, 'show', `${ref}:run.json`)).state).toBe('cancelled');
    expect(JSON.parse(git(dir, 'show', `${ref}:units/a/checkpoint.json`))).toMatchObject({ attempts: 1 });
  });
});
