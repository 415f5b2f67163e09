/**
 * The CLI's code cache (src/cli-loader.ts): V8's compiled code for dist/cli.cjs, kept per user under
 * $XDG_CACHE_HOME/nyl/. Written once by the first command of a build, used as it is by the next,
 * written anew when V8 refuses it (garbage, or a body damaged behind a good header), named by the
 * bundle it compiles, never written with NYL_CACHE=0, and a cache that cannot be written or is no
 * regular file changes nothing a command prints or exits with.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { cpSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { CLI, command, ENV_DEV, makeRepo, nyl, tempDir } from './helpers/repo.js';

const CONFIG = ENV_DEV + command('hello', 'echo hi');

function caches(home: string): string[] {
  try {
    return readdirSync(join(home, 'nyl'));
  } catch {
    return [];
  }
}

async function planIn(repo: string, env: Record<string, string>) {
  const r = await nyl(repo, ['plan', '-e', 'dev', '--local'], env);
  expect(r.stderr).toBe('');
  expect(r.code).toBe(0);
  expect(r.stdout).toMatch(/^UNIT +KIND +RESULT +DETAIL\nhello +Command +execute +new unit\n/);
  return r.stdout;
}

describe('the code cache of the CLI', () => {
  const repo = makeRepo({ 'nyl.yaml': CONFIG });

  it('is written once per build, private to the user, then used as it is', async () => {
    const home = tempDir('nyl-xdg-');
    const env = { XDG_CACHE_HOME: home };
    const first = await planIn(repo, env);
    const [file, ...more] = caches(home);
    expect(more).toEqual([]);
    expect(file).toMatch(new RegExp(`^code-[0-9a-f]{16}-\\d+-${process.version}-${process.arch}\\.bin$`));
    const path = join(home, 'nyl', file as string);
    expect(statSync(join(home, 'nyl')).mode & 0o777).toBe(0o700);
    expect(statSync(path).mode & 0o777).toBe(0o600);
    const written = statSync(path).mtimeMs;
    expect(await planIn(repo, env)).toBe(first);
    expect(statSync(path).mtimeMs).toBe(written);
    expect(caches(home)).toEqual([file]);
  });

  it('one V8 refuses (a corrupt file) is written anew; the command does as it would have', async () => {
    const home = tempDir('nyl-xdg-');
    const env = { XDG_CACHE_HOME: home };
    const expected = await planIn(repo, env);
    const [file] = caches(home);
    const path = join(home, 'nyl', file as string);
    const good = readFileSync(path);
    writeFileSync(path, Buffer.alloc(good.length, 7));
    expect(await planIn(repo, env)).toBe(expected);
    expect(readFileSync(path).equals(Buffer.alloc(good.length, 7))).toBe(false);
    expect(readFileSync(path).length).toBeGreaterThan(100_000);
  });

  it('one damaged past its header (V8 would crash on it unchecked) is refused and written anew', async () => {
    const home = tempDir('nyl-xdg-');
    const env = { XDG_CACHE_HOME: home };
    const expected = await planIn(repo, env);
    const path = join(home, 'nyl', caches(home)[0] as string);
    const good = readFileSync(path);
    expect(good.length).toBeGreaterThan(200_000);
    // The second half zeroed: the header (version, flags, lengths) still fits.
    const damaged = Buffer.concat([good.subarray(0, good.length / 2), Buffer.alloc(good.length - good.length / 2)]);
    writeFileSync(path, damaged);
    expect(await planIn(repo, env)).toBe(expected);
    expect(readFileSync(path).equals(damaged)).toBe(false);
    expect(await planIn(repo, env)).toBe(expected);
  });

  it('is named by the bundle it compiles: a cli.cjs of another build next to this cli.js does not use it', () => {
    const home = tempDir('nyl-xdg-');
    const dist = join(tempDir('nyl-dist-'), 'dist');
    cpSync(join(CLI, '..'), dist, { recursive: true });
    const version = () =>
      execFileSync('node', [join(dist, 'cli.js'), '--version'], { env: { ...process.env, XDG_CACHE_HOME: home } })
        .toString()
        .trim();
    const ours = version();
    expect(caches(home)).toHaveLength(1);
    // Another build: another version and another hash on its first line, the same length.
    const bundle = join(dist, 'cli.cjs');
    const other = readFileSync(bundle, 'latin1')
      .replace(/^\/\*nyl-cli [0-9a-f]{16}\*\//, '/*nyl-cli 0123456789abcdef*/')
      .replace(`"${ours.split(' ')[1]}"`, '"9.9.9"');
    writeFileSync(bundle, other, 'latin1');
    expect(version()).toBe('nyl 9.9.9');
    expect(caches(home)).toHaveLength(2);
  });

  it('a FIFO where the cache would be, or a relative XDG_CACHE_HOME, is not used', async () => {
    const home = tempDir('nyl-xdg-');
    await planIn(repo, { XDG_CACHE_HOME: home });
    const path = join(home, 'nyl', caches(home)[0] as string);
    execFileSync('rm', [path]);
    execFileSync('mkfifo', [path]);
    const r = spawnSync('node', [CLI, 'plan', '-e', 'dev', '--local'], {
      cwd: repo,
      env: { ...process.env, XDG_CACHE_HOME: home },
      timeout: 20_000,
    });
    expect(r.signal).toBeNull();
    expect(r.status).toBe(0);
    // Relative: it would land in the repository nyl runs in.
    expect((await nyl(repo, ['plan', '-e', 'dev', '--local'], { XDG_CACHE_HOME: 'rel' })).code).toBe(0);
    expect(execFileSync('git', ['status', '--porcelain', '--ignored'], { cwd: repo }).toString()).toBe('');
  });

  it('NYL_CACHE=0 writes none; a cache folder that cannot be made changes nothing', async () => {
    const home = tempDir('nyl-xdg-');
    const expected = await planIn(repo, { XDG_CACHE_HOME: home, NYL_CACHE: '0' });
    expect(readdirSync(home)).toEqual([]);
    // A file where the folder would be: nothing can be written under it.
    writeFileSync(join(home, 'nyl'), 'not a folder');
    expect(await planIn(repo, { XDG_CACHE_HOME: home })).toBe(expected);
    expect(readFileSync(join(home, 'nyl'), 'utf8')).toBe('not a folder');
  });
});
