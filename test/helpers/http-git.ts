import { execFileSync } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';

/**
 * A git remote served over smart HTTP on 127.0.0.1: a small Node web server that hands every
 * request to `git http-backend` as a CGI script, so git itself speaks the protocol.
 *
 * The web server runs in a worker thread, so tests may drive it with synchronous
 * `execFileSync('git', …)` (as `helpers/repo.ts` does): a server on the test's own event loop
 * would never answer while that loop is blocked, and the git client would hang.
 */
export interface GitHttpServer {
  /** Base URL without a trailing slash, e.g. `http://127.0.0.1:PORT`; append `/name.git`. */
  url: string;
  /** The GIT_PROJECT_ROOT repositories are served from. */
  root: string;
  /**
   * Every request received, in arrival order, including ones answered 401, so tests can count round
   * trips. `service` is the `?service=` query parameter (only `info/refs` discovery carries one).
   * Up to date as soon as a git command returns, even a synchronous one.
   */
  requests: { method: string; path: string; service?: string }[];
  /**
   * Stops listening, waits for in-flight `git http-backend` processes (up to `closeGraceMs`, then
   * kills them and says so on stderr), then ends the server thread.
   */
  close(): Promise<void>;
}

export interface GitHttpServerOptions {
  /** Answer 401 (`WWW-Authenticate: Basic realm="git"`) unless Basic credentials match. */
  requireAuth?: { user: string; password: string };
  /** How long close() waits for answers in progress before it kills their processes (default 5 s). */
  closeGraceMs?: number;
}

/** Creates `root/name.git` as a bare repository that accepts pushes over HTTP; returns `name.git`. */
export function makeBareRepo(root: string, name: string): string {
  const rel = `${name}.git`;
  const dir = join(root, rel);
  mkdirSync(dir, { recursive: true });
  const env = { ...process.env, GIT_CONFIG_NOSYSTEM: '1' };
  execFileSync('git', ['init', '--bare', '-q', dir], { env, stdio: 'pipe' });
  execFileSync('git', ['-C', dir, 'config', 'http.receivepack', 'true'], { env, stdio: 'pipe' });
  return rel;
}

/** Bytes of shared memory for the request log (one JSON line per request, ~60 bytes each). */
const LOG_BYTES = 4 * 1024 * 1024;
/** Int32 slots at the start of the log: [0] bytes of entries written, [1] 1 once an entry did not fit. */
const LOG_HEADER = 8;

interface WorkerData {
  root: string;
  requireAuth?: { user: string; password: string };
  log: SharedArrayBuffer;
  baseEnv: Record<string, string>;
  closeGraceMs: number;
}

type FromWorker = { type: 'listening'; port: number } | { type: 'closed' };

const WORKER_FILE = fileURLToPath(new URL('./git-http-worker.cjs', import.meta.url));

export async function startGitHttpServer(root: string, opts: GitHttpServerOptions = {}): Promise<GitHttpServer> {
  const log = new SharedArrayBuffer(LOG_HEADER + LOG_BYTES);
  const baseEnv: Record<string, string> = {};
  if (process.env.PATH !== undefined) baseEnv.PATH = process.env.PATH;
  if (process.env.HOME !== undefined) baseEnv.HOME = process.env.HOME;
  const closeGraceMs = opts.closeGraceMs ?? 5000;
  const data: WorkerData = {
    root,
    log,
    baseEnv,
    closeGraceMs,
    ...(opts.requireAuth ? { requireAuth: opts.requireAuth } : {}),
  };
  const worker = new Worker(WORKER_FILE, { workerData: data });

  let exited = false;
  const exit = new Promise<void>((resolve) =>
    worker.once('exit', () => {
      exited = true;
      resolve();
    }),
  );
  const port = await new Promise<number>((resolve, reject) => {
    const onMessage = (msg: FromWorker) => {
      if (msg.type !== 'listening') return;
      worker.off('error', reject);
      worker.off('message', onMessage);
      resolve(msg.port);
    };
    worker.on('message', onMessage);
    worker.once('error', reject);
    void exit.then(() => reject(new Error('git http server thread exited before listening')));
  });
  worker.on('error', (err) => {
    console.error('git http server thread failed:', err);
  });

  // Read the worker's log straight from shared memory, so entries are visible even while this
  // thread was blocked in execFileSync (no message needs to be processed first).
  const counters = new Int32Array(log, 0, 2);
  const bytes = new Uint8Array(log);
  const decoder = new TextDecoder();
  const requests: GitHttpServer['requests'] = [];
  let read = 0;
  const sync = () => {
    if (Atomics.load(counters, 1) === 1) throw new Error('git http server request log overflowed');
    const written = Atomics.load(counters, 0);
    if (written === read) return;
    const text = decoder.decode(bytes.slice(LOG_HEADER + read, LOG_HEADER + written));
    read = written;
    for (const line of text.split('\n')) if (line) requests.push(JSON.parse(line));
  };

  let closing: Promise<void> | undefined;
  return {
    url: `http://127.0.0.1:${port}`,
    root,
    get requests() {
      sync();
      return requests;
    },
    close() {
      closing ??= (async () => {
        if (!exited) worker.postMessage('close');
        await exit;
        sync();
      })();
      return closing;
    },
  };
}
