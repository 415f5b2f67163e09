/**
 * Writes the file system refuses (src/core/git/storage-failure.ts): a full disk, a file size
 * limit. The built CLI says NYL-STATE-WRITE-FAILED with the fix, never NYL-INTERNAL or a stack;
 * a run stopped mid-way says what it left (the lease released with what it finished recorded, or
 * held until its deadline with the units since its last write not recorded), and the next run
 * takes over from there: imported what was recorded, uncertain what was not, nothing guessed.
 *
 * File size limits (`ulimit -f`, EFBIG) run everywhere; a real full disk needs a small tmpfs,
 * which needs root and a kernel that lets this process mount (else skipped, with the reason).
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { GitRepo } from '../src/core/git/repo.js';
import { storageCodeInFetch, storageCodeInGit } from '../src/core/git/storage-failure.js';
import { NylError } from '../src/core/util/errors.js';
import { CLI, GIT_ENV, git, makeRepo, nyl, tempDir } from './helpers/repo.js';

/** Wave a: 20 units; wave b: 20 units each after one of a. */
function config(a: string, b: (i: number) => string): string {
  const docs = ['kind: Environment\nname: dev\n'];
  for (let i = 0; i < 20; i++) docs.push(`kind: Command\nname: a${i}\nspec:\n  run: "${a}"\n`);
  for (let i = 0; i < 20; i++) docs.push(`kind: Command\nname: b${i}\nneeds: [a${i}]\nspec:\n  run: "${b(i)}"\n`);
  return docs.join('---\n');
}

