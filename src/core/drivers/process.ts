import { closeSync, openSync, readSync, statSync, unlinkSync } from 'node:fs';
import { bashPath } from '../proc/bash.js';
import { adoptGroup, dropGroup, signalGroup, signalLeader, spawnGroup } from '../proc/children.js';
import { launchTool } from '../proc/spawner.js';
import { forgetGuarded, noteGuarded, release, stopSent } from '../proc/watchdog.js';
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
  /**
   * Who gets the stop signal: the whole process group (default), or the tool's own process alone
   * (`leader`: terraform and tofu stop their providers themselves; a signal to the group kills them
   * mid-create). SIGKILL at the end of the grace always goes to the group.
   */
  stopTarget?: 'group' | 'leader';
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

/** Where a tool's output goes: a log file (and a file for stdout when it is data), read once it ends. */
class ToolFiles {
  readonly log = workPath('log');
  readonly out: string | undefined;
  private readonly unwatch: () => void;

  constructor(private readonly opts: ProcessOptions) {
    this.out = opts.stdoutBytes ? workPath('out') : undefined;
    // The helper makes the file when it starts the tool: until then the tail reads as none.
    this.unwatch = watchLiveLog(opts.liveUnit, this.log);
  }

  remove(): void {
    this.unwatch();
    removeQuietly(this.log);
    if (this.out) removeQuietly(this.out);
  }

  /** The kept log and the data stdout, then the files removed. */
  collect(): { tail: string; stdout: string } {
    const tail = keptLog(this.log, this.opts.logBytes ?? LOG);
    // Stdout that is data is read whole (a digest is computed over it); callers mask what they keep.
    const stdout = this.out ? readPart(this.out, 0, this.opts.stdoutBytes as number).toString('utf8') : '';
    this.remove();
    return { tail, stdout };
  }
}

/** The tool's output copied to this process's stdout as it comes, masked (nyl exec). */
class Echo {
  private echoed = 0;
  private readonly copy = new MaskedEcho();
  private readonly timer: NodeJS.Timeout;

  constructor(private readonly log: string) {
    this.timer = setInterval(() => this.more(), 100);
  }

  private more(): void {
    const size = sizeOf(this.log);
    if (size > this.echoed) this.copy.push(readPart(this.log, this.echoed, size - this.echoed));
    this.echoed = size;
  }

  stop(): void {
    clearInterval(this.timer);
  }

  end(): void {
    this.more();
    this.copy.end();
  }
}

/**
 * One tool run: started by the helper (or by Node when the helper cannot), stopped on timeout
 * and cancellation (its stop signal to the group, SIGKILL after the grace), ended once. A
 * leader-only tool (stopTarget `leader`: terraform, tofu) gets its stop signal alone and once,
 * whatever signal nyl got; SIGKILL still goes to the group.
 */
class ToolRun {
  private readonly t0 = Date.now();
  private readonly files: ToolFiles;
  private readonly argv: string[];
  /** A script's bash is found once per process, and still calls itself `bash` ($0, its messages). */
  private readonly argv0: string | undefined;
  private readonly stopSignal: NodeJS.Signals;
  private readonly leaderOnly: boolean;
  private pid: number | undefined;
  /** Started by the helper: nyl releases its group itself. */
  private helped = false;
  /** The last signal sent: one asked for before the tool started is sent when it does. */
  private lastSignal: NodeJS.Signals | undefined;
  private timedOut = false;
  private cancelled = false;
  private done = false;
  private killTimer: NodeJS.Timeout | undefined;
  private lostTimer: NodeJS.Timeout | undefined;
  private timer: NodeJS.Timeout | undefined;
  private unsubscribe: (() => void) | undefined;
  private echo: Echo | undefined;
  private resolve!: (r: ProcessResult) => void;

  constructor(private readonly opts: ProcessOptions) {
    this.files = new ToolFiles(opts);
    this.argv = opts.argv ?? [
      bashPath() ?? 'bash',
      '--noprofile',
      '--norc',
      '-eo',
      'pipefail',
      '-c',
      opts.script ?? '',
    ];
    this.argv0 = opts.argv ? undefined : 'bash';
    this.stopSignal = opts.stopSignal ?? 'SIGTERM';
    this.leaderOnly = opts.stopTarget === 'leader';
  }

  run(): Promise<ProcessResult> {
    return new Promise((resolve) => {
      this.resolve = resolve;
      if (this.opts.echo) this.echo = new Echo(this.files.log);
      this.watch();
      if (!this.launch()) this.spawnDirectly();
    });
  }

  /** The timeout, and a cancel: each sends the stop signal, then SIGKILL after the grace. */
  private watch(): void {
    const grace = this.opts.cancellation?.graceMs ?? 30_000;
    this.timer = setTimeout(() => {
      this.timedOut = true;
      this.stop(this.stopSignal, Math.min(grace, 10_000));
    }, this.opts.timeoutMs);
    this.unsubscribe = this.opts.cancellation?.onCancel((sig) => {
      this.cancelled = true;
      // A leader-only tool gets its own stop signal whatever nyl got (terraform: SIGINT, its graceful stop).
      this.stop(this.leaderOnly ? this.stopSignal : sig, grace);
    });
  }

  private send(sig: NodeJS.Signals): void {
    this.lastSignal = sig;
    this.signal(this.pid, sig);
  }

