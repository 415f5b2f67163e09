/**
 * Runners' clocks disagree. A deadline is written by the holder's clock and read by the taker's:
 * a lease is taken over only once the taker has seen it unchanged for two heartbeat intervals on
 * its own monotonic clock, so a clock hours off on either side never takes a live lease, and the
 * times that cannot be right are named (NYL-CLOCK-SKEW). Clocks are shifted with
 * test/fixtures/skew-clock.mjs; the heartbeat is shortened with NYL_HEARTBEAT_INTERVAL.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { command, ENV_DEV, git, makeRepo, nyl, parseTable, startNyl, tempDir, waitForFile } from './helpers/repo.js';

const HOURS_2 = 2 * 3_600_000;
const skewed = (ms: number) => ({
  NODE_OPTIONS: `--import ${resolve(__dirname, 'fixtures/skew-clock.mjs')}`,
  NYL_TEST_SKEW_MS: String(ms),
});
const BEAT = { NYL_HEARTBEAT_INTERVAL: '400ms' };

/** A repository with a file:// remote and a unit that runs until its gate file exists. */
function setup() {
  const bare = join(tempDir('nyl-skew-'), 'r.git');
  execFileSync('git', ['init', '--bare', '-q', bare]);
  const gate = join(tempDir('nyl-gate-'), 'open');
  const log = join(tempDir('nyl-log-'), 'runs');
  const dir = makeRepo({
    'nyl.yaml':
      ENV_DEV +
      command('deploy', `echo run >> ${log}; touch ${gate}.started; while [ ! -f ${gate} ]; do sleep 0.05; done`),
  });
  git(dir, 'remote', 'add', 'origin', `file://${bare}`);
  return {
    dir,
    gate,
    runs: () => (existsSync(log) ? readFileSync(log, 'utf8').split('\n').filter(Boolean).length : 0),
  };
}

describe('a live holder is never taken over, whatever the clocks say', () => {
  it.each([
    [
      'the holder’s clock is 2 hours behind',
      -HOURS_2,
      0,
      /renewed its lease although its deadline .* had passed by this machine's clock/,
    ],
    [
      'the taker’s clock is 2 hours ahead',
      0,
      HOURS_2,
      /renewed its lease although its deadline .* had passed by this machine's clock/,
    ],
    [
      'the holder’s clock is 2 hours ahead',
      HOURS_2,
      0,
      /the lease of run \S+ was renewed at .* by its holder's clock, 7\d{3}s ahead of this machine's clock/,
    ],
  ])(
    '%s: NYL-LEASE-HELD with NYL-CLOCK-SKEW naming both times; the unit runs once',
    async (_what, holderSkew, takerSkew, skewText) => {
      const s = setup();
      const holder = startNyl(s.dir, ['reconcile', '-e', 'dev'], { ...BEAT, ...skewed(holderSkew) });
      await waitForFile(`${s.gate}.started`);
      const taker = await nyl(s.dir, ['reconcile', '-e', 'dev'], { ...BEAT, ...skewed(takerSkew) });
      writeFileSync(s.gate, '');
      const held = await holder.done;
      expect(held.code, held.stderr).toBe(0);
      expect(taker.code, taker.stderr + taker.stdout).toBe(2);
      expect(taker.stderr).toMatch(/^error NYL-LEASE-HELD\n/);
      expect(taker.stderr).toMatch(/\nwarning NYL-CLOCK-SKEW \(dev\)\n/);
      expect(taker.stderr).toMatch(skewText);
      expect(s.runs()).toBe(1);
      // The holder's transition landed: its lease was never taken.
      expect(git(s.dir, 'log', '-1', '--format=%s', 'refs/nyl-remotes/origin/nyl/dev/observed')).toBe(
        'nyl: reconcile dev (1 executed)',
      );
    },
  );
});

describe('a dead holder whose deadline passed', () => {
  it('is taken over after two silent heartbeat intervals, not before', async () => {
    const s = setup();
    // Its clock 2 hours behind: the deadline it writes is long past by every other clock.
    const holder = startNyl(s.dir, ['reconcile', '-e', 'dev'], { ...BEAT, ...skewed(-HOURS_2) });
    await waitForFile(`${s.gate}.started`);
    holder.child.kill('SIGKILL');
    await holder.done;
    const t0 = Date.now();
    const taker = await nyl(s.dir, ['reconcile', '-e', 'dev']);
    expect(taker.code, taker.stderr).toBe(4);
    expect(Date.now() - t0).toBeGreaterThanOrEqual(800);
    const rows = Object.fromEntries(parseTable(taker.stdout).map((r) => [r.UNIT, r.RESULT]));
    expect(rows).toEqual({ deploy: 'uncertain' });
    expect(taker.stdout).toMatch(/when it stopped \(its deadline .* passed\)/);
    expect(s.runs()).toBe(1);
  });
});
