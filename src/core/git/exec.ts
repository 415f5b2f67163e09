import { signalGroup, spawnGroup } from '../proc/children.js';
import type { Cancellation } from '../util/cancel.js';

/** Process spawns are the cost on a runner: every git process goes through here and is counted. */
export const gitStats = { spawns: 0, commands: [] as string[] };

export interface GitResult {
  code: number;
  stdout: Buffer;
  stderr: string;
  /** Set when nyl ended the call itself: past its time bound, or on cancellation. */
  ended?: 'timeout' | 'cancelled';
  /** The signal that ended git, if one did (SIGXFSZ: a file past `ulimit -f`). */
  signal?: NodeJS.Signals;
}

export interface GitRunOptions {
  cwd: string;
  input?: Buffer | string;
  env?: NodeJS.ProcessEnv;
  /** The whole call's bound: past it the process group is killed and the call ends `timeout`. */
  timeoutMs?: number;
  /** On cancel the call gets `cancelGraceMs` more (default 1 s), then ends `cancelled`. */
  cancellation?: Cancellation;
  cancelGraceMs?: number;
  /** Dies with nyl (the watchdog ends it): for pushes, whose work must not go on unsupervised. */
  guarded?: boolean;
  /** Told the process (group) id once git started. */
  started?: (pid: number | undefined) => void;
  /** Holds git's lock files while it runs (a fetch): on the way out it gets SIGTERM first (endGently). */
  endGently?: boolean;
}

/** Keeps git from prompting or paging; a prompt on a runner hangs the job. */
export function gitEnv(extra?: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  return {
    ...process.env,
    GIT_TERMINAL_PROMPT: '0',
    GIT_PAGER: 'cat',
    LC_ALL: 'C',
    GIT_FLUSH: '1',
    ...extra,
  };
}

/** The git subcommand of an argument list (after any `-c key=value`), for the spawn counts. */
function subcommand(args: string[]): string {
  for (let i = 0; i < args.length; i++) {
    if (args[i] === '-c') i++;
    else return args[i] as string;
  }
  return '';
}

export function runGit(args: string[], opts: GitRunOptions): Promise<GitResult> {
  gitStats.spawns++;
  gitStats.commands.push(subcommand(args));
  return new Promise((resolve, reject) => {
    const child = spawnGroup('git', args, {
      cwd: opts.cwd,
      env: gitEnv(opts.env),
      stdio: ['pipe', 'pipe', 'pipe'],
      guarded: opts.guarded ? 'git' : undefined,
      endGently: opts.endGently,
    });
    opts.started?.(child.pid);
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    let ended: GitResult['ended'];
    let settled = false;
    const timers: NodeJS.Timeout[] = [];
    const done = (code: number, signal?: NodeJS.Signals | null) => {
      if (settled) return;
      settled = true;
      for (const t of timers) clearTimeout(t);
      unsubscribe?.();
      const stderr = Buffer.concat(err).toString('utf8');
      resolve({ code, stdout: Buffer.concat(out), stderr, ended, ...(signal ? { signal } : {}) });
    };
    // Stop waiting at once; the group gets SIGTERM, then SIGKILL a second later.
    const end = (why: NonNullable<GitResult['ended']>) => {
      if (settled) return;
      ended = why;
      signalGroup(child.pid, 'SIGTERM');
      setTimeout(() => signalGroup(child.pid, 'SIGKILL'), 1000).unref();
      done(124);
    };
    if (opts.timeoutMs !== undefined) timers.push(setTimeout(() => end('timeout'), Math.max(1, opts.timeoutMs)));
    const unsubscribe = opts.cancellation?.onCancel(() => {
      timers.push(setTimeout(() => end('cancelled'), opts.cancelGraceMs ?? 1000));
    });
    child.stdout?.on('data', (d: Buffer) => out.push(d));
    child.stderr?.on('data', (d: Buffer) => err.push(d));
    child.on('error', (e) => {
      if (settled) return;
      settled = true;
      for (const t of timers) clearTimeout(t);
      unsubscribe?.();
      reject(e);
    });
    child.on('close', (code, signal) => done(code ?? 128, signal));
    child.stdin?.on('error', () => {
      /* git may exit before reading all input; its exit code tells */
    });
    child.stdin?.end(opts.input ?? '');
  });
}
