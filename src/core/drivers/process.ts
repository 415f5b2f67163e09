import { closeSync, openSync, readSync, rmSync, statSync } from 'node:fs';
import { signalGroup, spawnGroup } from '../proc/children.js';
import { workPath } from '../proc/workdir.js';
import type { Cancellation } from '../util/cancel.js';
import { masker } from '../util/mask.js';
import { MaskedEcho } from './echo.js';
import { watchLiveLog } from './live-log.js';

export interface ProcessOptions {
  /** A bash script, run as `bash --noprofile --norc -eo pipefail -c SCRIPT`… */
  script?: string;
  /** …or a program and its arguments, run as they are (no shell). */
  argv?: string[];
  /** Also copy the tool's output to this process's stdout as it comes (nyl exec). */
  echo?: boolean;
  cwd: string;
  env: NodeJS.ProcessEnv;
  timeoutMs: number;
  cancellation?: Cancellation;
  /** Signal sent first on cancel or timeout (tools with a graceful stop want SIGINT). */
  stopSignal?: NodeJS.Signals;
  /** Kept output of stdout+stderr (default 64 KiB): its head and its tail, the cut marked. */
  logBytes?: number;
  /** Stdout is data (`output -json`, a manifest, a check's detail): kept apart, up to this many bytes. */
  stdoutBytes?: number;
}

export interface ProcessResult {
  /** False when the tool never started (spawn failed): it made no effect. */
  started: boolean;
  /** Why it did not start. */
  startError?: string;
  exitCode: number | null;
  signal: NodeJS.Signals | null;
  timedOut: boolean;
  cancelled: boolean;
  /** Stdout when kept apart (stdoutBytes), else ''. */
  stdout: string;
  /** The kept log (without stdout when kept apart): all of it when short, else its head and tail with the cut marked. */
  tail: string;
  durationMs: number;
}

/** Process spawns of tools, counted like git's. */
export const toolStats = { spawns: 0 };

const LOG = 64 * 1024;
const HEAD_SHARE = 8;

/** Reads `length` bytes of a file from `position` (or less at its end). */
function readPart(path: string, position: number, length: number): Buffer {
  const fd = openSync(path, 'r');
  try {
    const buf = Buffer.alloc(length);
    const n = readSync(fd, buf, 0, length, position);
    return buf.subarray(0, n);
  } finally {
    closeSync(fd);
  }
}

function sizeOf(path: string): number {
  try {
    return statSync(path).size;
  } catch {
    return 0;
  }
}

/** A log file kept to `keep` bytes: its head and tail, with how much was left out between them. */
export function keptLog(path: string, keep: number): string {
  const size = sizeOf(path);
  if (size <= keep) return masker.mask(readPart(path, 0, size).toString('utf8'));
  const head = Math.floor(keep / HEAD_SHARE);
  const tail = keep - head;
  // Each piece is masked on its own, so a secret the cut split is masked in both.
  const piece = (at: number, n: number) => masker.maskPiece(readPart(path, at, n).toString('utf8'));
  return `${piece(0, head)}\n… [nyl: ${size - head - tail} bytes of output not kept] …\n${piece(size - tail, tail)}`;
}

/**
 * Runs a tool in its own process group (so signals reach every process it started), guarded by
 * the watchdog (so it ends when nyl dies), with a timeout and cancellation that signal the group,
 * then SIGKILL it after the grace window. Its output goes to files, never to a pipe nyl must keep
 * reading: a tool never blocks on, or dies of, a reader that went away.
 */
export function runProcess(opts: ProcessOptions): Promise<ProcessResult> {
  const started = Date.now();
  toolStats.spawns++;
  const keep = opts.logBytes ?? LOG;
  const logPath = workPath('log');
  const outPath = opts.stdoutBytes ? workPath('out') : undefined;
  const logFd = openSync(logPath, 'w', 0o600);
  const outFd = outPath ? openSync(outPath, 'w', 0o600) : logFd;
  const unwatch = watchLiveLog(logPath);
  const cleanup = () => {
    unwatch();
    rmSync(logPath, { force: true });
    if (outPath) rmSync(outPath, { force: true });
  };
  const collect = () => {
    const tail = keptLog(logPath, keep);
    // Stdout that is data is read whole (a digest is computed over it); callers mask what they keep.
    const stdout = outPath ? readPart(outPath, 0, opts.stdoutBytes as number).toString('utf8') : '';
    cleanup();
    return { tail, stdout };
  };
  return new Promise((resolve) => {
    const [cmd, ...args] = opts.argv ?? ['bash', '--noprofile', '--norc', '-eo', 'pipefail', '-c', opts.script ?? ''];
    const notStarted = (e: unknown) => {
      cleanup();
      resolve({
        started: false,
        startError: (e as Error)?.message ?? String(e),
        exitCode: null,
        signal: null,
        timedOut: false,
        cancelled: false,
        stdout: '',
        tail: '',
        durationMs: Date.now() - started,
      });
    };
    let child: ReturnType<typeof spawnGroup>;
    try {
      child = spawnGroup(cmd as string, args, {
        cwd: opts.cwd,
        env: opts.env,
        stdio: ['ignore', outFd, logFd],
        guarded: 'tool',
        stopSignal: opts.stopSignal,
      });
    } catch (e) {
      closeFds();
      notStarted(e);
      return;
    }
    // The child has its own copies of the descriptors.
    closeFds();
    function closeFds() {
      closeSync(logFd);
      if (outFd !== logFd) closeSync(outFd);
    }
    let echoed = 0;
    const copy = new MaskedEcho();
    const echo = opts.echo
      ? setInterval(() => {
          const size = sizeOf(logPath);
          if (size > echoed) copy.push(readPart(logPath, echoed, size - echoed));
          echoed = size;
        }, 100)
      : undefined;
    let timedOut = false;
    let cancelled = false;
    let killTimer: NodeJS.Timeout | undefined;
    const stop = (sig: NodeJS.Signals, graceMs: number) => {
      signalGroup(child.pid, sig);
      killTimer ??= setTimeout(() => signalGroup(child.pid, 'SIGKILL'), graceMs);
    };
    const grace = opts.cancellation?.graceMs ?? 30_000;
    const timer = setTimeout(() => {
      timedOut = true;
      stop(opts.stopSignal ?? 'SIGTERM', Math.min(grace, 10_000));
    }, opts.timeoutMs);
    const unsubscribe = opts.cancellation?.onCancel((sig) => {
      cancelled = true;
      stop(sig, grace);
    });
    let done = false;
    const finish = (exitCode: number | null, signal: NodeJS.Signals | null) => {
      if (done) return;
      done = true;
      // Stopped by us: what the script left running in its group goes too.
      if (timedOut || cancelled) signalGroup(child.pid, 'SIGKILL');
      clearTimeout(timer);
      if (killTimer) clearTimeout(killTimer);
      if (echo) clearInterval(echo);
      unsubscribe?.();
      if (opts.echo) {
        const size = sizeOf(logPath);
        if (size > echoed) copy.push(readPart(logPath, echoed, size - echoed));
        copy.end();
      }
      resolve({
        started: true,
        exitCode,
        signal,
        timedOut,
        cancelled,
        ...collect(),
        durationMs: Date.now() - started,
      });
    };
    child.on('error', (e) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      if (echo) clearInterval(echo);
      unsubscribe?.();
      notStarted(e);
    });
    child.on('exit', (code, signal) => finish(code, signal));
  });
}

/** A bash script in its own process group (the Command contract). */
export const runScript = (opts: ProcessOptions & { script: string }) => runProcess(opts);
