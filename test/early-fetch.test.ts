/**
 * The state fetch the CLI starts before it has loaded the rest of nyl (src/cli/early-fetch.ts,
 * src/core/state/state-fetch.ts): read from the command line only when it says so plainly, taken
 * over by the command when it is the fetch the command makes (one fetch, not two), and left
 * alone otherwise without changing what the command does. Signals while it runs: signals in
 * hostile-network.test.ts.
 */
import { execFileSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, readFileSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { earlyFetchSpec, gitDirAbove, mayMoveState } from '../src/cli/early-fetch.js';
import { lockLeftBehind } from '../src/core/git/lock-file.js';
import { CLI, command, ENV_DEV, git, makeRepo, nyl, nylJson, sleep, startNyl, tempDir } from './helpers/repo.js';

type Rows = { rows: { unit: string; result: string }[] };

const spec = (argv: string[], env: NodeJS.ProcessEnv = {}) => earlyFetchSpec(argv, env);

describe('what a command line says of its first fetch', () => {
  it('reads the environment, remote and bounds of status, plan, reconcile and verify', () => {
    expect(spec(['status', '-e', 'dev'])).toEqual({
      remote: 'origin',
      prefix: 'refs/nyl/dev',
      timeoutMs: 60_000,
      graceMs: 30_000,
    });
    expect(
      spec([
        'reconcile',
        '--json',
        '--environment=prod',
        '--remote',
        'up',
        '--network-timeout',
        '5s',
        '--cancel-grace=9s',
      ]),
    ).toEqual({ remote: 'up', prefix: 'refs/nyl/prod', timeoutMs: 5_000, graceMs: 9_000 });
    expect(spec(['plan', '-e', 'dev'], { NYL_NETWORK_TIMEOUT: '7s' })?.timeoutMs).toBe(7_000);
    expect(spec(['verify', '-e', 'dev', '--network-timeout', '2s'], { NYL_NETWORK_TIMEOUT: '7s' })?.timeoutMs).toBe(
      2_000,
    );
  });

  it('says nothing when the words do not say plainly: no environment, --local, a group, help, other commands, bad values', () => {
    for (const argv of [
      ['status'],
      ['status', '-e', 'dev', '--local'],
      ['plan', '--group', 'all'],
      ['reconcile', '-e', 'dev', '--help'],
      ['status', '-e', 'dev', '--', 'x'],
      ['runs', '-e', 'dev'],
      ['lease', 'break', '-e', 'dev'],
      ['status', '-e', '../dev'],
      ['status', '-e', 'dev', '--remote', '--upload-pack=touch /tmp/x'],
      ['status', '-e', 'dev', '--network-timeout', 'soon'],
      ['status', '-e', 'dev', '--cancel-grace', '0x'],
    ])
      expect(spec(argv), argv.join(' ')).toBeUndefined();
    expect(spec(['status', '-e', 'dev'], { NYL_NETWORK_TIMEOUT: 'soon' })).toBeUndefined();
  });
});

describe('a configuration that may keep the state elsewhere', () => {
  it('is read from the work tree: nyl.yaml or the --config file; a --config folder counts as one', () => {
    const plain = makeRepo({ 'nyl.yaml': ENV_DEV, 'other.yaml': `${ENV_DEV}coordinationRefPrefix: refs/x\n` });
    expect(mayMoveState(plain, plain, ['status', '-e', 'dev'])).toBe(false);
    expect(mayMoveState(plain, plain, ['status', '-e', 'dev', '--config', 'other.yaml'])).toBe(true);
    expect(mayMoveState(plain, plain, ['status', '-e', 'dev', '--config=other.yaml'])).toBe(true);
    expect(mayMoveState(plain, plain, ['status', '-e', 'dev', '--config', '.'])).toBe(true);
    const moved = makeRepo({ 'nyl.yml': `${ENV_DEV}coordinationRefPrefix: refs/x\n` });
    expect(mayMoveState(moved, moved, ['status', '-e', 'dev'])).toBe(true);
  });
});

describe('the git directory above the working folder', () => {
  it('is found from a subfolder as git finds it, and not at all for a worktree, GIT_DIR or no repository', () => {
    const dir = makeRepo({ 'nyl.yaml': ENV_DEV, 'sub/x.txt': 'x' });
    const gitDir = realpathSync(join(dir, '.git'));
    expect(gitDirAbove(join(dir, 'sub'), {})).toBe(gitDir);
    expect(gitDirAbove(dir, { GIT_DIR: gitDir })).toBeUndefined();
    const worktree = join(tempDir('nyl-wt-'), 'wt');
    git(dir, 'worktree', 'add', '-q', worktree);
    expect(gitDirAbove(worktree, {})).toBeUndefined();
    const outside = tempDir('nyl-nogit-');
    mkdirSync(join(outside, 'a'));
    expect(gitDirAbove(join(outside, 'a'), {})).toBeUndefined();
    // A bare repository inside the work tree is the one git opens there: left to git.
    git(dir, 'init', '-q', '--bare', 'inner.git');
    expect(gitDirAbove(join(dir, 'inner.git'), {})).toBeUndefined();
    // A `.git` folder that is no git directory is passed over, as git does.
    mkdirSync(join(dir, 'sub', '.git'));
    writeFileSync(join(dir, 'sub', '.git', 'HEAD'), 'ref: refs/heads/main\n');
    expect(gitDirAbove(join(dir, 'sub'), {})).toBe(gitDir);
  });
});

/** Per configuration, a bare remote holding dev's state after one reconcile: made once, copied per test. */
const seeded = new Map<string, string>();

/** A clone whose origin (file://, a copy of its own) holds dev's state after one reconcile; `config` is its nyl.yaml. */
async function cloneWithState(config: string): Promise<string> {
  let template = seeded.get(config);
  if (!template) {
    const src = makeRepo({ 'nyl.yaml': config });
    template = tempDir('nyl-bare-');
    git(template, 'init', '-q', '--bare');
    git(src, 'remote', 'add', 'origin', template);
    git(src, 'push', '-q', 'origin', 'HEAD:main');
    expect((await nyl(src, ['reconcile', '-e', 'dev'])).code).toBe(0);
    seeded.set(config, template);
  }
  const bare = tempDir('nyl-bare-');
  cpSync(template, bare, { recursive: true });
  const clone = tempDir('nyl-clone-');
  git(clone, 'clone', '-q', '-b', 'main', `file://${bare}`, '.');
  return clone;
}

/** The git commands a `nyl` run started, in order (trace2). */
async function gitCommands(cwd: string, args: string[]): Promise<{ code: number; commands: string[] }> {
  const trace = join(tempDir('nyl-trace-'), 'trace.json');
  const r = await nyl(cwd, args, { GIT_TRACE2_EVENT: trace });
  const commands = readFileSync(trace, 'utf8')
    .split('\n')
    .filter((l) => l.includes('"event":"start"') && !l.includes('upload-pack') && !l.includes('rev-list'))
    .map(
      (l) =>
        (JSON.parse(l).argv as string[]).find((a, i, all) => i > 0 && !a.startsWith('-') && all[i - 1] !== '-c') ?? '',
    );
  return { code: r.code, commands };
}

describe('the early fetch, taken over', () => {
  const config = ENV_DEV + command('a', 'echo v=1 >> "$NYL_OUTPUT"') + command('b', 'true', { needs: ['a'] });

  it('is the one fetch of a command: first of its git commands, before the repository is even opened', async () => {
    const clone = await cloneWithState(config);
    for (const args of [
      ['status', '-e', 'dev'],
      ['plan', '-e', 'dev'],
      ['verify', '-e', 'dev'],
    ]) {
      const r = await gitCommands(clone, args);
      expect(r.code, args.join(' ')).toBe(0);
      expect(
        r.commands.filter((c) => c === 'fetch'),
        args.join(' '),
      ).toEqual(['fetch']);
      expect(r.commands[0], args.join(' ')).toBe('fetch');
    }
    const { json } = await nylJson<{ stats: { remoteRoundTrips: number } }>(clone, ['status', '-e', 'dev']);
    expect(json.stats.remoteRoundTrips).toBe(1);
  });

  it('reads the state of a fresh clone (tips only) and of one that fetched before, the same as without it', async () => {
    const clone = await cloneWithState(config);
    const first = (await nylJson<Rows>(clone, ['status', '-e', 'dev'])).json;
    expect(first.rows.map((u) => [u.unit, u.result])).toEqual([
      ['a', 'current'],
      ['b', 'current'],
    ]);
    expect(git(clone, 'rev-parse', '--is-shallow-repository')).toBe('true');
    const again = (await nylJson<Rows>(clone, ['status', '-e', 'dev'])).json;
    expect(again.rows).toEqual(first.rows);
    const r = await nyl(clone, ['reconcile', '-e', 'dev']);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/^a +Command +current/m);
  });

  it('is not started when the work tree’s configuration puts the state elsewhere: one fetch, the right state read', async () => {
    const custom = config.replace('name: dev\n', 'name: dev\ncoordinationRefPrefix: refs/deploy\n');
    const clone = await cloneWithState(custom);
    const r = await gitCommands(clone, ['status', '-e', 'dev']);
    expect(r.code).toBe(0);
    expect(r.commands.filter((c) => c === 'fetch')).toEqual(['fetch']);
    expect(r.commands[0]).toBe('rev-parse');
    const { json } = await nylJson<Rows>(clone, ['status', '-e', 'dev']);
    expect(json.rows.map((u) => u.result)).toEqual(['current', 'current']);
    expect(git(clone, 'for-each-ref', '--format=%(refname)', 'refs/nyl-remotes/origin/deploy/dev')).not.toBe('');
  });

  it('in a repository without that remote (nested in a clone that has it): the command’s own error, as without it', async () => {
    const clone = await cloneWithState(config);
    const inner = join(clone, 'inner');
    mkdirSync(inner);
    git(inner, 'init', '-q', '-b', 'main');
    writeFileSync(join(inner, 'nyl.yaml'), config);
    git(inner, 'add', '-A');
    git(inner, '-c', 'user.name=t', '-c', 'user.email=t@t', 'commit', '-q', '-m', 'c');
    const r = await nyl(inner, ['status', '-e', 'dev']);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain('error NYL-REMOTE-UNREACHABLE (origin)');
    expect(r.stderr).not.toContain('NYL-INTERNAL');
  });
});