/** The built CLI under a file size limit of `kib` KiB (bash's `ulimit -f`): larger writes fail with EFBIG. */
function nylLimited(cwd: string, kib: number, args: string[]) {
  const r = spawnSync('bash', ['-c', `ulimit -f ${kib} && exec node "$0" "$@"`, CLI, ...args], {
    cwd,
    env: { ...process.env, ...GIT_ENV, NYL_PROGRESS: '0' },
    encoding: 'utf8',
  });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

const leftovers = (dir: string) =>
  readdirSync(join(dir, '.git', 'objects', 'pack')).filter((f) => f.startsWith('tmp_'));

function expectClear(stderr: string): void {
  expect(stderr).toMatch(/^error NYL-STATE-WRITE-FAILED \(.*\.git\)$/m);
  expect(stderr).not.toContain('NYL-INTERNAL');
  expect(stderr).not.toMatch(/^\s+at /m);
}

describe('a write the file system refuses', () => {
  // The first write (lease, wave a's documents) is ~8 KiB; wave a's checkpoint write, with 20
  // logs of 4 KiB of random text, ~90 KiB, and so is the last write that would end the run.
  it('mid-run, with no room for a last write: the run keeps its lease, says which units are not recorded: the next run finds them uncertain', async () => {
    const dir = makeRepo({ 'nyl.yaml': config('head -c 3000 /dev/urandom | base64', () => 'true') });
    const r = nylLimited(dir, 32, ['reconcile', '-e', 'dev', '--local']);
    expect(r.code).toBe(4);
    expectClear(r.stderr);
    expect(r.stderr).toContain('file too large (EFBIG); nothing of it was recorded');
    expect(r.stderr).toMatch(
      /run \S+ stopped and holds the lease of dev until \S+; 20 units it ran after its last write \(a0, a1, a10, a11, a12 and 15 more\) are not recorded: the next run finds them uncertain/,
    );
    expect(r.stderr).toContain(
      'fix: raise the file size limit of the shell that runs nyl (`ulimit -f unlimited`), then `nyl lease break -e dev --reason "its writes failed" --local` and `nyl reconcile -e dev --local`',
    );
    expect(leftovers(dir)).toEqual([]);
    expect(git(dir, 'for-each-ref', '--format=%(refname)', 'refs/nyl/dev/runs')).not.toBe('');

    // Held: the next reconcile is refused until the lease is broken; then what was recorded is imported.
    expect((await nyl(dir, ['reconcile', '-e', 'dev', '--local'])).code).toBe(2);
    expect((await nyl(dir, ['lease', 'break', '-e', 'dev', '--reason', 'its writes failed', '--local'])).code).toBe(0);
    const next = await nyl(dir, ['reconcile', '-e', 'dev', '--local', '--json']);
    expect(next.code).toBe(4);
    const rows = JSON.parse(next.stdout).rows as { unit: string; result: string }[];
    const result = (u: string) => rows.find((x) => x.unit === u)?.result;
    expect(result('a0')).toBe('uncertain');
    expect(result('b0')).toBe('blocked');
  });

  // Wave b's documents are ~3 KiB of random text each: the write before wave b is ~50 KiB; a last
  // write without them (wave a's checkpoints) ~6 KiB fits under 24.
  it('mid-run, with room for a last write: what finished is recorded, the lease released, and the next run imports it', async () => {
    const dir = makeRepo({ 'nyl.yaml': config('true', () => `true # ${randomBytes(1500).toString('hex')}`) });
    const r = nylLimited(dir, 24, ['reconcile', '-e', 'dev', '--local']);
    expect(r.code).toBe(1);
    expectClear(r.stderr);
    expect(r.stderr).toMatch(
      /run \S+ stopped; a last write recorded what it finished on its run ref and released the lease, and the next reconcile imports it/,
    );
    expect(r.stderr).toContain('then `nyl reconcile -e dev --local`');
    expect(leftovers(dir)).toEqual([]);

    const next = await nyl(dir, ['reconcile', '-e', 'dev', '--local', '--json']);
    expect(next.code).toBe(0);
    const rows = JSON.parse(next.stdout).rows as { unit: string; result: string }[];
    expect(rows.filter((x) => x.unit.startsWith('a')).every((x) => x.result === 'imported')).toBe(true);
    expect(rows.filter((x) => x.unit.startsWith('b')).every((x) => x.result === 'executed')).toBe(true);
  });

  it('at the first write: nothing ran, nothing was written, and the fix is to run it again', async () => {
    const dir = makeRepo({ 'nyl.yaml': config('true', () => 'true') });
    const refs = git(dir, 'for-each-ref');
    const r = nylLimited(dir, 2, ['reconcile', '-e', 'dev', '--local', '--json']);
    expect(r.code).toBe(1);
    const out = JSON.parse(r.stdout);
    expect(out.problems[0].code).toBe('NYL-STATE-WRITE-FAILED');
    expect(out.problems[0].message).toMatch(/file too large \(EFBIG\); nothing of it was recorded$/);
    expect(out.problems[0].fix).toMatch(/then run the command again$/);
    expect(git(dir, 'for-each-ref')).toBe(refs);
    expect(leftovers(dir)).toEqual([]);
  });
  it('a fetch into a clone that cannot store it: the clone is named, not an unreachable remote', async () => {
    const src = makeRepo({ 'nyl.yaml': config('true', () => `true # ${randomBytes(1500).toString('hex')}`) });
    expect((await nyl(src, ['reconcile', '-e', 'dev', '--local'])).code).toBe(0);
    const bare = tempDir('nyl-bare-');
    git(bare, 'init', '-q', '--bare');
    git(src, 'push', '-q', bare, 'refs/heads/*:refs/heads/*', 'refs/nyl/*:refs/nyl/*');
    const clone = tempDir('nyl-clone-');
    git(clone, 'clone', '-q', '-b', 'main', `file://${bare}`, '.');
    // Its packs are past 16 KiB: git's index-pack dies of SIGXFSZ without a word, fetch says "invalid index-pack output".
    const r = nylLimited(clone, 16, ['status', '-e', 'dev']);
    expect(r.code).toBe(1);
    expectClear(r.stderr);
    expect(r.stderr).toContain(
      `could not write what it fetched from remote origin to ${clone}/.git: file too large (EFBIG)`,
    );
    expect(r.stderr).not.toContain('NYL-REMOTE-UNREACHABLE');
  });
});

describe("git's words for a refused write", () => {
  it('names the condition; a lost race, a refused login, the network and the server are none', () => {
    expect(storageCodeInGit("error: unable to create '/r/.git/refs/x.lock': No space left on device")).toBe('ENOSPC');
    expect(storageCodeInGit('fatal: write error: Read-only file system')).toBe('EROFS');
    expect(storageCodeInGit('', undefined, 'SIGXFSZ')).toBe('EFBIG');
    expect(
      storageCodeInGit("fatal: cannot lock ref 'refs/x': Unable to create 'x.lock': File exists."),
    ).toBeUndefined();
    // A hook's words about a login are no file system's.
    expect(storageCodeInGit('git@mirror: Permission denied (publickey).')).toBeUndefined();
    // A lock git "couldn't write" without a reason: the file system is asked (this one has room).
    const dir = tempDir('nyl-storage-');
    expect(storageCodeInGit("fatal: prepare: cannot update ref 'refs/x': couldn't write 'refs/x.lock'", dir)).toBe(
      'EWRITE',
    );
    // A fetch: only what names this clone (or a full disk under it) is this clone's.
    const gitDir = join(dir, '.git');
    expect(storageCodeInFetch(`fatal: Unable to create '${gitDir}/shallow.lock': Permission denied`, gitDir)).toBe(
      'EACCES',
    );
    expect(storageCodeInFetch('remote: fatal: write error: No space left on device', gitDir)).toBeUndefined();
    expect(storageCodeInFetch('bash: /srv/git/app.git: Read-only file system', gitDir)).toBeUndefined();
    expect(storageCodeInFetch('fatal: write error: No space left on device', dir)).toBeUndefined();
    expect(storageCodeInFetch('fatal: write error: Connection reset by peer', gitDir)).toBeUndefined();
    expect(storageCodeInFetch('git@host: Permission denied (publickey).', gitDir)).toBeUndefined();
    // A tracking ref of this clone's it "couldn't write" (no reason given): its write, whatever the disk says.
    const lock = `error: cannot update ref 'refs/nyl-remotes/origin/x': couldn't write '${gitDir}/refs/x.lock'`;
    expect(storageCodeInFetch(lock, gitDir)).toBe('EWRITE');
    expect(storageCodeInFetch("error: couldn't write '/elsewhere/refs/x.lock'", gitDir)).toBeUndefined();
  });
});

/** A tmpfs of `kib` KiB mounted at a new folder, or why there cannot be one here. */
function smallDisk(kib: number, more = ''): { dir: string } | { why: string } {
  if (process.getuid?.() !== 0) return { why: 'a tmpfs needs root' };
  const dir = tempDir('nyl-disk-');
  const r = spawnSync('mount', ['-t', 'tmpfs', '-o', `size=${kib}k${more}`, 'tmpfs', dir], { encoding: 'utf8' });
  if (r.status !== 0) return { why: `mount -t tmpfs failed: ${(r.stderr || r.error?.message || '').trim()}` };
  mounted.push(dir);
  return { dir };
}
const mounted: string[] = [];
afterAll(() => {
  for (const d of mounted) spawnSync('umount', ['-l', d]);
});

/**
 * A clone on a disk of its own that has fetched the state once; then the remote gets one more
 * state ref on a commit the clone has (the next fetch writes a tracking ref and no object), and
 * `fill` leaves no room on the clone's disk.
 */
async function cloneThenFill(disk: string, fill: (dir: string) => void): Promise<string> {
  const src = makeRepo({ 'nyl.yaml': config('true', () => 'true') });
  expect((await nyl(src, ['reconcile', '-e', 'dev', '--local'])).code).toBe(0);
  const bare = tempDir('nyl-bare-');
  git(bare, 'init', '-q', '--bare');
  git(src, 'push', '-q', bare, 'refs/heads/*:refs/heads/*', 'refs/nyl/*:refs/nyl/*');
  const clone = join(disk, 'clone');
  git(disk, 'clone', '-q', '-b', 'main', `file://${bare}`, clone);
  expect((await nyl(clone, ['status', '-e', 'dev'])).code).toBe(0);
  git(bare, 'update-ref', 'refs/nyl/dev/extra', git(bare, 'rev-parse', 'refs/nyl/dev/desired'));
  fill(disk);
  return clone;
}

/** The git commands a `nyl` run started, by name (trace2 events, written off the full disk). */
function gitCommands(trace: string): string[] {
  return readFileSync(trace, 'utf8')
    .split('\n')
    .filter((l) => l.includes('"event":"cmd_name"'))
    .map((l) => JSON.parse(l).name as string);
}

describe('a fetch whose tracking refs a full disk refuses (a real tmpfs each)', () => {
  const blocks = smallDisk(4096);
  const inodes = smallDisk(4096, ',nr_inodes=400');
  if ('why' in blocks || 'why' in inodes) {
    console.log(`skipped: a full disk needs a small tmpfs: ${'why' in blocks ? blocks.why : ''}`);
    it.skip('a full disk', () => {});
    return;
  }

  it('no block left ("couldn\'t write" its lock, no reason given): the clone is named, not an unreachable remote', async () => {
    const clone = await cloneThenFill(blocks.dir, (d) => {
      spawnSync('dd', ['if=/dev/zero', `of=${join(d, 'fill')}`, 'bs=4k']);
    });
    const r = await nyl(clone, ['status', '-e', 'dev']);
    expect(r.code).toBe(1);
    expectClear(r.stderr);
    expect(r.stderr).toContain(
      `could not write what it fetched from remote origin to ${clone}/.git: no space left on device (ENOSPC)`,
    );
    expect(r.stderr).not.toContain('NYL-REMOTE-UNREACHABLE');
  });

  it('no inode left ("cannot lock ref"): named at once, not fetched again as if another nyl held the lock', async () => {
    const clone = await cloneThenFill(inodes.dir, (d) => {
      mkdirSync(join(d, 'fill'));
      for (let i = 0; ; i++)
        try {
          writeFileSync(join(d, 'fill', String(i)), '');
        } catch {
          break;
        }
    });
    const trace = join(tempDir('nyl-trace-'), 'trace.json');
    const r = await nyl(clone, ['status', '-e', 'dev'], { GIT_TRACE2_EVENT: trace });
    expect(r.code).toBe(1);
    expectClear(r.stderr);
    expect(r.stderr).toContain(`to ${clone}/.git: no space left on device (ENOSPC)`);
    expect(gitCommands(trace).filter((c) => c === 'fetch')).toEqual(['fetch']);
  });
});

describe('a full disk (a real tmpfs)', () => {
  const disk = smallDisk(2048);
  if ('why' in disk) {
    console.log(`skipped: a full disk needs a small tmpfs: ${disk.why}`);
    it.skip('a full disk', () => {});
    return;
  }
  const root = disk.dir;
  const fill = join(root, 'fill');

  it('mid-run: ENOSPC is named, the run keeps its lease, and once there is room the next run takes over', async () => {
    const dir = join(disk.dir, 'repo');
    mkdirSync(dir);
    git(dir, 'init', '-q', '-b', 'main');
    // Wave a's first unit fills the disk: every write after it fails.
    const docs = config('true', () => 'true').replace(
      'name: a0\nspec:\n  run: "true"',
      `name: a0\nspec:\n  run: "dd if=/dev/zero of=${fill} bs=64k 2>/dev/null || true"`,
    );
    execFileSync('sh', ['-c', `cat > nyl.yaml <<'EOF'\n${docs}EOF`], { cwd: dir });
    git(dir, 'add', '-A');
    git(dir, 'commit', '-q', '-m', 'config');
    try {
      await fullDiskRun(dir);
    } finally {
      rmSync(fill, { force: true });
    }
  });

  async function fullDiskRun(dir: string): Promise<void> {
    const r = await nyl(dir, ['reconcile', '-e', 'dev', '--local']);
    expect(r.code).toBe(4);
    expectClear(r.stderr);
    expect(r.stderr).toContain('no space left on device (ENOSPC)');
    expect(r.stderr).toMatch(/holds the lease of dev until \S+; 20 units it ran after its last write/);
    expect(r.stderr).toContain(`fix: free space on the file system that holds ${dir}/.git`);
    expect(leftovers(dir)).toEqual([]);

    rmSync(fill);
    expect((await nyl(dir, ['lease', 'break', '-e', 'dev', '--reason', 'disk full', '--local'])).code).toBe(0);
    const next = await nyl(dir, ['reconcile', '-e', 'dev', '--local', '--json']);
    expect(next.code).toBe(4);
    const rows = JSON.parse(next.stdout).rows as { unit: string; result: string }[];
    expect(rows.find((x) => x.unit === 'a1')?.result).toBe('uncertain');
  }

  /** A repository on the small disk with `config` committed. */
  function repoOnDisk(name: string, config: string): string {
    const dir = join(root, name);
    mkdirSync(dir);
    git(dir, 'init', '-q', '-b', 'main');
    writeFileSync(join(dir, 'nyl.yaml'), config);
    git(dir, 'add', '-A');
    git(dir, 'commit', '-q', '-m', 'config');
    return dir;
  }
  const fillCmd = `dd if=/dev/zero of=${fill} bs=64k 2>/dev/null || true`;
  const unit = (name: string, run: string, more = '') =>
    `kind: Command\nname: ${name}\n${more}spec:\n  run: "${run}"\n`;

  /** A repository on the small disk whose one unit `a` is reconciled, then held (for `nyl exec`). */
  async function heldUnit(name: string): Promise<string> {
    const dir = repoOnDisk(name, ['kind: Environment\nname: dev\n', unit('a', 'true')].join('---\n'));
    expect((await nyl(dir, ['reconcile', '-e', 'dev', '--local'])).code).toBe(0);
    expect((await nyl(dir, ['hold', '-e', 'dev', '--unit', 'a', '--reason', 'repair', '--local'])).code).toBe(0);
    return dir;
  }

  it('a heartbeat that landed recorded what finished before it: only the rest is named', async () => {
    const dir = repoOnDisk(
      'beat',
      [
        'kind: Environment\nname: dev\n',
        unit('a', 'true'),
        unit('b', `sleep 3; ${fillCmd}`),
        unit('c', 'true', 'needs: [a, b]\n'),
      ].join('---\n'),
    );
    try {
      const r = await nyl(dir, ['reconcile', '-e', 'dev', '--local'], { NYL_HEARTBEAT_INTERVAL: '1s' });
      expect(r.code).toBe(4);
      expectClear(r.stderr);
      expect(r.stderr).toMatch(
        /1 unit it ran after its last write \(b\) is not recorded: the next run finds it uncertain/,
      );
      rmSync(fill);
      expect((await nyl(dir, ['lease', 'break', '-e', 'dev', '--reason', 'disk full', '--local'])).code).toBe(0);
      const next = await nyl(dir, ['reconcile', '-e', 'dev', '--local', '--json']);
      const rows = JSON.parse(next.stdout).rows as { unit: string; result: string }[];
      expect(Object.fromEntries(rows.map((x) => [x.unit, x.result]))).toMatchObject({
        a: 'imported',
        b: 'uncertain',
        c: 'blocked',
      });
    } finally {
      rmSync(fill, { force: true });
    }
  });

  it('teardown: a destroy that ran is named as not recorded', async () => {
    const dir = repoOnDisk(
      'down',
      [
        'kind: Environment\nname: dev\n',
        `${unit('a', 'true')}  destroy: "${fillCmd}"\n`,
        `${unit('b', 'true', 'needs: [a]\n')}  destroy: "true"\n`,
      ].join('---\n'),
    );
    try {
      expect((await nyl(dir, ['reconcile', '-e', 'dev', '--local'])).code).toBe(0);
      // b goes first (it needs a), then a's destroy fills the disk: the landing cannot be written.
      const down = await nyl(dir, ['teardown', '-e', 'dev', '--local']);
      expect(down.code).toBe(4);
      expectClear(down.stderr);
      expect(down.stderr).toMatch(
        /holds the lease of dev until \S+; 1 unit it ran after its last write \(a\) is not recorded/,
      );
      expect(down.stderr).toContain('and `nyl teardown -e dev --local`');
      rmSync(fill);
      expect((await nyl(dir, ['lease', 'break', '-e', 'dev', '--reason', 'disk full', '--local'])).code).toBe(0);
      // b's destroy was checkpointed (the write before a's wave landed): imported as gone, never as present.
      const rec = await nyl(dir, ['recover', '-e', 'dev', '--reason', 'import', '--local', '--json']);
      expect(JSON.parse(rec.stdout).facts).toMatchObject({ destroyed: ['b'], recovered: ['a'] });
      const next = await nyl(dir, ['reconcile', '-e', 'dev', '--local', '--json']);
      const rows = JSON.parse(next.stdout).rows as { unit: string; result: string }[];
      expect(Object.fromEntries(rows.map((x) => [x.unit, x.result]))).toMatchObject({ a: 'uncertain', b: 'blocked' });
      const observed = git(dir, 'ls-tree', '-r', '--name-only', 'refs/nyl/dev/observed').split('\n');
      expect(observed).toContain('units/a.json');
      expect(observed).not.toContain('units/b.json');
    } finally {
      rmSync(fill, { force: true });
    }
  });

  it('units the failed heartbeat kept from starting are named apart, safe to retry', async () => {
    const docs = ['kind: Environment\nname: dev\n', unit('u0', `${fillCmd}; sleep 3`)];
    for (const n of ['u1', 'u2', 'u3']) docs.push(unit(n, 'true'));
    const dir = repoOnDisk('unstarted', docs.join('---\n'));
    try {
      const r = await nyl(dir, ['reconcile', '-e', 'dev', '--local', '--parallelism', '1'], {
        NYL_HEARTBEAT_INTERVAL: '1s',
      });
      expect(r.code).toBe(4);
      expectClear(r.stderr);
      expect(r.stderr).toContain(
        '1 unit it ran after its last write (u0) is not recorded, and 3 units it listed as executing never started (u1, u2, u3): the next run finds them uncertain',
      );
      expect(r.stderr).toContain(
        '`nyl recover -e dev --unit <unit> --retry --reason "never started" --local` is safe for those that never started',
      );
    } finally {
      rmSync(fill, { force: true });
    }
  });

  it('exec: a landing held up by the refused heartbeat is tried again once there is room', async () => {
    const dir = await heldUnit('exec2');
    try {
      const repair = `${fillCmd}; sleep 3; rm -f ${fill}; echo repaired`;
      const ex = await nyl(dir, ['exec', '-e', 'dev', '--unit', 'a', '--local', '--', 'sh', '-c', repair], {
        NYL_HEARTBEAT_INTERVAL: '1s',
      });
      expect(ex.stdout).toContain('repaired');
      expect(ex.code).toBe(0);
      expect(git(dir, 'show', 'refs/nyl/dev/observed:units/a.json')).toContain('repaired');
    } finally {
      rmSync(fill, { force: true });
    }
  });

  it('a remote whose disk is full: its server is named, not credentials or branch protection', async () => {
    const bare = join(root, 'remote.git');
    git(root, 'init', '-q', '--bare', bare);
    const src = makeRepo({ 'nyl.yaml': config('true', () => 'true') });
    git(src, 'push', '-q', bare, 'main');
    const clone = tempDir('nyl-clone-');
    git(clone, 'clone', '-q', '-b', 'main', `file://${bare}`, '.');
    spawnSync('dd', ['if=/dev/zero', `of=${fill}`, 'bs=4k']);
    try {
      const r = await nyl(clone, ['reconcile', '-e', 'dev']);
      expect(r.code).toBe(1);
      expectClear(r.stderr.replace(/\(origin\)/, '(x/.git)'));
      expect(r.stderr).toMatch(/^error NYL-STATE-WRITE-FAILED \(origin\)$/m);
      expect(r.stderr).toContain('remote origin could not store the push of');
      expect(r.stderr).toContain(
        'fix: free space on the server that holds remote origin, or make its repository writable',
      );
      expect(r.stderr).not.toContain('branch protection');
    } finally {
      rmSync(fill, { force: true });
    }
  });

  it('exec: a repair that ran is named as not recorded, not "run the command again"', async () => {
    const dir = await heldUnit('exec');
    try {
      const ex = await nyl(dir, [
        'exec',
        '-e',
        'dev',
        '--unit',
        'a',
        '--local',
        '--',
        'sh',
        '-c',
        `${fillCmd}; echo repaired`,
      ]);
      expect(ex.stdout).toContain('repaired');
      expect(ex.stdout).not.toContain('refused');
      expect(ex.code).toBe(4);
      expectClear(ex.stderr);
      expect(ex.stderr).toMatch(
        /holds the lease of dev until \S+; 1 unit it ran after its last write \(a\) is not recorded/,
      );
      expect(ex.stderr).not.toContain('run the command again');
      // Once there is room: the repair is imported as one (a resume then asks for an approved plan).
      rmSync(fill);
      expect((await nyl(dir, ['lease', 'break', '-e', 'dev', '--reason', 'disk full', '--local'])).code).toBe(0);
      expect((await nyl(dir, ['recover', '-e', 'dev', '--reason', 'import', '--local'])).code).toBe(0);
      expect((await nyl(dir, ['resume', '-e', 'dev', '--unit', 'a', '--reason', 'repaired', '--local'])).code).toBe(0);
      const a = JSON.parse(git(dir, 'show', 'refs/nyl/dev/observed:units/a.json'));
      expect(a.repairs.at(-1).output).toContain('not recorded');
      expect(a.approvalRequired.reason).toContain('repaired with nyl exec while held');
    } finally {
      rmSync(fill, { force: true });
    }
  });

  it('a last write that finds the lease broken: the run says so and keeps what it finished as a late checkpoint', async () => {
    // a fills the disk (the heartbeat's write fails), then frees it and breaks the lease itself.
    const breakLease = `node ${CLI} lease break -e dev --reason gone --local >/dev/null 2>&1`;
    const dir = repoOnDisk(
      'lost',
      ['kind: Environment\nname: dev\n', unit('a', `${fillCmd}; sleep 3; rm -f ${fill}; ${breakLease}; true`)].join(
        '---\n',
      ),
    );
    try {
      const r = await nyl(dir, ['reconcile', '-e', 'dev', '--local'], { NYL_HEARTBEAT_INTERVAL: '1s' });
      expect(r.code).toBe(4);
      expectClear(r.stderr);
      expect(r.stderr).toMatch(/^error NYL-LEASE-LOST/m);
      expect(r.stderr).not.toContain('holds the lease of dev');
      const tip = git(dir, 'for-each-ref', '--format=%(refname)', 'refs/nyl/dev/runs', 'refs/nyl/dev/evidence');
      const files = tip
        .split('\n')
        .filter(Boolean)
        .flatMap((ref) => git(dir, 'ls-tree', '-r', '--name-only', ref).split('\n'));
      expect(files).toContain('units/a/checkpoint.json');
    } finally {
      rmSync(fill, { force: true });
    }
  });

  it('a ref update git cannot write: a storage failure, not a lost race', async () => {
    const dir = join(disk.dir, 'refs');
    mkdirSync(dir);
    git(dir, 'init', '-q', '-b', 'main');
    git(dir, 'commit', '-q', '--allow-empty', '-m', 'x');
    const head = git(dir, 'rev-parse', 'HEAD');
    spawnSync('dd', ['if=/dev/zero', `of=${fill}`, 'bs=4k']);
    const repo = await GitRepo.open(dir);
    try {
      const e = await repo.updateRefs([{ ref: 'refs/nyl/dev/lease', old: undefined, new: head }]).catch((x) => x);
      expect(e).toBeInstanceOf(NylError);
      expect((e as NylError).problems[0]?.code).toBe('NYL-STATE-WRITE-FAILED');
      expect((e as NylError).problems[0]?.message).toContain('no space left on device (ENOSPC)');
    } finally {
      repo.close();
      rmSync(fill, { force: true });
    }
  });
});
