// Smart-HTTP git server for tests and benchmarks: a worker thread that answers every request by
// running git's own `git http-backend` (CGI). Plain CommonJS so both TypeScript tests and
// scripts/bench.mjs can start it with `new Worker(path, { workerData })`.
'use strict';
const { spawn } = require('node:child_process');
const { createServer } = require('node:http');
const { parentPort, workerData } = require('node:worker_threads');

const { root, requireAuth, log, baseEnv, closeGraceMs = 5000 } = workerData;
const HEADER = 8;
const counters = new Int32Array(log, 0, 2);
const bytes = new Uint8Array(log);
const encoder = new TextEncoder();

function record(entry) {
  const line = encoder.encode(`${JSON.stringify(entry)}\n`);
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
    SERVER_PROTOCOL: `HTTP/${req.httpVersion}`,
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

  // A client that goes away must not leave http-backend blocked on a full pipe, nor on a body
  // that will never end: its stdin is closed and it is stopped. Its stdout is read to the end,
  // as a pipe that lost its reader is paused and would otherwise never report EOF.
  res.on('close', () => {
    if (res.writableFinished || child.exitCode !== null || child.signalCode !== null) return;
    req.unpipe(child.stdin);
    child.stdin.destroy();
    child.stdout.resume();
    child.kill('SIGTERM');
  });

  const done = new Promise((resolve) => {
    child.on('error', (err) => {
      stderr += String(err);
    });
    child.on('close', (code, signal) => {
      if (!started && !res.headersSent && !res.destroyed) {
        res.writeHead(502, { 'Content-Type': 'text/plain' });
        res.end(`git http-backend exited (${signal || code}) before sending headers\n${stderr}`);
      } else if (!res.writableEnded && !res.destroyed) {
        res.end();
      }
      resolve();
    });
  });
  const entry = { done, child, what: `${method} ${url.pathname}`, since: Date.now() };
  inFlight.add(entry);
  done.then(() => inFlight.delete(entry));
}

/** Waits for the answers in progress, up to the grace; then kills what is left and says so. */
async function settleInFlight() {
  let expired = false;
  let timer;
  const grace = new Promise((resolve) => {
    timer = setTimeout(() => {
      expired = true;
      resolve();
    }, closeGraceMs);
  });
  // Again while any is left: a kept-alive connection may have started another meanwhile.
  while (inFlight.size > 0 && !expired) await Promise.race([Promise.all([...inFlight].map((e) => e.done)), grace]);
  // Cleared, or it would keep this thread (and the close) alive until the grace ran out.
  clearTimeout(timer);
  if (inFlight.size === 0) return;
  const now = Date.now();
  const stuck = [...inFlight].map((e) => `${e.what} (pid ${e.child.pid}, ${now - e.since} ms)`);
  console.error(`git http server: ${stuck.length} answer(s) still running at close, killed: ${stuck.join('; ')}`);
  for (const { child } of inFlight) {
    child.kill('SIGKILL');
    for (const stream of [child.stdin, child.stdout, child.stderr]) stream?.destroy();
  }
  inFlight.clear();
}

const server = createServer(handle);
server.listen(0, '127.0.0.1', () => {
  parentPort.postMessage({ type: 'listening', port: server.address().port });
});

parentPort.on('message', async (msg) => {
  if (msg !== 'close') return;
  const stopped = new Promise((resolve) => server.close(() => resolve()));
  server.closeIdleConnections();
  await settleInFlight();
  server.closeAllConnections();
  await stopped;
  parentPort.postMessage({ type: 'closed' });
  parentPort.close();
});