/** A `git` ahead of the real one on PATH whose fetches take `secs` and say in `log` how they ended. */
function slowFetchGit(secs: number): { path: string; log: string } {
  const dir = tempDir('nyl-slowgit-');
  const log = join(dir, 'log');
  const real = execFileSync('sh', ['-c', 'command -v git'], { encoding: 'utf8' }).trim();
  const script = `#!/bin/bash
for a in "$@"; do
  if [ "$a" = fetch ]; then
    trap 'echo TERM >> ${log}; exit 143' TERM
    echo start >> ${log}
    sleep ${secs} & wait $!
    echo done >> ${log}
    exec ${real} "$@"
  fi
done
exec ${real} "$@"
`;
  writeFileSync(join(dir, 'git'), script, { mode: 0o755 });
  return { path: `${dir}:${process.env.PATH}`, log };
}
const logOf = (f: string) => (existsSync(f) ? readFileSync(f, 'utf8').split('\n').filter(Boolean) : []);

/** A bare repository whose refs/nyl/dev/big holds 40 MB of random bytes: made once, copied per test. */
let bigState: string | undefined;
function bigStateBare(): string {
  if (!bigState) {
    bigState = tempDir('nyl-bare-');
    git(bigState, 'init', '-q', '--bare');
    const blob = execFileSync('sh', ['-c', 'head -c 40000000 /dev/urandom | git hash-object -w --stdin'], {
      cwd: bigState,
      encoding: 'utf8',
    }).trim();
    const tree = execFileSync('git', ['mktree'], {
      cwd: bigState,
      input: `100644 blob ${blob}\tbig\n`,
      encoding: 'utf8',
    }).trim();
    const commit = git(bigState, '-c', 'user.name=t', '-c', 'user.email=t@t', 'commit-tree', tree, '-m', 'big');
    git(bigState, 'update-ref', 'refs/nyl/dev/big', commit);
  }
  const bare = tempDir('nyl-bare-');
  cpSync(bigState, bare, { recursive: true });
  return bare;
}

