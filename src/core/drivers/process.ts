import { closeSync, openSync, readSync, statSync, unlinkSync } from 'node:fs';
import { bashPath } from '../proc/bash.js';
import { adoptGroup, dropGroup, signalGroup, spawnGroup } from '../proc/children.js';
import { launchTool } from '../proc/spawner.js';
import { forgetGuarded, noteGuarded, release } from '../proc/watchdog.js';
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
  /** The tool's whole environment… */
  env?: NodeJS.ProcessEnv;
  /** …or, without env, nyl's own plus these (nyl's environment is then not copied per tool). */
  extraEnv?: Record<string, string>;
  timeoutMs: number;
  cancellation?: Cancellation;
  /** The unit this tool runs for: its output so far is what the heartbeat shows of it (live-log.ts). */
  liveUnit?: string;
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
  if (size === 0) return '';
  if (size <= keep) return masker.mask(readPart(path, 0, size).toString('utf8'));
  const head = Math.floor(keep / HEAD_SHARE);
  const tail = keep - head;
  // Each piece is masked on its own, so a secret the cut split is masked in both.
  const piece = (at: number, n: number) => masker.maskPiece(readPart(path, at, n).toString('utf8'));
  return `${piece(0, head)}\n… [nyl: ${size - head - tail} bytes of output not kept] …\n${piece(size - tail, tail)}`;
}

/** After SIGKILL, how long to wait for the helper to report the tool's end before taking it as killed. */
const LOST_MS = 5_000;

function removeQuietly(path: string): void {
  try {
    unlinkSync(path);
  } catch {
    /* never made, or gone */
  }
}

/**
 * Runs a tool in its own process group (so signals reach every process it started), guarded by
 * the watchdog (so it ends when nyl dies), with a timeout and cancellation that signal the group,
 * then SIGKILL it after the grace window. Its output goes to files, never to a pipe nyl must keep
 * reading: a tool never blocks on, or dies of, a reader that went away. The tool helper starts it
 * (proc/spawner.ts) so that Node does not fork itself per tool; Node spawns it itself only when
 * the helper cannot (no bash, Windows, an environment bash cannot set).
 */
