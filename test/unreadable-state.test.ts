/**
 * State nyl cannot read — a ref that points at a blob or a tree, a document that is not JSON, is
 * `null` or an array, has a schema this nyl does not know, or a lease whose state is unknown — is
 * never read as empty and never executed on: NYL-STATE-UNREADABLE (<ref>:<file>), exit 1, nothing
 * written over it; `status` shows every readable unit next to it; `nyl lease break` and
 * `nyl state forget` are the ways out; the fixes printed work when pasted.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { command, commitFiles, copyDir, ENV_DEV, GIT_ENV, makeRepo, nyl, parseTable, tempDir } from './helpers/repo.js';

const LOCAL = ['-e', 'dev', '--local'];

interface Env {
  dir: string;
}

/**
 * db → app (app reads db's output), and other; each unit writes one line per execution into
 * .marks/ (ignored by git) in the repository, where units run.
 */
function environment(): Env {
  const mark = (u: string) => `mkdir -p .marks; echo run >> .marks/${u}`;
  const dir = makeRepo({
    '.gitignore': '.marks/\n',
    'nyl.yaml':
      ENV_DEV +
      command('db', `${mark('db')}; echo url=db1 >> "$NYL_OUTPUT"`) +
      command('app', `${mark('app')}; echo "\${{ units.db.outputs.url }}" > /dev/null`) +
      command('other', mark('other')),
  });
  return { dir };
}

/** The environment after its first `reconcile --local` (every unit ran once): made once, copied per test. */
let reconciledOnce: Promise<Env> | undefined;
async function reconciled(): Promise<Env> {
  reconciledOnce ??= (async () => {
    const e = environment();
    expect((await nyl(e.dir, ['reconcile', ...LOCAL])).code).toBe(0);
    return e;
  })();
  return { dir: copyDir((await reconciledOnce).dir) };
}

function runs(e: Env, unit: string): number {
  const f = join(e.dir, '.marks', unit);
  return existsSync(f) ? readFileSync(f, 'utf8').split('\n').filter(Boolean).length : 0;
}

function gitIn(dir: string, args: string[], input?: string): string {
  return execFileSync('git', args, { cwd: dir, env: { ...process.env, ...GIT_ENV }, encoding: 'utf8', input }).trim();
}

/** Commits on top of `ref` a tree where `path` holds `content` (or points `ref` at what `make` returns). */
function corrupt(dir: string, ref: string, path: string, content: string): string {
  const tip = gitIn(dir, ['rev-parse', ref]);
  const blob = gitIn(dir, ['hash-object', '-w', '--stdin'], content);
  const index = join(tempDir('nyl-index-'), 'index');
  const env = { ...process.env, ...GIT_ENV, GIT_INDEX_FILE: index };
  execFileSync('git', ['read-tree', tip], { cwd: dir, env });
  execFileSync('git', ['update-index', '--add', '--cacheinfo', `100644,${blob},${path}`], { cwd: dir, env });
  const tree = execFileSync('git', ['write-tree'], { cwd: dir, env, encoding: 'utf8' }).trim();
  const commit = gitIn(dir, ['commit-tree', tree, '-p', tip, '-m', 'corrupted by a test']);
  gitIn(dir, ['update-ref', ref, commit]);
  return commit;
}

function tipOf(dir: string, ref: string): string {
  return gitIn(dir, ['rev-parse', ref]);
}

function rows(stdout: string): Record<string, string> {
  return Object.fromEntries(parseTable(stdout).map((r) => [r.UNIT, r.STATE ?? r.RESULT ?? '']));
}

/** Refused with NYL-STATE-UNREADABLE naming `subject` and `cause`; exited at once; nothing written. */
async function expectRefused(e: Env, args: string[], subject: string, cause: string | RegExp) {
  const before = gitIn(e.dir, ['for-each-ref', 'refs/nyl/']);
  const r = await nyl(e.dir, args);
  expect(r.code, `${args.join(' ')}: ${r.stdout}${r.stderr}`).toBe(1);
  expect(r.stderr).toContain(`error NYL-STATE-UNREADABLE (${subject})`);
  if (typeof cause === 'string') expect(r.stderr).toContain(`cannot be read: ${cause}`);
  else expect(r.stderr).toMatch(cause);
  expect(r.stderr).toContain('nothing was executed and nothing was written over it');
  expect(r.stderr).toMatch(/\n {2}fix: /);
  expect(r.stderr).not.toMatch(/NYL-INTERNAL|\n\s+at /);
  expect(r.lingerMs, 'exits within a second of printing').toBeLessThan(1000);
  expect(gitIn(e.dir, ['for-each-ref', 'refs/nyl/'])).toBe(before);
  return r;
}

