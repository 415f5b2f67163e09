import { execFileSync, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { type FaultProxy, startFaultProxy } from './helpers/fault-proxy.js';
import { type GitHttpServer, makeBareRepo, startGitHttpServer } from './helpers/http-git.js';

// Drives real git through the fault proxy against `git http-backend`, one test per fault, and
// asserts what the server ended up with. Set FAULT_PROXY_REPORT=1 to print what git did each time.

const dirs: string[] = [];
const running = new Set<number>();
const observations: Record<string, unknown>[] = [];

function tempDir(prefix: string): string {
  const d = mkdtempSync(join(tmpdir(), prefix));
  dirs.push(d);
  return d;
}

let home: string;

/** Environment for client-side git: no prompts, no system or user config, fixed identity. */
function clientEnv(): NodeJS.ProcessEnv {
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
  };
  for (const k of ['GIT_ASKPASS', 'SSH_ASKPASS', 'GIT_DIR', 'GIT_WORK_TREE', 'GIT_INDEX_FILE']) delete env[k];
  for (const k of Object.keys(env)) if (k.startsWith('GIT_TRACE') || k.startsWith('GIT_HTTP_')) delete env[k];
  return env;
}

function git(cwd: string, ...args: string[]): string {
  return execFileSync('git', args, { cwd, env: clientEnv(), encoding: 'utf8', stdio: 'pipe' }).trim();
}

/** The object a ref points to in `bare`, or '' when it does not exist. */
function bareRef(bare: string, ref: string): string {
  try {
    return git(bare, 'rev-parse', '--verify', '-q', ref);
  } catch {
    return '';
  }
}

interface GitRun {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
  /** The hard timeout fired and the git process group was killed. */
  hung: boolean;
  ms: number;
}

/**
 * Runs git asynchronously in its own process group (git push starts git-remote-http, which starts
 * more); after `timeoutMs` the whole group is killed with SIGKILL, so no test can hang.
 */
function runGit(cwd: string, args: string[], timeoutMs: number): Promise<GitRun> {
  const t0 = Date.now();
  const child = spawn('git', args, { cwd, env: clientEnv(), stdio: ['ignore', 'pipe', 'pipe'], detached: true });
  const pid = child.pid;
  if (pid !== undefined) running.add(pid);
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (d) => {
    stdout += d;
  });
  child.stderr.setEncoding('utf8').on('data', (d) => {
    stderr += d;
  });
  let hung = false;
  const kill = () => {
    if (pid === undefined) return;
    try {
      process.kill(-pid, 'SIGKILL');
    } catch {
      // already gone
    }
  };
  const timer = setTimeout(() => {
    hung = true;
    kill();
  }, timeoutMs);
  return new Promise((resolve) => {
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      if (pid !== undefined) running.delete(pid);
      // git-remote-http may outlive a failed git push: never leave one behind.
      kill();
      resolve({ code, signal, stdout, stderr, hung, ms: Date.now() - t0 });
    });
  });
}

/** `git push --porcelain` status lines: flag, tab, from:to, tab, summary. */
function porcelainLines(stdout: string): string[] {
  return stdout.split('\n').filter((l) => /^[ +\-*=!]\t/.test(l));
}

function observe(label: string, run: GitRun, requests: unknown[], extra: Record<string, unknown> = {}): void {
  observations.push({
    label,
    code: run.code,
    signal: run.signal,
    hung: run.hung,
    ms: run.ms,
    stderr: run.stderr.split('\n').filter(Boolean),
    porcelain: porcelainLines(run.stdout),
    requests,
    ...extra,
  });
}

let server: GitHttpServer;
let proxy: FaultProxy;
let root: string;
let n = 0;

interface Fixture {
  name: string;
  bare: string;
  /** The repository through the proxy. */
  url: string;
  /** The repository straight from the server. */
  direct: string;
  work: string;
  head: string;
}

/** A fresh bare repository on the server and a local repository with one new commit on main. */
function fixture(content: string | Buffer = `change ${n}\n`): Fixture {
  const name = `r${++n}`;
  const bare = join(root, makeBareRepo(root, name));
  const work = tempDir('nyl-fp-work-');
  git(work, 'init', '-q', '-b', 'main');
  writeFileSync(join(work, 'a.txt'), content);
  git(work, 'add', 'a.txt');
  git(work, 'commit', '-q', '-m', 'change');
  return {
    name,
    bare,
    url: `${proxy.url}/${name}.git`,
    direct: `${server.url}/${name}.git`,
    work,
    head: git(work, 'rev-parse', 'HEAD'),
  };
}

const LOW_SPEED = ['-c', 'http.lowSpeedLimit=1000', '-c', 'http.lowSpeedTime=2'];