/**
 * A fresh clone (main only) of a remote whose `main` holds `config` and whose dev state refs hold
 * 40 MB: a depth fetch of them is still receiving (and holds `shallow.lock`) well after nyl starts.
 */
function bigStateClone(config: string): string {
  const src = makeRepo({ 'nyl.yaml': config });
  const bare = bigStateBare();
  git(src, 'push', '-q', bare, 'HEAD:main');
  const clone = tempDir('nyl-clone-');
  git(clone, 'clone', '-q', '-b', 'main', `file://${bare}`, '.');
  return clone;
}

describe('an early fetch no one takes', () => {
  const config = ENV_DEV + command('a', 'true');

  it('is ended before the command’s own fetch starts (two at once would meet on git’s locks)', async () => {
    // The commit keeps the state under refs/deploy; the work tree does not say so (edited, not committed).
    const custom = config.replace('name: dev\n', 'name: dev\ncoordinationRefPrefix: refs/deploy\n');
    const clone = await cloneWithState(custom);
    writeFileSync(join(clone, 'nyl.yaml'), config);
    const shim = slowFetchGit(2);
    const r = await nyl(clone, ['status', '-e', 'dev'], { PATH: shim.path });
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/^a +Command +current/m);
    expect(logOf(shim.log)).toEqual(['start', 'TERM', 'start', 'done']);
  });

  it('is ended with SIGTERM (git removes its locks on it), not SIGKILL, when the command stops first', async () => {
    const clone = await cloneWithState(config);
    const shim = slowFetchGit(5);
    const r = await nyl(clone, ['status', '-e', 'dev', '--no-such-option'], { PATH: shim.path });
    expect(r.code).toBe(1);
    expect(r.stderr).toContain('error NYL-USAGE');
    expect(r.ms).toBeLessThan(4_000);
    expect(logOf(shim.log)).toEqual(['start', 'TERM']);
  });

  it('with real git: a depth fetch ended mid-transfer leaves no shallow.lock, and the next command fetches', async () => {
    const clone = bigStateClone(config);
    const r = await nyl(clone, ['status', '-e', 'dev', '--no-such-option']);
    expect(r.code).toBe(1);
    expect(existsSync(join(clone, '.git', 'shallow.lock'))).toBe(false);
    const next = await nyl(clone, ['status', '-e', 'dev', '--json']);
    expect(next.stderr).not.toContain('shallow.lock');
  }, 60_000);

  it('with real git: a configuration error while the fetch it took is still receiving leaves no shallow.lock', async () => {
    const clone = bigStateClone(config.replace('run: "true"', 'run: "true"\n  bogusField: 1'));
    const r = await nyl(clone, ['status', '-e', 'dev']);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain('error NYL-CONFIG-FIELD');
    expect(existsSync(join(clone, '.git', 'shallow.lock'))).toBe(false);
  }, 60_000);

  it('a signal while nyl loads ends it the same way, and nyl dies of the signal', async () => {
    const clone = await cloneWithState(config);
    const shim = slowFetchGit(5);
    const run = startNyl(clone, ['status', '-e', 'dev'], { PATH: shim.path, NYL_TEST_LOAD_DELAY_MS: '4000' });
    while (!logOf(shim.log).includes('start')) await sleep(20);
    run.child.kill('SIGTERM');
    const r = await run.done;
    expect(r.signal).toBe('SIGTERM');
    expect(r.ms).toBeLessThan(3_500);
    expect(logOf(shim.log)).toEqual(['start', 'TERM']);
  });
});