describe('an unreadable unit document', () => {
  it.each([
    ['not JSON', '{"schema": "nyl.observed-unit/v1", bad', /cannot be read: invalid JSON: .+/],
    ['null', 'null', 'not a JSON object (null)'],
    ['an array', '[1, 2]', 'not a JSON object (an array)'],
    [
      'a newer schema',
      '{"schema": "nyl.observed-unit/v9", "name": "db"}',
      'unknown schema nyl.observed-unit/v9: written by a newer nyl; upgrade',
    ],
    [
      'a wrong shape',
      '{"schema": "nyl.observed-unit/v1", "name": "db", "kind": "Command", "uid": 7, "lastRun": "x"}',
      /cannot be read: uid: /,
    ],
  ])(
    '(%s) is never read as empty: status shows the rest, every writer refuses, state forget is the way out',
    async (_what, text, cause) => {
      const e = await reconciled();
      corrupt(e.dir, 'refs/nyl/dev/observed', 'units/db.json', text);
      const subject = 'refs/nyl/dev/observed:units/db.json';

      const st = await nyl(e.dir, ['status', ...LOCAL]);
      expect(st.code).toBe(1);
      expect(rows(st.stdout)).toEqual({ db: 'unreadable', app: 'unreadable', other: 'current' });
      expect(st.stderr + st.stdout).toContain(`error NYL-STATE-UNREADABLE (${subject})`);

      // A change that would execute `other` and `db` again: nothing runs while db's state is unreadable.
      commitFiles(e.dir, { 'nyl.yaml': `${readFileSync(join(e.dir, 'nyl.yaml'), 'utf8')}# changed\n` });
      const r = await expectRefused(e, ['reconcile', ...LOCAL], subject, cause);
      expect(r.stderr).toContain(`nyl state forget -e dev --unit db --reason <text> --local`);
      for (const cmd of [['plan'], ['verify'], ['hold', '--unit', 'other', '--reason', 'x'], ['teardown']])
        await expectRefused(e, [...cmd, ...LOCAL], subject, cause);
      expect({ db: runs(e, 'db'), app: runs(e, 'app'), other: runs(e, 'other') }).toEqual({ db: 1, app: 1, other: 1 });

      const forget = await nyl(e.dir, ['state', 'forget', ...LOCAL, '--unit', 'db', '--reason', 'garbage']);
      expect(forget.code, forget.stderr).toBe(0);
      expect(gitIn(e.dir, ['log', '-1', '--format=%B', 'refs/nyl/dev/observed'])).toMatch(/forgot: \{"unreadable":/);
      const again = await nyl(e.dir, ['reconcile', ...LOCAL]);
      expect(again.code, again.stderr).toBe(0);
      expect(runs(e, 'db')).toBe(2);
    },
  );
});

describe('an unreadable lease', () => {
  it.each([
    ['a newer schema', '{"schema": "nyl.lease/v2"}', 'unknown schema nyl.lease/v2: written by a newer nyl; upgrade'],
    ['an unknown state', null, /cannot be read: state: Invalid option/],
  ])(
    '(%s): writers refuse, status reports, lease break replaces it and records what it replaced',
    async (_what, text, cause) => {
      const e = await reconciled();
      const lease = JSON.parse(gitIn(e.dir, ['show', 'refs/nyl/dev/lease:lease.json'])) as Record<string, unknown>;
      const bad = text ?? JSON.stringify({ ...lease, state: 'stolen' });
      const tip = corrupt(e.dir, 'refs/nyl/dev/lease', 'lease.json', bad);
      const subject = 'refs/nyl/dev/lease:lease.json';
      commitFiles(e.dir, { 'nyl.yaml': `${readFileSync(join(e.dir, 'nyl.yaml'), 'utf8')}# changed\n` });
      await expectRefused(e, ['reconcile', ...LOCAL], subject, cause);
      await expectRefused(e, ['recover', ...LOCAL, '--reason', 'x'], subject, cause);
      const st = await nyl(e.dir, ['status', ...LOCAL]);
      expect(st.code).toBe(1);
      expect(rows(st.stdout)).toEqual({ db: 'current', app: 'current', other: 'current' });

      const b = await nyl(e.dir, ['lease', 'break', ...LOCAL, '--reason', 'lease from the future']);
      expect(b.code, b.stderr).toBe(0);
      expect(b.stdout).toContain(`replaced: ["${subject} (`);
      const broken = JSON.parse(gitIn(e.dir, ['show', 'refs/nyl/dev/lease:lease.json'])) as {
        state: string;
        broken: { replaced: { ref: string; tip: string }[] };
      };
      expect(broken.state).toBe('broken');
      expect(broken.broken.replaced).toEqual([expect.objectContaining({ ref: subject, tip })]);
      const r = await nyl(e.dir, ['reconcile', ...LOCAL]);
      expect(r.code, r.stderr).toBe(0);
      expect(gitIn(e.dir, ['log', '-1', '--format=%B', 'refs/nyl/dev/observed'])).toMatch(
        /leaseBroken: \{.*"replaced":\[\{.*"ref":"refs\/nyl\/dev\/lease:lease.json"/,
      );
    },
  );
});

describe('refs that point at the wrong kind of object', () => {
  it('an observed ref at a tree, a lease ref at a blob: "not a commit"', async () => {
    const e = await reconciled();
    const observed = tipOf(e.dir, 'refs/nyl/dev/observed');
    gitIn(e.dir, ['update-ref', 'refs/nyl/dev/observed', `${observed}^{tree}`]);
    await expectRefused(e, ['reconcile', ...LOCAL], 'refs/nyl/dev/observed', 'points at a tree, not a commit');
    const st = await nyl(e.dir, ['status', ...LOCAL]);
    expect(st.code).toBe(1);
    expect(new Set(Object.values(rows(st.stdout)))).toEqual(new Set(['unreadable']));
    gitIn(e.dir, ['update-ref', 'refs/nyl/dev/observed', observed]);

    const blob = gitIn(e.dir, ['hash-object', '-w', '--stdin'], 'not a lease');
    gitIn(e.dir, ['update-ref', 'refs/nyl/dev/lease', blob]);
    await expectRefused(e, ['reconcile', ...LOCAL], 'refs/nyl/dev/lease', 'points at a blob, not a commit');
    expect((await nyl(e.dir, ['lease', 'break', ...LOCAL, '--reason', 'blob'])).code).toBe(0);
    expect((await nyl(e.dir, ['reconcile', ...LOCAL])).code).toBe(0);
  });
});

describe('an unreadable run ref', () => {
  it('blocks every writer; lease break sets it aside under unreadable/ and records it', async () => {
    const e = await reconciled();
    // A run ref whose record is garbage, next to a released lease.
    const id = '01a1732a-11d1-7ed6-a3cc-174dc69c7856';
    const ref = `refs/nyl/dev/runs/${id}`;
    gitIn(e.dir, ['update-ref', ref, tipOf(e.dir, 'refs/nyl/dev/observed')]);
    corrupt(e.dir, ref, 'run.json', '{"schema": "nyl.run/v1", "run": ');
    const tip = tipOf(e.dir, ref);
    commitFiles(e.dir, { 'nyl.yaml': `${readFileSync(join(e.dir, 'nyl.yaml'), 'utf8')}# changed\n` });
    await expectRefused(e, ['reconcile', ...LOCAL], `${ref}:run.json`, /cannot be read: invalid JSON/);
    const st = await nyl(e.dir, ['status', ...LOCAL]);
    expect(st.code).toBe(1);
    expect(rows(st.stdout)).toEqual({ db: 'current', app: 'current', other: 'current' });
    const b = await nyl(e.dir, ['lease', 'break', ...LOCAL, '--reason', 'garbage run ref']);
    expect(b.code, b.stderr).toBe(0);
    expect(b.stderr + b.stdout).toContain(`was set aside to refs/nyl/dev/unreadable/${id}`);
    expect(gitIn(e.dir, ['for-each-ref', '--format=%(refname) %(objectname)', 'refs/nyl/dev/unreadable/'])).toBe(
      `refs/nyl/dev/unreadable/${id} ${tip}`,
    );
    expect(spawnSync('git', ['rev-parse', '--verify', '-q', ref], { cwd: e.dir }).status).not.toBe(0);
    const r = await nyl(e.dir, ['reconcile', ...LOCAL]);
    expect(r.code, r.stderr).toBe(0);
  });
});

describe('a fix that is pasted', () => {
  it('restores the previous tip of the remote’s observed ref with the push printed', async () => {
    const e = environment();
    const bare = join(tempDir('nyl-bare-'), 'r.git');
    execFileSync('git', ['init', '--bare', '-q', bare]);
    gitIn(e.dir, ['remote', 'add', 'origin', `file://${bare}`]);
    expect((await nyl(e.dir, ['reconcile', '-e', 'dev'])).code).toBe(0);
    corrupt(bare, 'refs/nyl/dev/observed', 'units/other.json', 'garbage');
    const r = await expectRefused(
      e,
      ['reconcile', '-e', 'dev'],
      'refs/nyl/dev/observed:units/other.json',
      /invalid JSON/,
    );
    const push = /restore the previous tip with `(git push [^`]+)`/.exec(r.stderr)?.[1];
    expect(push).toMatch(
      /^git push --force-with-lease=refs\/nyl\/dev\/observed:[0-9a-f]{40} origin [0-9a-f]{40}~1:refs\/nyl\/dev\/observed$/,
    );
    gitIn(e.dir, (push as string).split(' ').slice(1));
    const st = await nyl(e.dir, ['status', '-e', 'dev']);
    expect(st.code, st.stderr).toBe(0);
  });
});

describe('an internal error', () => {
  it('is NYL-INTERNAL without a stack trace, and the process exits at once (no reader left behind)', async () => {
    const e = await reconciled();
    for (const cmd of ['status', 'reconcile', 'plan']) {
      const r = await nyl(e.dir, [cmd, ...LOCAL], { NYL_TEST_THROW_AT: 'read-state' });
      expect(r.code).toBe(1);
      expect(r.stderr).toMatch(
        /^error NYL-INTERNAL\n {2}unexpected failure: injected failure at read-state\n {2}fix: this is a bug/,
      );
      expect(r.stderr).not.toMatch(/\n\s+at /);
      expect(r.lingerMs).toBeLessThan(1000);
    }
  });
});
