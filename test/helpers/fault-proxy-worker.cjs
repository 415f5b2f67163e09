// Fault-injecting HTTP proxy for tests: a worker thread that sits in front of a smart-HTTP git
// server (helpers/http-git.ts) and passes requests through, except the ones the armed rules pick,
// which it drops, stalls, truncates or refuses. Runs off the test's main thread for the same reason
// as git-http-worker.cjs: tests call synchronous `execFileSync('git', …)` through it.
// Plain CommonJS, started by helpers/fault-proxy.ts with `new Worker(path, { workerData })`.
'use strict';
const http = require('node:http');
const { parentPort, workerData } = require('node:worker_threads');

const { upstream, log } = workerData;
const up = new URL(upstream);
/** Int32 slots at the start of `log`: [0] bytes of entries written, [1] overflow flag, [2] receive-pack POSTs. */
const HEADER = 16;
const counters = new Int32Array(log, 0, 4);
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

/** Hop-by-hop headers: they describe one connection, so node frames each side itself. */
const HOP = new Set([
  'connection',
  'keep-alive',
  'proxy-connection',
  'transfer-encoding',
  'te',
  'trailer',
  'upgrade',
  'expect',
]);

let rules = [];
let seen = { 'receive-pack': 0, 'upload-pack': 0, any: 0 };
let closing = false;
const sockets = new Set();
const timers = new Set();
const upstreamRequests = new Set();

function kindOf(method, path) {
  if (method !== 'POST') return undefined;
  if (path.endsWith('/git-receive-pack')) return 'receive-pack';
  if (path.endsWith('/git-upload-pack')) return 'upload-pack';
  return undefined;
}

/** Counts the request against every match it belongs to, then returns the first rule that picks it. */
function pickRule(kind) {
  seen.any++;
  if (kind) seen[kind]++;
  for (const rule of rules) {
    if (rule.match !== 'any' && rule.match !== kind) continue;
    const n = seen[rule.match];
    if (n === rule.nth || (rule.andAfter && n > rule.nth)) return rule;
  }
  return undefined;
}

function later(ms, fn) {
  const t = setTimeout(() => {
    timers.delete(t);
    fn();
  }, ms);
  timers.add(t);
  return t;
}

/** Flat raw header list without hop-by-hop headers (and without `drop`, lower-case names). */
function filterRaw(raw, drop) {
  const out = [];
  for (let i = 0; i + 1 < raw.length; i += 2) {
    const name = raw[i].toLowerCase();
    if (HOP.has(name) || drop?.has(name)) continue;
    out.push(raw[i], raw[i + 1]);
  }
  return out;
}

function applyFault(rule, socket, upRes, body) {
  if (socket.destroyed) return;
  switch (rule.fault) {
    case 'drop-response':
      socket.destroy();
      return;
    case 'stall-response': {
      if (rule.stallMs !== undefined) {
        const t = later(rule.stallMs, () => socket.destroy());
        socket.once('close', () => {
          clearTimeout(t);
          timers.delete(t);
        });
      }
      return;
    }
    case 'truncate-response': {
      const n = Math.max(0, rule.truncateBytes ?? 4);
      // The body was collected whole, so frame it with its full Content-Length (whatever framing
      // the upstream used): the client then knows exactly how much is missing.
      let head = `HTTP/1.1 ${upRes.statusCode} ${upRes.statusMessage || ''}\r\n`;
      const raw = filterRaw(upRes.rawHeaders, new Set(['content-length']));
      for (let i = 0; i < raw.length; i += 2) head += `${raw[i]}: ${raw[i + 1]}\r\n`;
      head += `Content-Length: ${body.length}\r\n\r\n`;
      socket.write(Buffer.concat([Buffer.from(head, 'latin1'), body.subarray(0, n)]), () => socket.destroy());
      return;
    }
    default:
      socket.destroy();
  }
}

function forward(req, res, rule) {
  const socket = req.socket;
  const headers = {};
  for (const [name, value] of Object.entries(req.headers)) if (!HOP.has(name)) headers[name] = value;
  const upReq = http.request({
    host: up.hostname,
    port: up.port,
    method: req.method,
    path: req.url,
    headers,
    agent: false,
  });
  upstreamRequests.add(upReq);
  let complete = false;
  upReq.on('close', () => upstreamRequests.delete(upReq));
  upReq.on('error', (err) => {
    if (socket.destroyed) return;
    if (!rule && !res.headersSent) {
      res.writeHead(502, { 'Content-Type': 'text/plain' });
      res.end(`fault proxy: upstream failed: ${err.message}\n`);
    } else {
      socket.destroy();
    }
  });
  // A client that goes away before its answer is complete aborts the upstream request too, as a
  // direct connection would have.
  res.on('close', () => {
    if (!complete) upReq.destroy();
  });
  req.on('error', () => upReq.destroy());
  req.pipe(upReq);

  upReq.on('response', (upRes) => {
    upRes.on('error', () => socket.destroy());
    if (!rule) {
      upRes.on('end', () => {
        complete = true;
      });
      res.writeHead(upRes.statusCode, upRes.statusMessage, filterRaw(upRes.rawHeaders));
      upRes.pipe(res);
      return;
    }
    const chunks = [];
    upRes.on('data', (c) => chunks.push(c));
    upRes.on('end', () => {
      complete = true;
      applyFault(rule, socket, upRes, Buffer.concat(chunks));
    });
  });
}

function handle(req, res) {
  const url = new URL(req.url || '/', 'http://127.0.0.1');
  const method = req.method || 'GET';
  const service = url.searchParams.get('service');
  const kind = kindOf(method, url.pathname);
  const rule = closing ? undefined : pickRule(kind);
  const entry = { method, path: url.pathname };
  if (service !== null) entry.service = service;
  if (rule) entry.fault = rule.fault;
  record(entry);
  if (kind === 'receive-pack') Atomics.add(counters, 2, 1);

  const socket = req.socket;
  if (closing) {
    socket.destroy();
    return;
  }
  if (rule && rule.fault === 'refuse') {
    socket.destroy();
    return;
  }
  if (rule && rule.fault === 'drop-request') {
    req.on('error', () => socket.destroy());
    req.on('end', () => socket.destroy());
    req.resume();
    return;
  }
  forward(req, res, rule);
}

const server = http.createServer(handle);
server.on('connection', (socket) => {
  sockets.add(socket);
  socket.on('close', () => sockets.delete(socket));
  if (closing) socket.destroy();
});
server.on('clientError', (_err, socket) => socket.destroy());
server.listen(0, '127.0.0.1', () => {
  parentPort.postMessage({ type: 'listening', port: server.address().port });
});

parentPort.on('message', (msg) => {
  if (msg.type === 'arm') {
    rules = msg.rules;
    seen = { 'receive-pack': 0, 'upload-pack': 0, any: 0 };
    parentPort.postMessage({ type: 'armed', id: msg.id });
    return;
  }
  if (msg.type !== 'close' || closing) return;
  closing = true;
  for (const t of timers) clearTimeout(t);
  timers.clear();
  for (const r of upstreamRequests) r.destroy();
  for (const s of sockets) s.destroy();
  server.close(() => {
    parentPort.postMessage({ type: 'closed' });
    parentPort.close();
  });
  server.closeAllConnections();
});