export function runProcess(opts: ProcessOptions): Promise<ProcessResult> {
  const started = Date.now();
  toolStats.spawns++;
  const keep = opts.logBytes ?? LOG;
  const logPath = workPath('log');
  const outPath = opts.stdoutBytes ? workPath('out') : undefined;
  const argv = opts.argv ?? [bashPath() ?? 'bash', '--noprofile', '--norc', '-eo', 'pipefail', '-c', opts.script ?? ''];
  // A script's bash is found once per process, and still calls itself `bash` ($0, its messages).
  const argv0 = opts.argv ? undefined : 'bash';
  const stopSignal = opts.stopSignal ?? 'SIGTERM';
  // The helper makes the file when it starts the tool: until then the tail reads as none.
  const unwatch = watchLiveLog(opts.liveUnit, logPath);
  const cleanup = () => {
    unwatch();
    removeQuietly(logPath);
    if (outPath) removeQuietly(outPath);
  };
  const collect = () => {
    const tail = keptLog(logPath, keep);
    // Stdout that is data is read whole (a digest is computed over it); callers mask what they keep.
    const stdout = outPath ? readPart(outPath, 0, opts.stdoutBytes as number).toString('utf8') : '';
    cleanup();
    return { tail, stdout };
  };
  return new Promise((resolve) => {
    let pid: number | undefined;
    /** Started by the helper: nyl releases its group itself. */
    let helped = false;
    /** The last signal sent: one asked for before the tool started is sent when it does. */
    let lastSignal: NodeJS.Signals | undefined;
    let timedOut = false;
    let cancelled = false;
    let done = false;
    let killTimer: NodeJS.Timeout | undefined;
    let lostTimer: NodeJS.Timeout | undefined;
    let echoed = 0;
    const copy = new MaskedEcho();
    const echoNew = () => {
      const size = sizeOf(logPath);
      if (size > echoed) copy.push(readPart(logPath, echoed, size - echoed));
      echoed = size;
    };
    const echo = opts.echo ? setInterval(echoNew, 100) : undefined;
    const send = (sig: NodeJS.Signals) => {
      lastSignal = sig;
      signalGroup(pid, sig);
    };
    const stop = (sig: NodeJS.Signals, graceMs: number) => {
      send(sig);
      killTimer ??= setTimeout(() => {
        send('SIGKILL');
        lostTimer = setTimeout(() => finish(null, 'SIGKILL'), LOST_MS);
      }, graceMs);
    };
    const grace = opts.cancellation?.graceMs ?? 30_000;
    const timer = setTimeout(() => {
      timedOut = true;
      stop(stopSignal, Math.min(grace, 10_000));
    }, opts.timeoutMs);
    const unsubscribe = opts.cancellation?.onCancel((sig) => {
      cancelled = true;
      stop(sig, grace);
    });
    const settle = () => {
      done = true;
      clearTimeout(timer);
      if (killTimer) clearTimeout(killTimer);
      if (lostTimer) clearTimeout(lostTimer);
      if (echo) clearInterval(echo);
      unsubscribe?.();
    };
    const notStarted = (e: unknown) => {
      if (done) return;
      settle();
      cleanup();
      resolve({
        started: false,
        startError: e instanceof Error ? e.message : String(e),
        exitCode: null,
        signal: null,
        timedOut: false,
        cancelled: false,
        stdout: '',
        tail: '',
        durationMs: Date.now() - started,
      });
    };
    const finish = (exitCode: number | null, signal: NodeJS.Signals | null, struckOff = false) => {
      if (done) return;
      settle();
      // Stopped by us: what the script left running in its group goes too.
      if (timedOut || cancelled) signalGroup(pid, 'SIGKILL');
      if (helped && pid !== undefined) {
        if (struckOff) forgetGuarded(pid);
        else release(pid);
        dropGroup(pid);
      }
      if (opts.echo) {
        echoNew();
        copy.end();
      }
      resolve({ started: true, exitCode, signal, timedOut, cancelled, ...collect(), durationMs: Date.now() - started });
    };
    const onStart = (p: number) => {
      pid = p;
      if (lastSignal) signalGroup(p, lastSignal);
    };
    /** Node spawns it itself: the helper cannot. */
    const spawnDirectly = () => {
      let logFd: number | undefined;
      let outFd: number | undefined;
      const closeFds = () => {
        if (logFd !== undefined) closeSync(logFd);
        if (outFd !== undefined && outFd !== logFd) closeSync(outFd);
      };
      let child: ReturnType<typeof spawnGroup>;
      try {
        logFd = openSync(logPath, 'w', 0o600);
        outFd = outPath ? openSync(outPath, 'w', 0o600) : logFd;
        child = spawnGroup(argv[0] as string, argv.slice(1), {
          cwd: opts.cwd,
          env: opts.env ?? { ...process.env, ...opts.extraEnv },
          stdio: ['ignore', outFd, logFd],
          guarded: 'tool',
          stopSignal,
          ...(argv0 ? { argv0 } : {}),
        });
      } catch (e) {
        closeFds();
        notStarted(e);
        return;
      }
      // The child has its own copies of the descriptors.
      closeFds();
      if (child.pid !== undefined) onStart(child.pid);
      child.on('error', notStarted);
      child.on('exit', finish);
    };
    const launched = launchTool(
      {
        argv,
        argv0,
        cwd: opts.cwd,
        ...(opts.env ? { env: opts.env } : { extraEnv: opts.extraEnv ?? {} }),
        stdout: outPath ?? logPath,
        stderr: logPath,
        stopSignal,
      },
      {
        started: (p) => {
          helped = true;
          adoptGroup(p);
          noteGuarded(p);
          onStart(p);
        },
        failed: notStarted,
        exited: finish,
        retry: () => {
          if (!done) spawnDirectly();
        },
      },
    );
    if (!launched) spawnDirectly();
  });
}

/** A bash script in its own process group (the Command contract). */
export const runScript = (opts: ProcessOptions & { script: string }) => runProcess(opts);
