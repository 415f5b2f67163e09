import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';

/**
 * A fault-injecting HTTP proxy for tests, in front of a smart-HTTP git server
 * (`startGitHttpServer` in `helpers/http-git.ts`): it passes every request through unchanged
 * except the ones the armed rules pick, which it drops, stalls, truncates or refuses, so tests can
 * show what a push or fetch does when the network fails at a given point.
 *
 * Like the git server it runs in a worker thread, so tests may drive it with synchronous
 * `execFileSync('git', …)`; its counters live in shared memory and are up to date as soon as a git
 * command returns.
 */
export type Fault =
  /** Read the whole request, then destroy the client socket; never forward it (the server never applies it). */
  | 'drop-request'
  /** Forward, wait for the upstream's complete response (a push has been applied), then destroy the client socket without sending a byte. */
  | 'drop-response'
  /** Forward, wait for the complete response, then send nothing and keep the socket open for `stallMs` (default: until `close()`), then destroy it. */
  | 'stall-response'
  /**
   * Forward, wait for the complete response, send its status line and headers (re-framed with the
   * body's full `Content-Length`, whatever framing the upstream used) and the first `truncateBytes`
   * bytes of the body (default 4), then destroy the socket.
   */
  | 'truncate-response'
  /** Destroy the client socket as soon as the request's headers arrive; nothing is forwarded (an unreachable remote). */
  | 'refuse';

export interface FaultRule {
  /** Which requests count: POSTs to .../git-receive-pack (pushes), POSTs to .../git-upload-pack (fetches), or every request. */
  match: 'receive-pack' | 'upload-pack' | 'any';
  /** 1-based index among matching requests counted since the last arm(); the fault applies to this one only… */
  nth: number;
  /** …or to this one and every later matching request (e.g. a remote that goes dark). */
  andAfter?: boolean;
  fault: Fault;
  stallMs?: number;
  truncateBytes?: number;
}

export interface ProxiedRequest {
  method: string;
  path: string;
  /** The `?service=` query parameter (only `info/refs` discovery carries one). */
  service?: string;
  /** The fault applied to this request, if a rule picked it. */
  fault?: Fault;
}

export interface FaultProxy {
  /** http://127.0.0.1:PORT — the same paths as the upstream server (append /name.git). */
  url: string;
  /**
   * Replaces the rules (empty list = pass everything through) and resets the per-match counters.
   * When several rules pick a request, the first one in the list wins. Resolves once the worker
   * applies it.
   */
  arm(rules: FaultRule[]): Promise<void>;
  /** Receive-pack POSTs seen since start (all, faulted or not); readable synchronously and up to date as soon as a git command returned. */
  readonly pushes: number;
  /** Every request seen since start, in order: method, path, service query param if any, and the fault applied if any. */
  readonly requests: ProxiedRequest[];
  /** Destroys every open connection (stalled ones included), clears stall timers and ends the proxy thread. */
  close(): Promise<void>;
}

/** Bytes of shared memory for the request log (one JSON line per request, ~80 bytes each). */
const LOG_BYTES = 4 * 1024 * 1024;
/** Int32 slots at the start of the log: [0] bytes of entries written, [1] 1 once an entry did not fit, [2] receive-pack POSTs. */
const LOG_HEADER = 16;

type FromWorker = { type: 'listening'; port: number } | { type: 'armed'; id: number } | { type: 'closed' };

const WORKER_FILE = fileURLToPath(new URL('./fault-proxy-worker.cjs', import.meta.url));

function checkRules(rules: FaultRule[]): void {
  for (const r of rules) {
    if (!Number.isInteger(r.nth) || r.nth < 1) throw new Error(`fault rule nth must be a positive integer: ${r.nth}`);
    if (r.stallMs !== undefined && !(r.stallMs >= 0)) throw new Error(`fault rule stallMs must be >= 0: ${r.stallMs}`);
    if (r.truncateBytes !== undefined && !(Number.isInteger(r.truncateBytes) && r.truncateBytes >= 0)) {
      throw new Error(`fault rule truncateBytes must be a non-negative integer: ${r.truncateBytes}`);
    }
  }
}

export async function startFaultProxy(upstreamUrl: string): Promise<FaultProxy> {
  const log = new SharedArrayBuffer(LOG_HEADER + LOG_BYTES);
  const worker = new Worker(WORKER_FILE, { workerData: { upstream: upstreamUrl, log } });

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
    void exit.then(() => reject(new Error('fault proxy thread exited before listening')));
  });
  worker.on('error', (err) => {
    console.error('fault proxy thread failed:', err);
  });

  const pending = new Map<number, () => void>();
  let nextId = 1;
  worker.on('message', (msg: FromWorker) => {
    if (msg.type !== 'armed') return;
    pending.get(msg.id)?.();
    pending.delete(msg.id);
  });

  // Read the worker's log straight from shared memory, so entries are visible even while this
  // thread was blocked in execFileSync (no message needs to be processed first).
  const counters = new Int32Array(log, 0, 4);
  const bytes = new Uint8Array(log);
  const decoder = new TextDecoder();
  const requests: ProxiedRequest[] = [];
  let read = 0;
  const sync = () => {
    if (Atomics.load(counters, 1) === 1) throw new Error('fault proxy request log overflowed');
    const written = Atomics.load(counters, 0);
    if (written === read) return;
    const text = decoder.decode(bytes.slice(LOG_HEADER + read, LOG_HEADER + written));
    read = written;
    for (const line of text.split('\n')) if (line) requests.push(JSON.parse(line));
  };

  let closing: Promise<void> | undefined;
  return {
    url: `http://127.0.0.1:${port}`,
    arm(rules) {
      checkRules(rules);
      if (exited || closing) return Promise.reject(new Error('fault proxy is closed'));
      const id = nextId++;
      return new Promise<void>((resolve, reject) => {
        pending.set(id, resolve);
        void exit.then(() => reject(new Error('fault proxy thread exited')));
        worker.postMessage({ type: 'arm', id, rules: rules.map((r) => ({ ...r })) });
      });
    },
    get pushes() {
      return Atomics.load(counters, 2);
    },
    get requests() {
      sync();
      return requests;
    },
    close() {
      closing ??= (async () => {
        if (!exited) {
          worker.postMessage({ type: 'close' });
          // The worker destroys every socket at once; should anything still hold it, stop it anyway.
          const timer = setTimeout(() => void worker.terminate(), 2000);
          await exit;
          clearTimeout(timer);
        }
        sync();
      })();
      return closing;
    },
  };
}