describe('signals once nyl has answered', () => {
  it('end a nyl whose output no one reads yet, as before the early fetch (its listener is gone)', async () => {
    // A 4 KiB pipe no one reads: `nyl schema` blocks on its output after main() returned. The
    // signal goes once the pipe is full (a fixed pause could end before nyl got there under load).
    const script = [
      'import array, fcntl, os, signal, subprocess, sys, termios, time',
      'r, w = os.pipe()',
      'fcntl.fcntl(w, 1031, 4096)',
      `p = subprocess.Popen(['node', sys.argv[1], 'schema'], stdout=w)`,
      'os.close(w)',
      'def queued():',
      "    n = array.array('i', [0]); fcntl.ioctl(r, termios.FIONREAD, n, True); return n[0]",
      'until = time.time() + 30',
      'while queued() < 4096 and time.time() < until: time.sleep(0.02)',
      'time.sleep(0.3)',
      'p.send_signal(signal.SIGTERM)',
      'try:',
      '    p.wait(timeout=10); print(p.returncode)',
      'except subprocess.TimeoutExpired:',
      "    print('running'); p.kill(); p.wait()",
    ].join('\n');
    const out = execFileSync('python3', ['-c', script, CLI], { encoding: 'utf8' }).trim();
    expect(out).toBe('-15');
  });
});

describe('a lock file git left in the clone', () => {
  it('is named with the fix (remove it once no git runs), not taken for an unreachable remote', async () => {
    const clone = await cloneWithState(ENV_DEV + command('a', 'true'));
    const lock = join(realpathSync(join(clone, '.git')), 'shallow.lock');
    writeFileSync(lock, '');
    const r = await nyl(clone, ['status', '-e', 'dev']);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain(`error NYL-GIT-LOCKED (${lock})`);
    expect(r.stderr).toContain(`could not fetch from remote origin: git's lock file ${lock} is there already`);
    expect(r.stderr).toContain(`remove it (\`rm ${lock}\`) and run the command again`);
    expect(r.stderr).not.toContain('NYL-REMOTE-UNREACHABLE');
    rmSync(lock);
    expect((await nyl(clone, ['status', '-e', 'dev'])).code).toBe(0);
  });

  it('is one of this clone’s, named by git’s words', () => {
    const gitDir = '/w/app/.git';
    const ref =
      "error: cannot lock ref 'refs/nyl-remotes/origin/nyl/dev/lease': Unable to create '/w/app/.git/refs/nyl-remotes/origin/nyl/dev/lease.lock': File exists.";
    expect(lockLeftBehind(ref, gitDir, '/w/app')).toBe('/w/app/.git/refs/nyl-remotes/origin/nyl/dev/lease.lock');
    expect(lockLeftBehind("fatal: Unable to create '.git/shallow.lock': File exists.", gitDir, '/w/app')).toBe(
      '/w/app/.git/shallow.lock',
    );
    expect(
      lockLeftBehind("fatal: Unable to create '/srv/other/.git/shallow.lock': File exists.", gitDir, '/w/app'),
    ).toBeUndefined();
    expect(
      lockLeftBehind("fatal: Unable to create '/w/app/.git/shallow.lock': No space left on device", gitDir, '/w/app'),
    ).toBeUndefined();
  });
});
