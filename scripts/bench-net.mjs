// A git remote over smart HTTP for `npm run bench`: git's own `git http-backend` served by the test
// suite's server (test/helpers/git-http-worker.cjs, which logs every request), behind a TCP proxy
// that counts the bytes each way, so a command's wire cost is measured where a runner pays it.
// Both run in worker threads: the benchmark drives git with synchronous spawns.
import net from 'node:net';
import { fileURLToPath } from 'node:url';
import { isMainThread, parentPort, Worker, workerData } from 'node:worker_threads';

const HTTP_WORKER = fileURLToPath(new URL('../test/helpers/git-http-worker.cjs', import.meta.url));
const LOG_BYTES = 16 * 1024 * 1024;
const PROXY = 'nyl-bench-proxy';

if (!isMainThread && workerData?.role === PROXY) runProxy(workerData);

/** Proxy side (worker thread): counters[0] bytes server → client, [1] client → server, [2] connections. */
function runProxy({ port, counters }) {
  const c = new BigInt64Array(counters);
  const sockets = new Set();
  const server = net.createServer((client) => {
    Atomics.add(c, 2, 1n);
    const upstream = net.connect(port, '127.0.0.1');
    sockets.add(client);
    sockets.add(upstream);
    client.on('data', (d) => Atomics.add(c, 1, BigInt(d.length)));
    upstream.on('data', (d) => Atomics.add(c, 0, BigInt(d.length)));
    client.pipe(upstream);
    upstream.pipe(client);
    const end = () => {
      client.destroy();
      upstream.destroy();
      sockets.delete(client);
      sockets.delete(upstream);
    };
    for (const s of [client, upstream]) {
      s.on('error', end);
      s.on('close', end);
    }
  });
  server.listen(0, '127.0.0.1', () => parentPort.postMessage({ type: 'listening', port: server.address().port }));
  parentPort.on('message', (m) => {
    if (m !== 'close') return;
    for (const s of sockets) s.destroy();
    server.close(() => parentPort.close());
  });
}

async function listening(worker) {
  return new Promise((res, rej) => {
    worker.once('error', rej);
    worker.on('message', (m) => m.type === 'listening' && res(m.port));
  });
}

function closeWorker(worker) {
  return new Promise((res) => {
    worker.once('exit', res);
    worker.postMessage('close');
  });
}

/**
 * Serves every bare repository under `root` at `${url}/<name>.git`. `requests()` is every HTTP
 * request the server saw; `bytes()` the proxy's totals; `mark()` a snapshot to diff a command by.
 */
export async function startRemoteServer(root) {
  const logBuf = new SharedArrayBuffer(8 + LOG_BYTES);
  const baseEnv = { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? root };
  const http = new Worker(HTTP_WORKER, { workerData: { root, requireAuth: null, log: logBuf, baseEnv } });
  const httpPort = await listening(http);
  const counters = new SharedArrayBuffer(8 * 3);
  const proxy = new Worker(fileURLToPath(import.meta.url), { workerData: { role: PROXY, port: httpPort, counters } });
  const proxyPort = await listening(proxy);

  const logCount = new Int32Array(logBuf, 0, 2);
  const logBytes = new Uint8Array(logBuf);
  const requests = () =>
    new TextDecoder()
      .decode(logBytes.slice(8, 8 + Atomics.load(logCount, 0)))
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l));
  const c = new BigInt64Array(counters);
  const bytes = () => ({
    down: Number(Atomics.load(c, 0)),
    up: Number(Atomics.load(c, 1)),
    connections: Number(Atomics.load(c, 2)),
  });
  const mark = () => ({ requests: requests().length, ...bytes() });
  /** What the server saw since `m`: requests, pushes among them, bytes each way, connections. */
  const since = (m) => {
    const reqs = requests().slice(m.requests);
    const b = bytes();
    return {
      httpRequests: reqs.length,
      receivePacks: reqs.filter((q) => q.method === 'POST' && q.path.endsWith('git-receive-pack')).length,
      uploadPacks: reqs.filter((q) => q.method === 'POST' && q.path.endsWith('git-upload-pack')).length,
      bytesDown: b.down - m.down,
      bytesUp: b.up - m.up,
      connections: b.connections - m.connections,
    };
  };
  return {
    url: `http://127.0.0.1:${proxyPort}`,
    requests,
    mark,
    since,
    async close() {
      await closeWorker(proxy);
      await closeWorker(http);
    },
  };
}
