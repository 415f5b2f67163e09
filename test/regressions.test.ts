import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { CLI, command, commitFiles, ENV_DEV, GIT_ENV, git, makeRepo, nyl, parseTable } from './helpers/repo.js';

/** A work repository whose origin is a fresh bare remote over file://. */
function withRemote(files: Record<string, string>): string {
  const bare = mkdtempSync(join(tmpdir(), 'nyl-remote-'));
  git(bare, 'init', '-q', '--bare');
  const dir = makeRepo(files);
  git(dir, 'remote', 'add', 'origin', `file://${bare}`);
  return dir;
}

const results = (stdout: string) => Object.fromEntries(parseTable(stdout).map((r) => [r.UNIT, r.RESULT]));
const lines = (dir: string, f: string) =>
  existsSync(join(dir, f)) ? readFileSync(join(dir, f), 'utf8').split('\n').length - 1 : 0;
const env = { ...process.env, ...GIT_ENV, NYL_PROGRESS: '0' };

describe('regressions', () => {
  it('a tool that cannot be started is failed, not uncertain; the other units finish and are recorded', async () => {
    const dir = makeRepo({
      'nyl.yaml': ENV_DEV + command('slow', 'sleep 1; echo done >> slow.log') + command('bad', 'echo \u0000 hi'),
    });
    const r = await nyl(dir, ['reconcile', '-e', 'dev', '--local']);
    expect(r.stderr).not.toContain('NYL-INTERNAL');
    expect(r.code).toBe(1);
    expect(results(r.stdout)).toEqual({ bad: 'failed', slow: 'executed' });
    expect(parseTable(r.stdout).find((x) => x.UNIT === 'bad')?.DETAIL).toMatch(
      /^could not be started \(.+\); it made no effect$/,
    );
    // slow's receipt was recorded: the next run does not execute it again.
    commitFiles(dir, {
      'nyl.yaml': ENV_DEV + command('slow', 'sleep 1; echo done >> slow.log') + command('bad', 'echo hi'),
    });
    await nyl(dir, ['recover', '-e', 'dev', '--local', '--unit', 'bad', '--retry', '--reason', 'fixed']);
    const again = await nyl(dir, ['reconcile', '-e', 'dev', '--local']);
    expect(results(again.stdout)).toMatchObject({ slow: 'current', bad: 'executed' });
    expect(lines(dir, 'slow.log')).toBe(1);
  });

  it('imports what a dead run was executing even when an earlier runner’s clock ran ahead', async () => {
    const cfg = (v: string) => ENV_DEV + command('migrate', `echo ${v} >> migrate.log; [ -f block ] && sleep 30; true`);
    const dir = withRemote({ 'nyl.yaml': cfg('v1') });
    // The first run's clock is 30 s ahead: its run id sorts after the next run's.
    const ahead = spawnSync('node', [CLI, 'reconcile', '-e', 'dev'], {
      cwd: dir,
      env: {
        ...env,
        NODE_OPTIONS: `--import ${resolve(__dirname, 'fixtures/skew-clock.mjs')}`,
        NYL_TEST_SKEW_MS: '30000',
      },
    });
    expect(ahead.status, String(ahead.stderr)).toBe(0);
    commitFiles(dir, { 'nyl.yaml': cfg('v2'), block: '' });
    // The next run dies (SIGKILL) while migrate runs; the tool, in its own group, sleeps on.
    const victim = spawn('node', [CLI, 'reconcile', '-e', 'dev'], { cwd: dir, env, stdio: 'ignore' });
    while (lines(dir, 'migrate.log') < 2) await new Promise((r) => setTimeout(r, 50));
    victim.kill('SIGKILL');
    await new Promise((r) => victim.once('exit', r));
    expect((await nyl(dir, ['lease', 'break', '-e', 'dev', '--reason', 'killed'])).code).toBe(0);
    const r = await nyl(dir, ['reconcile', '-e', 'dev']);
    expect(results(r.stdout)).toEqual({ migrate: 'uncertain' });
    expect(r.code).toBe(4);
  }, 90_000);

  it('a unit that left the configuration while uncertain stays uncertain (exit 4), in reconcile and status', async () => {
    const cfg = (withBucket: boolean) =>
      ENV_DEV +
      command('db', 'echo db') +
      (withBucket ? command('bucket', 'echo b >> bucket.log; sleep 30', { needs: ['db'] }) : '');
    const dir = withRemote({ 'nyl.yaml': cfg(true) });
    const victim = spawn('node', [CLI, 'reconcile', '-e', 'dev'], { cwd: dir, env, stdio: 'ignore' });
    while (lines(dir, 'bucket.log') < 1) await new Promise((r) => setTimeout(r, 50));
    victim.kill('SIGKILL');
    await new Promise((r) => victim.once('exit', r));
    commitFiles(dir, { 'nyl.yaml': cfg(false) });
    await nyl(dir, ['lease', 'break', '-e', 'dev', '--reason', 'killed']);
    const r = await nyl(dir, ['reconcile', '-e', 'dev']);
    expect(results(r.stdout)).toMatchObject({ bucket: 'uncertain' });
    expect(r.code).toBe(4);
    const s = await nyl(dir, ['status', '-e', 'dev']);
    expect(s.stdout).toContain('warning NYL-UNIT-UNCERTAIN (bucket)');
    expect(s.code).toBe(4);
  });

  it('after NYL-LEASE-LOST the run ref says it stopped: the next run takes over at once', async () => {
    // w runs until the test has deleted the lease (at most 60 s), not for a fixed time.
    const wait = 'touch started; i=0; while [ ! -f go ] && [ $i -lt 1200 ]; do sleep 0.05; i=$((i + 1)); done';
    const dir = withRemote({ 'nyl.yaml': ENV_DEV + command('w', wait) });
    const first = nyl(dir, ['reconcile', '-e', 'dev']);
    while (!existsSync(join(dir, 'started'))) await new Promise((r) => setTimeout(r, 50));
    git(dir, 'push', '-q', 'origin', ':refs/nyl/dev/lease');
    writeFileSync(join(dir, 'go'), '');
    const lost = await first;
    expect(lost.code).toBe(4);
    expect(lost.stderr).toContain('error NYL-LEASE-LOST');
    const next = await nyl(dir, ['reconcile', '-e', 'dev']);
    expect(next.stderr).not.toContain('NYL-LEASE-HELD');
    // w finished and was checkpointed by the lost run: imported, not run again.
    expect(results(next.stdout)).toEqual({ w: 'imported' });
    expect(next.code).toBe(0);
  });

  it('names a --config path with a space that is not committed', async () => {
    const dir = makeRepo({ 'nyl.yaml': ENV_DEV + command('a', 'true') });
    const r = await nyl(dir, ['plan', '-e', 'dev', '--local', '--config', 'my dir/nyl.yaml']);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain('error NYL-CONFIG-MISSING (my dir/nyl.yaml)');
  });
});
