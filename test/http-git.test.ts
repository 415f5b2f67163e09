import { execFileSync, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type GitHttpServer, makeBareRepo, startGitHttpServer } from './helpers/http-git.js';

const dirs: string[] = [];
const servers: GitHttpServer[] = [];

function tempDir(prefix: string): string {
  const d = mkdtempSync(join(tmpdir(), prefix));
  dirs.push(d);
  return d;
}

let home: string;

/** Environment for client-side git: no prompts, no system or user config, fixed identity. */
function clientEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    GIT_TERMINAL_PROMPT: '0',
    GIT_CONFIG_NOSYSTEM: '1',
    HOME: home,
    XDG_CONFIG_HOME: join(home, '.config'),
    GIT_AUTHOR_NAME: 'Test Operator',
    GIT_AUTHOR_EMAIL: 'operator@example.com',
    GIT_COMMITTER_NAME: 'Test Operator',
    GIT_COMMITTER_EMAIL: 'operator@example.com',
    ...extra,
  };
  for (const k of ['GIT_ASKPASS', 'SSH_ASKPASS', 'GIT_DIR', 'GIT_WORK_TREE', 'GIT_INDEX_FILE']) delete env[k];
  return env;
}

function git(cwd: string, ...args: string[]): string {
  return execFileSync('git', args, { cwd, env: clientEnv(), encoding: 'utf8', stdio: 'pipe' }).trim();
}