/** An atomic two-ref push through the proxy. */
function push(f: Fixture, config: string[] = [], timeoutMs = 10_000): Promise<GitRun> {
  return runGit(
    f.work,
    [...config, 'push', '--porcelain', '--atomic', f.url, 'HEAD:refs/heads/main', 'HEAD:refs/heads/side'],
    timeoutMs,
  );
}

/** Requests the proxy saw since `before`. */
function since(before: number) {
  return proxy.requests.slice(before);
}

/** What the proxy saw for `f`'s repository, and what the server saw: exactly the forwarded requests. */
function expectForwarded(f: Fixture): void {
  const prefix = `/${f.name}.git/`;
  const seen = proxy.requests.filter((q) => q.path.startsWith(prefix));
  const forwarded = seen
    .filter((q) => q.fault !== 'drop-request' && q.fault !== 'refuse')
    .map(({ fault: _fault, ...q }) => q);
  expect(server.requests.filter((q) => q.path.startsWith(prefix))).toEqual(forwarded);
}

const receivePack = (f: Fixture, fault?: string) => ({
  method: 'POST',
  path: `/${f.name}.git/git-receive-pack`,
  ...(fault ? { fault } : {}),
});

beforeAll(async () => {
  home = tempDir('nyl-fp-home-');
  root = tempDir('nyl-fp-root-');
  server = await startGitHttpServer(root);
  proxy = await startFaultProxy(server.url);
  expect(proxy.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
});

afterEach(async () => {
  await proxy.arm([]);
});

afterAll(async () => {
  for (const pid of running) {
    try {
      process.kill(-pid, 'SIGKILL');
    } catch {
      // already gone
    }
  }
  await proxy?.close();
  await server?.close();
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
  if (process.env.FAULT_PROXY_REPORT) console.log(JSON.stringify(observations, null, 2));
});

describe('fault proxy in front of git http-backend', () => {
  it('passes everything through when no rule is armed (chunked push, gzip fetch, ls-remote)', async () => {
    // Over http.postBuffer (1 MB) git sends the pack chunked, without Content-Length, after a
    // 4-byte probe POST: two receive-pack requests for one push.
    const f = fixture(randomBytes(2 * 1024 * 1024));
    const before = proxy.requests.length;
    const pushesBefore = proxy.pushes;
    const r = await push(f);
    observe('passthrough push (2 MB, chunked)', r, since(before));
    expect(r.code, r.stderr).toBe(0);
    expect(porcelainLines(r.stdout)).toHaveLength(2);
    expect(bareRef(f.bare, 'refs/heads/main')).toBe(f.head);
    expect(bareRef(f.bare, 'refs/heads/side')).toBe(f.head);
    expect(proxy.pushes).toBe(pushesBefore + 2);
    expect(since(before)).toEqual([
      { method: 'GET', path: `/${f.name}.git/info/refs`, service: 'git-receive-pack' },
      receivePack(f),
      receivePack(f),
    ]);
    expectForwarded(f);

    // Many refs make the upload-pack request big enough for git to gzip it.
    const refs = Array.from({ length: 60 }, (_, i) => `HEAD:refs/heads/many-branch-number-${i}`);
    git(f.work, 'push', '-q', f.direct, ...refs);
    const serverBefore = server.requests.length;
    const proxyBefore = proxy.requests.length;
    const clone = join(tempDir('nyl-fp-clone-'), 'c');
    const c = await runGit(home, ['-c', 'protocol.version=2', 'clone', '-q', f.url, clone], 10_000);
    expect(c.code, c.stderr).toBe(0);
    expect(git(clone, 'rev-parse', 'origin/many-branch-number-59')).toBe(f.head);
    const ls = await runGit(home, ['ls-remote', f.url], 10_000);
    expect(ls.code, ls.stderr).toBe(0);
    expect(ls.stdout).toContain(`${f.head}\trefs/heads/side`);
    expect(server.requests.slice(serverBefore)).toEqual(since(proxyBefore));
  });

  it('passes a 401 with WWW-Authenticate through, and the retry with credentials', async () => {
    const authRoot = tempDir('nyl-fp-auth-');
    const authServer = await startGitHttpServer(authRoot, { requireAuth: { user: 'op', password: 's3cret' } });
    const authProxy = await startFaultProxy(authServer.url);
    try {
      makeBareRepo(authRoot, 'private');
      const noCreds = await runGit(home, ['ls-remote', `${authProxy.url}/private.git`], 10_000);
      observe('401 without credentials', noCreds, authProxy.requests.slice());
      expect(noCreds.code).not.toBe(0);
      expect(noCreds.hung).toBe(false);
      // git only asks for credentials after a 401 that carries WWW-Authenticate: Basic.
      expect(noCreds.stderr).toContain('could not read Username');
      const withCreds = await runGit(
        home,
        ['ls-remote', `${authProxy.url.replace('http://', 'http://op:s3cret@')}/private.git`],
        10_000,
      );
      expect(withCreds.code, withCreds.stderr).toBe(0);
      expect(authProxy.requests.length).toBeGreaterThanOrEqual(3);
      expect(authServer.requests).toEqual(authProxy.requests);
    } finally {
      await authProxy.close();
      await authServer.close();
    }
  });

  it('drop-request (once): the dropped request never reaches the server', async () => {
    const f = fixture();
    await proxy.arm([{ match: 'receive-pack', nth: 1, fault: 'drop-request' }]);
    const before = proxy.requests.length;
    const pushesBefore = proxy.pushes;
    const r = await push(f);
    observe('drop-request once', r, since(before), { pushes: proxy.pushes - pushesBefore });
    expect(r.hung).toBe(false);
    expect(since(before)).toContainEqual(receivePack(f, 'drop-request'));
    expectForwarded(f);
    // curl resends a request that died on a reused connection before any byte came back, so the
    // push may still land through the retry; git's verdict must match the server either way.
    expect(bareRef(f.bare, 'refs/heads/main') === f.head).toBe(r.code === 0);
  });

  it('drop-request (and after): the server never applies the push; later connections are fine', async () => {
    const f = fixture();
    await proxy.arm([{ match: 'receive-pack', nth: 1, andAfter: true, fault: 'drop-request' }]);
    const before = proxy.requests.length;
    const pushesBefore = proxy.pushes;
    const r = await push(f);
    observe('drop-request and after', r, since(before), { pushes: proxy.pushes - pushesBefore });
    expect(r.hung).toBe(false);
    expect(r.code).not.toBe(0);
    expect(porcelainLines(r.stdout)).toEqual([]);
    expect(bareRef(f.bare, 'refs/heads/main')).toBe('');
    expect(bareRef(f.bare, 'refs/heads/side')).toBe('');
    expect(proxy.pushes - pushesBefore).toBeGreaterThanOrEqual(1);
    expect(since(before).filter((q) => q.method === 'POST')).toEqual(
      since(before)
        .filter((q) => q.method === 'POST')
        .map(() => receivePack(f, 'drop-request')),
    );
    expectForwarded(f);

    await proxy.arm([]);
    const again = await push(f);
    expect(again.code, again.stderr).toBe(0);
    expect(bareRef(f.bare, 'refs/heads/main')).toBe(f.head);
  });

  it('drop-response: the server applied the push, git hears nothing and fails', async () => {
    const f = fixture();
    await proxy.arm([{ match: 'receive-pack', nth: 1, fault: 'drop-response' }]);
    const before = proxy.requests.length;
    const pushesBefore = proxy.pushes;
    const r = await push(f);
    observe('drop-response once', r, since(before), { pushes: proxy.pushes - pushesBefore });
    expect(r.hung).toBe(false);
    expect(r.code).not.toBe(0);
    expect(bareRef(f.bare, 'refs/heads/main')).toBe(f.head);
    expect(bareRef(f.bare, 'refs/heads/side')).toBe(f.head);
    expect(since(before)).toContainEqual(receivePack(f, 'drop-response'));
    expectForwarded(f);

    const g = fixture();
    await proxy.arm([{ match: 'receive-pack', nth: 1, andAfter: true, fault: 'drop-response' }]);
    const r2 = await push(g);
    observe(
      'drop-response and after',
      r2,
      proxy.requests.filter((q) => q.path.startsWith(`/${g.name}.git/`)),
    );
    expect(r2.hung).toBe(false);
    expect(r2.code).not.toBe(0);
    expect(porcelainLines(r2.stdout)).toEqual([]);
    expect(bareRef(g.bare, 'refs/heads/main')).toBe(g.head);
    expectForwarded(g);
  });

  it('stall-response: git push hangs by default, low-speed limits end it', async () => {
    const f = fixture();
    await proxy.arm([{ match: 'receive-pack', nth: 1, andAfter: true, fault: 'stall-response' }]);
    let before = proxy.requests.length;
    const stuck = await push(f, [], 3000);
    observe('stall-response default', stuck, since(before));
    // git sets no overall timeout: only the hard kill ended it.
    expect(stuck.hung).toBe(true);
    expect(bareRef(f.bare, 'refs/heads/main')).toBe(f.head);
    expect(since(before)).toContainEqual(receivePack(f, 'stall-response'));
    expectForwarded(f);

    const g = fixture();
    before = proxy.requests.length;
    const limited = await push(g, LOW_SPEED, 10_000);
    observe('stall-response low-speed', limited, since(before));
    expect(limited.hung).toBe(false);
    expect(limited.code).not.toBe(0);
    expect(limited.ms).toBeLessThan(8000);
    expect(bareRef(g.bare, 'refs/heads/main')).toBe(g.head);
    expectForwarded(g);

    // A bounded stall ends with the socket closed before any byte of the answer.
    const h = fixture();
    await proxy.arm([{ match: 'receive-pack', nth: 1, andAfter: true, fault: 'stall-response', stallMs: 300 }]);
    before = proxy.requests.length;
    const bounded = await push(h, [], 10_000);
    observe('stall-response stallMs 300', bounded, since(before));
    expect(bounded.hung).toBe(false);
    expect(bounded.code).not.toBe(0);
    expect(bounded.ms).toBeGreaterThanOrEqual(300);
    expect(bareRef(h.bare, 'refs/heads/main')).toBe(h.head);
    expectForwarded(h);
  });

  it('stall-response: close() ends a stalled connection promptly', async () => {
    const own = await startFaultProxy(server.url);
    try {
      const f = { ...fixture(), url: '' };
      f.url = `${own.url}/${f.name}.git`;
      await own.arm([{ match: 'receive-pack', nth: 1, andAfter: true, fault: 'stall-response' }]);
      const pending = push(f, [], 10_000);
      // Once the server has the ref, the proxy holds the complete answer and stalls.
      const deadline = Date.now() + 5000;
      while (bareRef(f.bare, 'refs/heads/main') !== f.head && Date.now() < deadline) {
        await new Promise((r) => setTimeout(r, 20));
      }
      await new Promise((r) => setTimeout(r, 100));
      const t0 = Date.now();
      await own.close();
      expect(Date.now() - t0).toBeLessThan(1000);
      const r = await pending;
      observe('stall-response then close()', r, own.requests);
      expect(own.pushes).toBe(1);
      expect(r.hung).toBe(false);
      expect(r.code).not.toBe(0);
      expect(bareRef(f.bare, 'refs/heads/main')).toBe(f.head);
    } finally {
      await own.close();
    }
  });

  it('truncate-response: the push is applied, git gets a cut-off answer', async () => {
    const f = fixture();
    await proxy.arm([{ match: 'receive-pack', nth: 1, andAfter: true, fault: 'truncate-response' }]);
    let before = proxy.requests.length;
    const r = await push(f, [], 5000);
    observe('truncate-response default', r, since(before));
    expect(r.hung).toBe(false);
    expect(r.code).not.toBe(0);
    expect(porcelainLines(r.stdout)).toEqual([]);
    expect(bareRef(f.bare, 'refs/heads/main')).toBe(f.head);
    expect(since(before)).toContainEqual(receivePack(f, 'truncate-response'));
    expectForwarded(f);

    const g = fixture();
    await proxy.arm([{ match: 'receive-pack', nth: 1, fault: 'truncate-response', truncateBytes: 0 }]);
    before = proxy.requests.length;
    const limited = await push(g, LOW_SPEED, 10_000);
    observe('truncate-response (0 bytes) low-speed', limited, since(before));
    expect(limited.hung).toBe(false);
    expect(limited.code).not.toBe(0);
    expect(limited.ms).toBeLessThan(8000);
    expect(bareRef(g.bare, 'refs/heads/main')).toBe(g.head);
    expectForwarded(g);
  });

  it('refuse: push, ls-remote and fetch all fail and the server sees nothing', async () => {
    const f = fixture();
    git(f.work, 'push', '-q', f.direct, 'HEAD:refs/heads/seed');
    const serverBefore = server.requests.length;
    await proxy.arm([{ match: 'any', nth: 1, andAfter: true, fault: 'refuse' }]);
    let before = proxy.requests.length;
    const p = await push(f);
    observe('refuse push', p, since(before));
    expect(p.hung).toBe(false);
    expect(p.code).not.toBe(0);
    expect(porcelainLines(p.stdout)).toEqual([]);
    expect(bareRef(f.bare, 'refs/heads/main')).toBe('');

    before = proxy.requests.length;
    const ls = await runGit(f.work, ['ls-remote', f.url], 10_000);
    observe('refuse ls-remote', ls, since(before));
    expect(ls.hung).toBe(false);
    expect(ls.code).not.toBe(0);
    expect(since(before)[0]).toEqual({
      method: 'GET',
      path: `/${f.name}.git/info/refs`,
      service: 'git-upload-pack',
      fault: 'refuse',
    });

    before = proxy.requests.length;
    const fe = await runGit(f.work, ['fetch', f.url, 'refs/heads/seed:refs/remotes/x/seed'], 10_000);
    observe('refuse fetch', fe, since(before));
    expect(fe.hung).toBe(false);
    expect(fe.code).not.toBe(0);
    expect(bareRef(f.work, 'refs/remotes/x/seed')).toBe('');
    expect(server.requests.length).toBe(serverBefore);
    expect(proxy.requests.slice(-3).every((q) => q.fault === 'refuse')).toBe(true);
  });
});
