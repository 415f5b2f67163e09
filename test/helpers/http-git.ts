import { execFileSync } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
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
  /** Stops listening, waits for in-flight `git http-backend` processes, then ends the server thread. */
  close(): Promise<void>;
}

export interface GitHttpServerOptions {
  /** Answer 401 (`WWW-Authenticate: Basic realm="git"`) unless Basic credentials match. */
  requireAuth?: { user: string; password: string };
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
}

type FromWorker = { type: 'listening'; port: number } | { type: 'closed' };

/**
 * The worker thread: plain CommonJS JavaScript, run with `eval: true` (a worker cannot load this
 * TypeScript file, and the test run has no loader for it).
 */
const WORKER_SOURCE = String.raw`
'use strict';
const { spawn } = require('node:child_process');
const { createServer } = require('node:http');
const { parentPort, workerData } = require('node:worker_threads');

const { root, requireAuth, log, baseEnv } = workerData;
const HEADER = ${LOG_HEADER};
const counters = new Int32Array(log, 0, 2);
const bytes = new Uint8Array(log);
const encoder = new TextEncoder();

function record(entry) {
  const line = encoder.encode(JSON.stringify(entry) + '\n');
  const at = Atomics.load(counters, 0);
  if (HEADER + at + line.length > bytes.length) {
    Atomics.store(counters, 1, 1);
    return;
  }
  bytes.set(line, HEADER + at);
  Atomics.store(counters, 0, at + line.length);
}

function basicUser(req) {
  const m = /^Basic\s+(\S+)\s*$/i.exec(req.headers.authorization || '');
  if (!m) return undefined;
  const decoded = Buffer.from(m[1], 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  if (colon < 0) return undefined;
  const user = decoded.slice(0, colon);
  const password = decoded.slice(colon + 1);
  return user === requireAuth.user && password === requireAuth.password ? user : undefined;
}

// http-backend ends its headers with CRLF CRLF; accept bare LF LF too, as CGI allows.
function headerEnd(buf) {
  const crlf = buf.indexOf('\r\n\r\n');
  const lf = buf.indexOf('\n\n');
  if (crlf < 0 && lf < 0) return undefined;
  if (lf < 0 || (crlf >= 0 && crlf < lf)) return { at: crlf, sep: 4 };
  return { at: lf, sep: 2 };
}

const inFlight = new Set();

function handle(req, res) {
  const url = new URL(req.url || '/', 'http://127.0.0.1');
  const method = req.method || 'GET';
  const service = url.searchParams.get('service');
  record(service === null ? { method, path: url.pathname } : { method, path: url.pathname, service });

  let remoteUser;
  if (requireAuth) {
    remoteUser = basicUser(req);
    if (remoteUser === undefined) {
      // Drain the body so the connection stays usable for the retry with credentials.
      req.resume();
      res.writeHead(401, { 'WWW-Authenticate': 'Basic realm="git"', 'Content-Type': 'text/plain' });
      res.end('authentication required\n');
      return;
    }
  }

  const env = Object.assign({}, baseEnv, {
    GIT_PROJECT_ROOT: root,
    GIT_HTTP_EXPORT_ALL: '1',
    PATH_INFO: decodeURIComponent(url.pathname),
    QUERY_STRING: url.search.replace(/^\?/, ''),
    REQUEST_METHOD: method,
    REMOTE_ADDR: '127.0.0.1',
    GATEWAY_INTERFACE: 'CGI/1.1',
    SERVER_PROTOCOL: 'HTTP/' + req.httpVersion,
  });
  if (req.headers['content-type']) env.CONTENT_TYPE = req.headers['content-type'];
  // git sends bodies over http.postBuffer chunked, without Content-Length: CONTENT_LENGTH is then
  // left unset and http-backend reads stdin to EOF, so stdin must be ended with the request.
  if (req.headers['content-length'] !== undefined) env.CONTENT_LENGTH = req.headers['content-length'];
  // http-backend inflates a gzip'd body itself when told the encoding; the raw body goes through.
  if (req.headers['content-encoding']) env.HTTP_CONTENT_ENCODING = req.headers['content-encoding'];
  const protocol = req.headers['git-protocol'];
  if (typeof protocol === 'string') {
    env.GIT_PROTOCOL = protocol;
    env.HTTP_GIT_PROTOCOL = protocol;
  }
  if (remoteUser !== undefined) env.REMOTE_USER = remoteUser;

  const child = spawn('git', ['http-backend'], { env, stdio: ['pipe', 'pipe', 'pipe'] });
  let stderr = '';
  child.stderr.setEncoding('utf8');
  child.stderr.on('data', (d) => {
    stderr += d;
  });
  // http-backend may answer (403, 404) without reading the body: ignore EPIPE on its stdin.
  child.stdin.on('error', () => {});
  req.pipe(child.stdin);

  let head = Buffer.alloc(0);
  let started = false;
  const onData = (chunk) => {
    head = Buffer.concat([head, chunk]);
    const end = headerEnd(head);
    if (!end) return;
    child.stdout.off('data', onData);
    child.stdout.pause();
    const headers = {};
    let status = 200;
    let statusMessage;
    for (const line of head.subarray(0, end.at).toString('latin1').split(/\r?\n/)) {
      const colon = line.indexOf(':');
      if (colon <= 0) continue;
      const name = line.slice(0, colon).trim();
      const value = line.slice(colon + 1).trim();
      if (name.toLowerCase() === 'status') {
        const m = /^(\d{3})\s*(.*)$/.exec(value);
        if (m) {
          status = Number(m[1]);
          statusMessage = m[2] || undefined;
        }
        continue;
      }
      const prev = headers[name];
      headers[name] = prev === undefined ? value : [].concat(prev, value);
    }
    started = true;
    if (statusMessage) res.writeHead(status, statusMessage, headers);
    else res.writeHead(status, headers);
    const rest = head.subarray(end.at + end.sep);
    if (rest.length > 0) res.write(rest);
    child.stdout.pipe(res);
  };
  child.stdout.on('data', onData);

  // A client that goes away must not leave http-backend blocked on a full pipe.
  res.on('close', () => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
  });

  const done = new Promise((resolve) => {
    child.on('error', (err) => {
      stderr += String(err);
    });
    child.on('close', (code, signal) => {
      if (!started && !res.headersSent && !res.destroyed) {
        res.writeHead(502, { 'Content-Type': 'text/plain' });
        res.end('git http-backend exited (' + (signal || code) + ') before sending headers\n' + stderr);
      } else if (!res.writableEnded && !res.destroyed) {
        res.end();
      }
      resolve();
    });
  });
  inFlight.add(done);
  done.then(() => inFlight.delete(done));
}

const server = createServer(handle);
server.listen(0, '127.0.0.1', () => {
  parentPort.postMessage({ type: 'listening', port: server.address().port });
});

parentPort.on('message', async (msg) => {
  if (msg !== 'close') return;
  const stopped = new Promise((resolve) => server.close(() => resolve()));
  server.closeIdleConnections();
  while (inFlight.size > 0) await Promise.all([...inFlight]);
  server.closeAllConnections();
  await stopped;
  parentPort.postMessage({ type: 'closed' });
  parentPort.close();
});
`;

export async function startGitHttpServer(root: string, opts: GitHttpServerOptions = {}): Promise<GitHttpServer> {
  const log = new SharedArrayBuffer(LOG_HEADER + LOG_BYTES);
  const baseEnv: Record<string, string> = {};
  if (process.env.PATH !== undefined) baseEnv.PATH = process.env.PATH;
  if (process.env.HOME !== undefined) baseEnv.HOME = process.env.HOME;
  const data: WorkerData = { root, log, baseEnv, ...(opts.requireAuth ? { requireAuth: opts.requireAuth } : {}) };
  const worker = new Worker(WORKER_SOURCE, { eval: true, workerData: data });

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