  /** To the group; a leader-only tool's stop signal to the tool alone, noted so the watchdog does not repeat it. */
  private signal(pid: number | undefined, sig: NodeJS.Signals): void {
    if (!this.leaderOnly || sig === 'SIGKILL') signalGroup(pid, sig);
    else if (pid !== undefined) {
      signalLeader(pid, sig);
      stopSent(pid);
    }
  }

  private stop(sig: NodeJS.Signals, graceMs: number): void {
    // A timeout then a cancel: terraform takes a second SIGINT as "exit at once", losing state.
    if (!(this.leaderOnly && this.lastSignal)) this.send(sig);
    this.killTimer ??= setTimeout(() => {
      this.send('SIGKILL');
      this.lostTimer = setTimeout(() => this.finish(null, 'SIGKILL'), LOST_MS);
    }, graceMs);
  }

  private settle(): void {
    this.done = true;
    clearTimeout(this.timer);
    if (this.killTimer) clearTimeout(this.killTimer);
    if (this.lostTimer) clearTimeout(this.lostTimer);
    this.echo?.stop();
    this.unsubscribe?.();
  }

  private readonly notStarted = (e: unknown): void => {
    if (this.done) return;
    this.settle();
    this.files.remove();
    this.resolve({
      started: false,
      startError: e instanceof Error ? e.message : String(e),
      exitCode: null,
      signal: null,
      timedOut: false,
      cancelled: false,
      stdout: '',
      tail: '',
      durationMs: Date.now() - this.t0,
    });
  };

  private readonly finish = (exitCode: number | null, signal: NodeJS.Signals | null, struckOff = false): void => {
    if (this.done) return;
    this.settle();
    const pid = this.pid;
    // Stopped by us: what the script left running in its group goes too.
    if (this.timedOut || this.cancelled) signalGroup(pid, 'SIGKILL');
    if (this.helped && pid !== undefined) {
      if (struckOff) forgetGuarded(pid);
      else release(pid);
      dropGroup(pid);
    }
    this.echo?.end();
    const { timedOut, cancelled } = this;
    this.resolve({
      started: true,
      exitCode,
      signal,
      timedOut,
      cancelled,
      ...this.files.collect(),
      durationMs: Date.now() - this.t0,
    });
  };

  private onStart(p: number): void {
    this.pid = p;
    if (this.lastSignal) this.signal(p, this.lastSignal);
  }

  /** Through the tool helper; false when it cannot start tools here. */
  private launch(): boolean {
    const { opts, files, argv0 } = this;
    return launchTool(
      {
        argv: this.argv,
        argv0,
        cwd: opts.cwd,
        ...(opts.env ? { env: opts.env } : { extraEnv: opts.extraEnv ?? {} }),
        stdout: files.out ?? files.log,
        stderr: files.log,
        stopSignal: this.stopSignal,
        stopTarget: this.opts.stopTarget,
      },
      {
        started: (p) => {
          this.helped = true;
          adoptGroup(p);
          noteGuarded(p);
          this.onStart(p);
        },
        failed: this.notStarted,
        exited: this.finish,
        retry: () => {
          if (!this.done) this.spawnDirectly();
        },
      },
    );
  }

  /** Node spawns it itself: the helper cannot. */
  private spawnDirectly(): void {
    const { opts, files } = this;
    let logFd: number | undefined;
    let outFd: number | undefined;
    const closeFds = () => {
      if (logFd !== undefined) closeSync(logFd);
      if (outFd !== undefined && outFd !== logFd) closeSync(outFd);
    };
    let child: ReturnType<typeof spawnGroup>;
    try {
      logFd = openSync(files.log, 'w', 0o600);
      outFd = files.out ? openSync(files.out, 'w', 0o600) : logFd;
      child = spawnGroup(this.argv[0] as string, this.argv.slice(1), {
        cwd: opts.cwd,
        env: opts.env ?? { ...process.env, ...opts.extraEnv },
        stdio: ['ignore', outFd, logFd],
        guarded: 'tool',
        stopSignal: this.stopSignal,
        stopTarget: this.opts.stopTarget,
        ...(this.argv0 ? { argv0: this.argv0 } : {}),
      });
    } catch (e) {
      closeFds();
      this.notStarted(e);
      return;
    }
    // The child has its own copies of the descriptors.
    closeFds();
    if (child.pid !== undefined) this.onStart(child.pid);
    child.on('error', this.notStarted);
    child.on('exit', this.finish);
  }
}

/**
 * Runs a tool in its own process group (so signals reach every process it started), guarded by
 * the watchdog (so it ends when nyl dies), with a timeout and cancellation that signal the group
 * (or, stopTarget `leader`, the tool alone), then SIGKILL it after the grace window. Its output
 * goes to files, never to a pipe nyl must keep reading: a tool never blocks on, or dies of, a
 * reader that went away. The tool helper starts it
 * (proc/spawner.ts) so that Node does not fork itself per tool; Node spawns it itself only when
 * the helper cannot (no bash, Windows, an environment bash cannot set).
 */
export function runProcess(opts: ProcessOptions): Promise<ProcessResult> {
  toolStats.spawns++;
  return new ToolRun(opts).run();
}

/** A bash script in its own process group (the Command contract). */
export const runScript = (opts: ProcessOptions & { script: string }) => runProcess(opts);