/** Runs git without throwing on failure. */
function tryGit(cwd: string, args: string[], extra: Record<string, string> = {}) {
  const r = spawnSync('git', args, { cwd, env: clientEnv(extra), encoding: 'utf8' });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

function commit(dir: string, file: string, content: string | Buffer, message: string): string {
  writeFileSync(join(dir, file), content);
  git(dir, 'add', file);
  git(dir, 'commit', '-q', '-m', message);
  return git(dir, 'rev-parse', 'HEAD');
}

function bareRef(bare: string, ref: string): string {
  const r = tryGit(bare, ['rev-parse', '--verify', '-q', ref]);
  return r.status === 0 ? r.stdout.trim() : '';
}

beforeAll(() => {
  home = tempDir('nyl-http-home-');
});

afterAll(async () => {
  await Promise.all(servers.splice(0).map((s) => s.close()));
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

describe('git over smart HTTP (git http-backend behind a Node server)', () => {
  let server: GitHttpServer;
  let bare: string;
  let remote: string;
  let work: string;
  let main1: string;

  beforeAll(async () => {
    const root = tempDir('nyl-http-root-');
    server = await startGitHttpServer(root);
    servers.push(server);
    const name = makeBareRepo(root, 'x');
    expect(name).toBe('x.git');
    bare = join(root, name);
    remote = `${server.url}/${name}`;
    expect(server.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(server.root).toBe(root);
  });

  it('clones an empty repository, then pushes a branch', () => {
    work = join(tempDir('nyl-http-work-'), 'w');
    const clone = tryGit(tempDir('nyl-http-cwd-'), ['clone', remote, work]);
    expect(clone.status, clone.stderr).toBe(0);
    expect(clone.stderr).toContain('empty repository');
    expect(server.requests).toContainEqual({
      method: 'GET',
      path: '/x.git/info/refs',
      service: 'git-upload-pack',
    });

    main1 = commit(work, 'a.txt', 'one\n', 'first');
    const before = server.requests.length;
    git(work, 'push', '-q', 'origin', 'HEAD:refs/heads/main');
    expect(bareRef(bare, 'refs/heads/main')).toBe(main1);
    const push = server.requests.slice(before);
    expect(push).toEqual([
      { method: 'GET', path: '/x.git/info/refs', service: 'git-receive-pack' },
      { method: 'POST', path: '/x.git/git-receive-pack' },
    ]);
  });

  it('ls-remote lists the pushed refs (protocol v2 through Git-Protocol)', () => {
    const before = server.requests.length;
    const out = git(work, '-c', 'protocol.version=2', 'ls-remote', remote);
    expect(out).toContain(`${main1}\trefs/heads/main`);
    // v2 discovery is a GET plus an ls-refs POST; v0 would have answered from the GET alone.
    expect(server.requests.slice(before)).toEqual([
      { method: 'GET', path: '/x.git/info/refs', service: 'git-upload-pack' },
      { method: 'POST', path: '/x.git/git-upload-pack' },
    ]);
  });

  it('pushes two refs atomically with leases, and rejects stale leases', () => {
    const base = git(work, 'rev-parse', 'HEAD');
    git(work, 'push', '-q', 'origin', `${base}:refs/heads/a`, `${base}:refs/heads/b`);
    const a2 = commit(work, 'a.txt', 'two\n', 'second');
    const b2 = commit(work, 'b.txt', 'bee\n', 'third');

    const ok = tryGit(work, [
      'push',
      '--atomic',
      '--porcelain',
      `--force-with-lease=refs/heads/a:${base}`,
      `--force-with-lease=refs/heads/b:${base}`,
      'origin',
      `${a2}:refs/heads/a`,
      `${b2}:refs/heads/b`,
    ]);
    expect(ok.status, ok.stderr).toBe(0);
    expect(ok.stdout).toMatch(/^ \t[0-9a-f]+:refs\/heads\/a\t[0-9a-f]+\.\.[0-9a-f]+$/m);
    expect(ok.stdout).toMatch(/^ \t[0-9a-f]+:refs\/heads\/b\t[0-9a-f]+\.\.[0-9a-f]+$/m);
    expect(ok.stdout).toContain('Done');
    expect(bareRef(bare, 'refs/heads/a')).toBe(a2);
    expect(bareRef(bare, 'refs/heads/b')).toBe(b2);

    // One lease stale: the atomic push changes neither ref.
    const a3 = commit(work, 'a.txt', 'three\n', 'fourth');
    const mixed = tryGit(work, [
      'push',
      '--atomic',
      '--porcelain',
      `--force-with-lease=refs/heads/a:${a2}`,
      `--force-with-lease=refs/heads/b:${base}`,
      'origin',
      `${a3}:refs/heads/a`,
      `${a3}:refs/heads/b`,
    ]);
    expect(mixed.status).not.toBe(0);
    expect(mixed.stdout).toMatch(/^!\t[0-9a-f]+:refs\/heads\/b\t\[rejected\] \(stale info\)$/m);
    expect(mixed.stdout).toMatch(/^!\t[0-9a-f]+:refs\/heads\/a\t\[rejected\] \(atomic push failed\)$/m);
    expect(bareRef(bare, 'refs/heads/a')).toBe(a2);
    expect(bareRef(bare, 'refs/heads/b')).toBe(b2);

    // A stale lease on its own, without --atomic.
    const stale = tryGit(work, [
      'push',
      '--porcelain',
      `--force-with-lease=refs/heads/a:${base}`,
      'origin',
      `${a3}:refs/heads/a`,
    ]);
    expect(stale.status).not.toBe(0);
    expect(stale.stdout).toMatch(/^!\t[0-9a-f]+:refs\/heads\/a\t\[rejected\] \(stale info\)$/m);
    expect(bareRef(bare, 'refs/heads/a')).toBe(a2);
  });

  it('fetches a custom ref namespace, with a gzip-encoded negotiation request', () => {
    // 40 refs at distinct commits: the v2 fetch request has 40 want lines (>1 KiB), which git gzips.
    const tips: string[] = [];
    for (let i = 0; i < 40; i++) tips.push(commit(work, 'n.txt', `n${i}\n`, `nyl ${i}`));
    git(work, 'push', '-q', 'origin', ...tips.map((t, i) => `${t}:refs/nyl/dev/r${i}`));
    expect(bareRef(bare, 'refs/nyl/dev/r39')).toBe(tips[39]);

    const other = join(tempDir('nyl-http-other-'), 'o');
    git(tempDir('nyl-http-cwd-'), 'clone', '-q', '--no-checkout', '--single-branch', '-b', 'main', remote, other);
    const before = server.requests.length;
    const fetch = tryGit(
      other,
      ['-c', 'protocol.version=2', 'fetch', 'origin', '+refs/nyl/dev/*:refs/nyl-remotes/origin/nyl/dev/*'],
      { GIT_TRACE_CURL: '1', GIT_TRACE_CURL_NO_DATA: '1' },
    );
    expect(fetch.status, fetch.stderr).toBe(0);
    expect(fetch.stderr).toMatch(/Send header: Content-Encoding: gzip/);
    const got = git(other, 'for-each-ref', '--format=%(objectname) %(refname)', 'refs/nyl-remotes/');
    const lines = got.split('\n');
    expect(lines).toHaveLength(40);
    expect(lines).toContain(`${tips[7]} refs/nyl-remotes/origin/nyl/dev/r7`);
    expect(git(other, 'cat-file', '-p', `${tips[39]}:n.txt`)).toBe('n39');
    const fetchRequests = server.requests.slice(before);
    expect(fetchRequests[0]).toEqual({ method: 'GET', path: '/x.git/info/refs', service: 'git-upload-pack' });
    expect(fetchRequests.slice(1).every((r) => r.method === 'POST' && r.path === '/x.git/git-upload-pack')).toBe(true);
  });

  it('pushes a 2 MB commit (chunked request body)', () => {
    const blob = randomBytes(2 * 1024 * 1024);
    const big = commit(work, 'big.bin', blob, 'big');
    const push = tryGit(work, ['push', 'origin', `${big}:refs/heads/big`], {
      GIT_TRACE_CURL: '1',
      GIT_TRACE_CURL_NO_DATA: '1',
    });
    expect(push.status, push.stderr).toBe(0);
    // Larger than http.postBuffer (1 MiB): git streams it chunked, without Content-Length.
    expect(push.stderr).toMatch(/Send header: Transfer-Encoding: chunked/);
    expect(bareRef(bare, 'refs/heads/big')).toBe(big);
    const stored = execFileSync('git', ['cat-file', 'blob', `${big}:big.bin`], { cwd: bare, maxBuffer: 8 << 20 });
    expect(stored.equals(blob)).toBe(true);
  });

  it('serves http-backend errors with their status', () => {
    const r = tryGit(work, ['ls-remote', `${server.url}/missing.git`]);
    expect(r.status).not.toBe(0);
    expect(r.stderr).toMatch(/not found|404/i);
    expect(server.requests.at(-1)).toEqual({
      method: 'GET',
      path: '/missing.git/info/refs',
      service: 'git-upload-pack',
    });
  });

  it('records both services', () => {
    const services = new Set(server.requests.map((r) => r.service).filter(Boolean));
    expect([...services].sort()).toEqual(['git-receive-pack', 'git-upload-pack']);
  });
});

describe('git over smart HTTP with Basic authentication', () => {
  let server: GitHttpServer;
  let bare: string;
  let work: string;

  beforeAll(async () => {
    const root = tempDir('nyl-http-auth-root-');
    server = await startGitHttpServer(root, { requireAuth: { user: 'deployer', password: 's3cret' } });
    servers.push(server);
    bare = join(root, makeBareRepo(root, 'x'));
    // A hook sees REMOTE_USER through http-backend and receive-pack.
    const hook = join(bare, 'hooks', 'post-receive');
    writeFileSync(hook, `#!/bin/sh\nprintf '%s' "$REMOTE_USER" > "$GIT_DIR/pushed-by"\n`);
    chmodSync(hook, 0o755);
    work = tempDir('nyl-http-auth-work-');
    git(work, 'init', '-q', '-b', 'main');
    commit(work, 'a.txt', 'one\n', 'first');
  });

  it('rejects a push without credentials', () => {
    const port = new URL(server.url).port;
    const r = tryGit(work, ['push', `http://127.0.0.1:${port}/x.git`, 'HEAD:refs/heads/main']);
    expect(r.status).not.toBe(0);
    expect(r.stderr).toMatch(/could not read Username|Authentication failed/);
    expect(bareRef(bare, 'refs/heads/main')).toBe('');
    expect(server.requests).toEqual([{ method: 'GET', path: '/x.git/info/refs', service: 'git-receive-pack' }]);
  });

  it('rejects wrong credentials', () => {
    const port = new URL(server.url).port;
    const r = tryGit(work, ['push', `http://deployer:wrong@127.0.0.1:${port}/x.git`, 'HEAD:refs/heads/main']);
    expect(r.status).not.toBe(0);
    expect(r.stderr).toMatch(/Authentication failed/);
    expect(bareRef(bare, 'refs/heads/main')).toBe('');
  });

  it('accepts a push with credentials in the URL and passes REMOTE_USER', () => {
    const port = new URL(server.url).port;
    const before = server.requests.length;
    const head = git(work, 'rev-parse', 'HEAD');
    const r = tryGit(work, ['push', `http://deployer:s3cret@127.0.0.1:${port}/x.git`, 'HEAD:refs/heads/main']);
    expect(r.status, r.stderr).toBe(0);
    expect(bareRef(bare, 'refs/heads/main')).toBe(head);
    expect(readFileSync(join(bare, 'pushed-by'), 'utf8')).toBe('deployer');
    const reqs = server.requests.slice(before);
    expect(reqs.filter((q) => q.service === 'git-receive-pack').length).toBeGreaterThanOrEqual(1);
    expect(reqs.at(-1)).toEqual({ method: 'POST', path: '/x.git/git-receive-pack' });

    const ls = tryGit(work, ['ls-remote', `http://deployer:s3cret@127.0.0.1:${port}/x.git`]);
    expect(ls.status, ls.stderr).toBe(0);
    expect(ls.stdout).toContain(`${head}\trefs/heads/main`);
  });
});

/** A push whose chunked body never ends, sent on a raw socket; resolves once the server has it. */
async function pushThatNeverEnds(server: GitHttpServer, name: string) {
  const rel = makeBareRepo(server.root, name);
  const socket = connect(Number(new URL(server.url).port), '127.0.0.1');
  socket.on('error', () => {});
  // http-backend (and receive-pack) read on, waiting for the rest.
  socket.write(
    `POST /${rel}/git-receive-pack HTTP/1.1\r\nHost: t\r\nContent-Type: application/x-git-receive-pack-request\r\nTransfer-Encoding: chunked\r\n\r\n8\r\n0064abcd\r\n`,
  );
  const until = Date.now() + 5_000;
  while (server.requests.length === 0 && Date.now() < until) await new Promise((r) => setTimeout(r, 20));
  expect(server.requests.map((q) => q.path)).toEqual([`/${rel}/git-receive-pack`]);
  return socket;
}

describe('closing the server', () => {
  it('ends while a client is still sending a push: the stuck http-backend is stopped, not waited for', async () => {
    const server = await startGitHttpServer(tempDir('nyl-http-close-'), { closeGraceMs: 500 });
    const socket = await pushThatNeverEnds(server, 'open');
    const started = Date.now();
    await server.close();
    expect(Date.now() - started).toBeLessThan(10_000);
    socket.destroy();
  }, 30_000);

  it('ends as soon as the answers in progress end, not at the end of the grace', async () => {
    const server = await startGitHttpServer(tempDir('nyl-http-close-'), { closeGraceMs: 20_000 });
    const socket = await pushThatNeverEnds(server, 'leaving');
    // The client goes away while the server closes: its answer ends then, and so does the close.
    setTimeout(() => socket.destroy(), 300);
    const started = Date.now();
    await server.close();
    expect(Date.now() - started).toBeLessThan(10_000);
  }, 30_000);
});
