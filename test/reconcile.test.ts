import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { command, commitFiles, ENV_DEV, git, makeRepo, nyl, nylJson, parseTable } from './helpers/repo.js';

const LOCAL = ['-e', 'dev', '--local'];

/** A zombie (dead, not yet reaped by a PID 1 that does not reap) counts as dead. */
function alive(pid: number): boolean {
  try {
    return !/State:\s+Z/.test(readFileSync(`/proc/${pid}/status`, 'utf8'));
  } catch {
    return false;
  }
}

function refTips(dir: string): string {
  return git(dir, 'for-each-ref', '--format=%(objectname) %(refname)', 'refs/nyl/');
}

function results(stdout: string): Record<string, string> {
  return Object.fromEntries(parseTable(stdout).map((r) => [r.UNIT, r.RESULT ?? r.STATE ?? '']));
}

describe('reconcile', () => {
  it('executes every unit, then finds nothing to do and writes nothing', async () => {
    const dir = makeRepo({
      'nyl.yaml':
        ENV_DEV +
        command('database', 'echo "url=pg://db/$NYL_ENVIRONMENT" >> "$NYL_OUTPUT"; echo ran >> database.log') +
        command('migrate', 'echo "$NYL_UNIT $NYL_RUN $NYL_UID ${{ units.database.outputs.url }}" >> migrate.log'),
    });
    const first = await nyl(dir, ['reconcile', ...LOCAL]);
    expect(first.stderr).toBe('');
    expect(first.code).toBe(0);
    expect(results(first.stdout)).toEqual({ database: 'executed', migrate: 'executed' });
    expect(first.stdout).toMatch(
      /\n\n {2}run: {6}[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}\n/,
    );
    expect(first.stdout).toMatch(
      / {2}source: {3}[0-9a-f]{40}\n {2}desired: {2}[0-9a-f]{40}\n {2}observed: [0-9a-f]{40}\n$/,
    );
    const log = readFileSync(join(dir, 'migrate.log'), 'utf8').trim().split(' ');
    expect(log[0]).toBe('migrate');
    expect(log[3]).toBe('pg://db/dev');
    expect(first.stdout).toContain(log[1] as string); // NYL_RUN is the run shown

    const tips = refTips(dir);
    expect(tips).not.toMatch(/runs\//); // run ref consumed by the transition
    const second = await nyl(dir, ['reconcile', ...LOCAL]);
    expect(second.code).toBe(0);
    expect(results(second.stdout)).toEqual({ database: 'current', migrate: 'current' });
    expect(second.stdout).not.toMatch(/run:/);
    expect(refTips(dir)).toBe(tips); // no lease taken, nothing written
    expect(readFileSync(join(dir, 'database.log'), 'utf8')).toBe('ran\n');
  });

  it('records state readable with plain git: transition message, receipts, lease', async () => {
    const dir = makeRepo({
      'nyl.yaml': ENV_DEV + command('a', 'echo "k=v" >> "$NYL_OUTPUT"', { spec: { idempotent: true } }),
    });
    const r = await nylJson<{ run: string }>(dir, ['reconcile', ...LOCAL]);
    expect(r.code).toBe(0);
    const msg = git(dir, 'log', '-1', '--format=%B', 'refs/nyl/dev/observed');
    expect(msg).toMatch(
      /^nyl: reconcile dev \(1 executed\)\n\nunits:\n {2}a: \{"executionKey":"sha256:[0-9a-f]{64}","result":"executed"\}$/,
    );
    expect(msg.split('\n')).toHaveLength(4); // subject, blank, units:, one unit: nothing else
    const unit = JSON.parse(git(dir, 'show', 'refs/nyl/dev/observed:units/a.json'));
    expect(unit).toMatchObject({
      schema: 'nyl.observed-unit/v1',
      name: 'a',
      receipt: { outputs: { k: 'v' }, run: r.json.run },
    });
    const desired = JSON.parse(git(dir, 'show', 'refs/nyl/dev/desired:units/a.json'));
    expect(desired.executionKey).toBe(unit.receipt.executionKey);
    expect(desired.uid).toBe(unit.uid);
    const lease = JSON.parse(git(dir, 'show', 'refs/nyl/dev/lease:lease.json'));
    expect(lease).toMatchObject({ schema: 'nyl.lease/v1', state: 'released', run: r.json.run, operation: 'reconcile' });
    // lease history: taken, then released in the transition (one wave: no checkpoint write)
    expect(git(dir, 'rev-list', '--count', 'refs/nyl/dev/lease')).toBe('2');
    expect(git(dir, 'fsck', '--strict', '--no-dangling')).toBe('');
  });

  it('re-executes a changed unit and only the consumers whose inputs changed; plan shows it first', async () => {
    const cfg = (dbValue: string, dbComment: string) =>
      ENV_DEV +
      command('db', `echo "url=${dbValue}" >> "$NYL_OUTPUT" # ${dbComment}`) +
      command('app', 'echo "${{ units.db.outputs.url }}" >> app.log') +
      command('docs', 'echo docs >> docs.log', { needs: ['db'] });
    const dir = makeRepo({ 'nyl.yaml': cfg('pg://one', 'v1') });
    expect((await nyl(dir, ['reconcile', ...LOCAL])).code).toBe(0);

    // Same output, different spec: db runs, app's inputs are unchanged, docs only needs db.
    commitFiles(dir, { 'nyl.yaml': cfg('pg://one', 'v2') });
    const before = refTips(dir);
    const p = await nyl(dir, ['plan', ...LOCAL]);
    expect(p.code).toBe(0);
    expect(results(p.stdout)).toEqual({ db: 'execute', app: 'maybe', docs: 'current' });
    expect(refTips(dir)).toBe(before);
    const r1 = await nyl(dir, ['reconcile', ...LOCAL]);
    expect(results(r1.stdout)).toEqual({ db: 'executed', app: 'current', docs: 'current' });
    expect(readFileSync(join(dir, 'app.log'), 'utf8')).toBe('pg://one\n');

    // Changed output: app re-executes with the new value.
    commitFiles(dir, { 'nyl.yaml': cfg('pg://two', 'v2') });
    const r2 = await nyl(dir, ['reconcile', ...LOCAL]);
    expect(results(r2.stdout)).toEqual({ db: 'executed', app: 'executed', docs: 'current' });
    expect(readFileSync(join(dir, 'app.log'), 'utf8')).toBe('pg://one\npg://two\n');
    expect(readFileSync(join(dir, 'docs.log'), 'utf8')).toBe('docs\n');
  });

  it('keeps exit code and last lines of a failure, blocks its dependants, retries next time', async () => {
    const dir = makeRepo({
      'nyl.yaml':
        ENV_DEV +
        command(
          'flaky',
          'if [ -f ok ]; then echo fixed; else for i in 1 2 3 4 5 6 7; do echo "line $i"; done; exit 3; fi',
        ) +
        command('after', 'echo after >> after.log', { needs: ['flaky'] }) +
        command('other', 'echo other'),
    });
    const r = await nyl(dir, ['reconcile', ...LOCAL]);
    expect(r.code).toBe(1);
    const rows = Object.fromEntries(parseTable(r.stdout).map((x) => [x.UNIT, x]));
    expect(rows.flaky?.RESULT).toBe('failed');
    expect(rows.flaky?.DETAIL).toBe('exited with 3: line 3 | line 4 | line 5 | line 6 | line 7');
    expect(rows.after).toMatchObject({ RESULT: 'blocked', DETAIL: 'needs flaky (failed)' });
    expect(rows.other?.RESULT).toBe('executed');
    expect(existsSync(join(dir, 'after.log'))).toBe(false);
    const observed = JSON.parse(git(dir, 'show', 'refs/nyl/dev/observed:units/flaky.json'));
    expect(observed.condition).toMatchObject({ state: 'failed', exitCode: 3, retryable: true });
    expect(observed.receipt).toBeUndefined();

    const s = await nyl(dir, ['status', ...LOCAL]);
    expect(s.code).toBe(1);
    expect(s.stdout).toContain('warning NYL-UNIT-FAILED (flaky)');

    commitFiles(dir, { ok: '' });
    const again = await nyl(dir, ['reconcile', ...LOCAL]);
    expect(again.code).toBe(0);
    expect(results(again.stdout)).toEqual({ flaky: 'executed', other: 'current', after: 'executed' });
  });

  it('kills a unit at its timeout (the whole process group) and leaves it uncertain', async () => {
    const dir = makeRepo({
      'nyl.yaml':
        ENV_DEV +
        command('slow', '(sleep 60; echo survived > survived) & echo $! > child.pid; sleep 60', { timeout: '1s' }) +
        command('later', 'echo later', { needs: ['slow'] }),
    });
    const r = await nyl(dir, ['reconcile', ...LOCAL]);
    expect(r.code).toBe(4);
    expect(results(r.stdout)).toEqual({ slow: 'uncertain', later: 'blocked' });
    expect(r.stdout).toContain('timed out after 1.0s');
    const pid = Number(readFileSync(join(dir, 'child.pid'), 'utf8'));
    expect(alive(pid)).toBe(false); // the background child died with its group

    // Without idempotent the policy is manual: the next run leaves it for `nyl recover`.
    const again = await nyl(dir, ['reconcile', ...LOCAL]);
    expect(again.code).toBe(4);
    expect(results(again.stdout)).toEqual({ slow: 'uncertain', later: 'blocked' });
    const s = await nyl(dir, ['status', ...LOCAL]);
    expect(s.code).toBe(4);
    const row = parseTable(s.stdout)[0];
    expect(row).toMatchObject({ UNIT: 'slow', STATE: 'uncertain', RECEIPT: 'none' });
    expect(s.stdout).toMatch(
      /warning NYL-UNIT-UNCERTAIN \(slow\)\n {2}unit slow is uncertain: timed out after 1\.0s; its effects are unknown\n {2}fix: check what the execution did; .* `nyl recover -e dev --unit slow --retry --reason <text> --local`/,
    );
  });

  it('converges an uncertain idempotent unit in the next run (result recovered)', async () => {
    const body = (sleep: string) =>
      ENV_DEV + command('job', `sleep ${sleep}; echo done >> job.log`, { timeout: '1s', spec: { idempotent: true } });
    const dir = makeRepo({ 'nyl.yaml': body('$(cat delay 2>/dev/null || echo 30)') });
    const r = await nyl(dir, ['reconcile', ...LOCAL]);
    expect(r.code).toBe(4);
    commitFiles(dir, { delay: '0\n' });
    const again = await nyl(dir, ['reconcile', ...LOCAL]);
    expect(again.code).toBe(0);
    expect(results(again.stdout)).toEqual({ job: 'recovered' });
    expect(git(dir, 'log', '-1', '--format=%B', 'refs/nyl/dev/observed')).toContain('recovered: [job]');
  });

  it('runs the units of a wave in parallel, up to --parallelism', async () => {
    const unit = (n: string) => command(n, `date +%s%N > ${n}.start; sleep 0.5; date +%s%N > ${n}.end`);
    const dir = makeRepo({ 'nyl.yaml': ENV_DEV + unit('a') + unit('b') });
    expect((await nyl(dir, ['reconcile', ...LOCAL])).code).toBe(0);
    const t = (f: string) => BigInt(readFileSync(join(dir, f), 'utf8').trim());
    const overlap = t('a.start') < t('b.end') && t('b.start') < t('a.end');
    expect(overlap).toBe(true);

    const serial = makeRepo({ 'nyl.yaml': ENV_DEV + unit('a') + unit('b') });
    expect((await nyl(serial, ['reconcile', ...LOCAL, '--parallelism', '1'])).code).toBe(0);
    const s = (f: string) => BigInt(readFileSync(join(serial, f), 'utf8').trim());
    expect(s('a.end') <= s('b.start') || s('b.end') <= s('a.start')).toBe(true);
  });

  it('refuses while another run holds the lease (NYL-LEASE-HELD, exit 2)', async () => {
    const dir = makeRepo({
      'nyl.yaml': ENV_DEV + command('wait', 'touch started; while [ ! -f release ]; do sleep 0.05; done'),
    });
    const first = nyl(dir, ['reconcile', ...LOCAL]);
    while (!existsSync(join(dir, 'started'))) await new Promise((r) => setTimeout(r, 50));
    const second = await nyl(dir, ['reconcile', ...LOCAL]);
    expect(second.code).toBe(2);
    expect(second.stderr).toMatch(
      /^error NYL-LEASE-HELD\n {2}dev is held by run [0-9a-f-]{36} \(reconcile\) by \S+@\S+, until \d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{9}\+00:00\n {2}fix: wait for that run to finish, pass --wait-lease <duration>, or run `nyl lease break` if its runner is gone\n$/,
    );
    // Deleting the lease ref alone does not let a run in: the run ref holds the environment.
    git(dir, 'update-ref', '-d', 'refs/nyl/dev/lease');
    const third = await nyl(dir, ['reconcile', ...LOCAL]);
    expect(third.code).toBe(2);
    expect(third.stderr).toContain('error NYL-LEASE-HELD');
    git(dir, 'commit', '--allow-empty', '-qm', 'noop'); // unrelated commit while it runs
    writeFileSync(join(dir, 'release'), '');
    const done = await first;
    expect(done.code).toBe(4); // its lease was deleted under it: NYL-LEASE-LOST
    expect(done.stderr).toContain('error NYL-LEASE-LOST');
  });

  it('lets exactly one of several racing runners take the lease', async () => {
    const dir = makeRepo({ 'nyl.yaml': ENV_DEV + command('once', 'echo x >> once.log; sleep 0.3') });
    const runs = await Promise.all([1, 2, 3, 4].map(() => nyl(dir, ['reconcile', ...LOCAL])));
    const codes = runs.map((r) => r.code).sort();
    expect(codes.filter((c) => c === 0).length).toBeGreaterThanOrEqual(1);
    for (const r of runs) if (r.code !== 0) expect(r.stderr).toContain('NYL-LEASE-HELD');
    expect(readFileSync(join(dir, 'once.log'), 'utf8')).toBe('x\n');
  });
});
