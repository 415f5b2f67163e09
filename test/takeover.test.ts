import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
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

/** Runs nyl until it kills itself at a crash point (NYL_TEST_CRASH_AT). */
function crashAt(dir: string, point: string): void {
  const r = spawnSync('node', [CLI, 'reconcile', '-e', 'dev'], {
    cwd: dir,
    env: { ...process.env, ...GIT_ENV, NYL_PROGRESS: '0', NYL_TEST_CRASH_AT: point },
  });
  expect(r.signal).toBe('SIGKILL');
}

const count = (dir: string, unit: string) => readFileSync(join(dir, `exec-${unit}.log`), 'utf8').split('\n').length - 1;

describe('takeover of a checkpoint with another execution key (NYL-RUN-SUPERSEDED)', () => {
  const cfg = (version: string) =>
    ENV_DEV +
    command('a', `echo ${version} >> exec-a.log; echo "v=${version}" >> "$NYL_OUTPUT"`, {
      spec: { idempotent: true },
    }) +
    command('m', `echo ${version} >> exec-m.log`) +
    command('z', 'echo z >> exec-z.log', { needs: ['a', 'm'] });

  it('marks a unit uncertain when the dead run applied a document that is no longer desired, then converges it', async () => {
    const dir = withRemote({ 'nyl.yaml': cfg('v1') });
    // The dead run checkpointed a and m (wave 1) and died before landing anything.
    crashAt(dir, 'after-checkpoint');
    expect(count(dir, 'a')).toBe(1);
    commitFiles(dir, { 'nyl.yaml': cfg('v2') });
    expect((await nyl(dir, ['lease', 'break', '-e', 'dev', '--reason', 'runner was killed'])).code).toBe(0);

    const r = await nyl(dir, ['reconcile', '-e', 'dev']);
    const rows = Object.fromEntries(parseTable(r.stdout).map((x) => [x.UNIT, x]));
    // a: its checkpoint recorded effects of v1, so it was uncertain; converge ran v2 in the same run.
    expect(r.stdout).toContain('warning NYL-RUN-SUPERSEDED (a)');
    expect(r.stdout).toContain('warning NYL-RUN-SUPERSEDED (m)');
    expect(rows.a?.RESULT).toBe('recovered');
    // m is manual: uncertain until an operator decides. z was recorded as starting (the run died
    // right after the write that records wave 2): nothing says it did not run, so it is uncertain too.
    expect(rows.m).toMatchObject({
      RESULT: 'uncertain',
      DETAIL: expect.stringContaining('superseded desired document'),
    });
    expect(rows.z).toMatchObject({
      RESULT: 'uncertain',
      DETAIL: expect.stringContaining('was executing it when its lease was broken'),
    });
    expect(r.code).toBe(4);
    expect(count(dir, 'a')).toBe(2); // v1 by the dead run, v2 by the takeover
    expect(count(dir, 'm')).toBe(1); // never guessed: not run again

    // The dead run's ref is kept as evidence while m names it.
    expect(git(dir, 'ls-remote', 'origin', 'refs/nyl/dev/*')).toMatch(/refs\/nyl\/dev\/evidence\//);
    const accept = await nyl(dir, [
      'recover',
      '-e',
      'dev',
      '--unit',
      'm',
      '--accept',
      rows.m?.DETAIL.match(/run (\S+)/)?.[1] ?? '',
      '--reason',
      'x',
    ]);
    // Its checkpoint is of v1: not adoptable for the v2 document.
    expect(accept.code).toBe(2);
    expect(accept.stderr).toContain('error NYL-RECOVER-NO-EVIDENCE (m)');
    expect(accept.stderr).toContain('is not the desired');
    expect(
      (await nyl(dir, ['recover', '-e', 'dev', '--unit', 'm', '--retry', '--reason', 'v1 is harmless'])).code,
    ).toBe(0);
    expect(
      (await nyl(dir, ['recover', '-e', 'dev', '--unit', 'z', '--retry', '--reason', 'z never started'])).code,
    ).toBe(0);
    const last = await nyl(dir, ['reconcile', '-e', 'dev']);
    expect(last.code, last.stdout + last.stderr).toBe(0);
    expect(Object.fromEntries(parseTable(last.stdout).map((x) => [x.UNIT, x.RESULT]))).toEqual({
      a: 'current',
      m: 'executed',
      z: 'executed',
    });
    // Nothing is left behind: evidence consumed once no uncertain unit needs it.
    expect(git(dir, 'ls-remote', 'origin', 'refs/nyl/dev/*')).not.toMatch(/evidence|runs/);
  });
});
