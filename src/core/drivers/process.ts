import { spawn } from 'node:child_process';
import type { Cancellation } from '../util/cancel.js';

export interface ProcessOptions {
  /** A bash script, run as `bash --noprofile --norc -eo pipefail -c SCRIPT`… */
  script?: string;
  /** …or a program and its arguments, run as they are (no shell). */
  argv?: string[];
  /** Also copy the tool's output to this process's stdout/stderr as it comes (nyl exec). */
  echo?: boolean;
  cwd: string;
  env: NodeJS.ProcessEnv;
  timeoutMs: number;
  cancellation?: Cancellation;
  /** Signal sent first on cancel or timeout (tools with a graceful stop want SIGINT). */
  stopSignal?: NodeJS.Signals;
  /** Kept output: the last bytes of stdout+stderr. */
  tailBytes?: number;
  /** Kept stdout, from its start (default 64 KiB; more for tools whose stdout is data). */
  stdoutBytes?: number;
}

export interface ProcessResult {
  exitCode: number | null;
  signal: NodeJS.Signals | null;
  timedOut: boolean;
  cancelled: boolean;
  stdout: string;
  tail: string;
  durationMs: number;
}

/** Process spawns of tools, counted like git's. */
export const toolStats = { spawns: 0 };

const TAIL = 64 * 1024;

function killGroup(pid: number, sig: NodeJS.Signals): void {
  try {
    process.kill(-pid, sig);
  } catch {
    /* the group is gone */
  }
}

/**
 * Runs a bash script in its own process group (so signals reach every process it started),
 * with a timeout and cancellation that signal the group, then SIGKILL it after the grace window.
 */
export function runProcess(opts: ProcessOptions): Promise<ProcessResult> {
  const started = Date.now();
  toolStats.spawns++;
  const keep = opts.tailBytes ?? TAIL;
  return new Promise((resolve) => {
    const [cmd, ...args] = opts.argv ?? ['bash', '--noprofile', '--norc', '-eo', 'pipefail', '-c', opts.script ?? ''];
    const child = spawn(cmd as string, args, {
      cwd: opts.cwd,
      env: opts.env,
      detached: true,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let tail = '';
    let stdout = '';
    const add = (s: string) => {
      tail += s;
      if (tail.length > keep * 2) tail = tail.slice(-keep);
    };
    child.stdout.setEncoding('utf8');
    child.stderr.setEncoding('utf8');
    child.stdout.on('data', (d: string) => {
      if (opts.echo) process.stdout.write(d);
      add(d);
      if (stdout.length < (opts.stdoutBytes ?? keep)) stdout += d;
    });
    child.stderr.on('data', (d: string) => {
      if (opts.echo) process.stderr.write(d);
      add(d);
    });
    let timedOut = false;
    let cancelled = false;
    let killTimer: NodeJS.Timeout | undefined;
    const stop = (sig: NodeJS.Signals, graceMs: number) => {
      if (!child.pid) return;
      killGroup(child.pid, sig);
      killTimer ??= setTimeout(() => child.pid && killGroup(child.pid, 'SIGKILL'), graceMs);
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
      if ((timedOut || cancelled) && child.pid) killGroup(child.pid, 'SIGKILL');
      clearTimeout(timer);
      if (killTimer) clearTimeout(killTimer);
      unsubscribe?.();
      resolve({
        exitCode,
        signal,
        timedOut,
        cancelled,
        stdout,
        tail: tail.slice(-keep),
        durationMs: Date.now() - started,
      });
    };
    child.on('error', (e) => {
      add(`${e.message}\n`);
      finish(127, null);
    });
    child.on('exit', (code, signal) => {
      // Background processes of the script may keep the pipes open: wait briefly, then stop reading.
      const t = setTimeout(() => {
        child.stdout.destroy();
        child.stderr.destroy();
        finish(code, signal);
      }, 200);
      child.on('close', () => {
        clearTimeout(t);
        finish(code, signal);
      });
    });
  });
}

/** A bash script in its own process group (the Command contract). */
export const runScript = (opts: ProcessOptions & { script: string }) => runProcess(opts);
