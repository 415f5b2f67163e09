import { type ChildProcess, spawn } from 'node:child_process';
import { constants } from 'node:os';
import type { Readable } from 'node:stream';
import { bashPath, helperShellEnv, SHELL_SENSITIVE } from './bash.js';
import { watchdogInput } from './watchdog.js';

/**
 * The tool helper: one bash per nyl process, started on first need, that starts every tool, so
 * that Node never forks its own large heap per tool (a fork copies its page tables and the
 * parent takes a copy-on-write fault for each page it touches until the child has exec'd: most
 * of a small unit's cost). Nyl writes it one request per tool on stdin (a byte count, then bash
 * code that sets the request's variables, quoted by `quote`); it forks a wrapper per tool, which
 * enters the folder, sets the environment, opens the output files (mode 0600), starts the tool in
 * a process group of its own (job control) and waits for it. The wrapper announces the group to
 * the watchdog itself before nyl hears of it — it holds the watchdog's stdin only until then —
 * so a nyl killed at any moment leaves no unguarded tool. On stdout, one line each:
 *
 *   P <id> <pid>        started (pid = its process group)
 *   E <id> <why>        not started (cwd, ENOENT, EACCES, open, env, lost): it made no effect
 *   [n]+ <pid> <how> …  bash's job line when it ended: `Done`/`Exit N` (it exited) or how a signal ended it
 *   X <id> <status>     ended, with bash's status (128 + N for signal N: the job line tells which)
 *
 * The tool gets exactly the environment asked for: the helper's own is nyl's without the
 * variables that would change the helper's own shell (SHELL_SENSITIVE), which every request sets
 * back or unsets, with SHLVL, PWD and OLDPWD, which the helper's shells change.
 */
const SCRIPT = `
LC_ALL=C
__nyl_um=$(umask)
__nyl_fail() { printf 'E %s %s\\n' "$__nyl_i" "$1"; exit 0; }
nyl_spawn() {
  (
    cd -- "$__nyl_d" 2>/dev/null || __nyl_fail cwd
    [ \${#__nyl_u[@]} -eq 0 ] || unset -v "\${__nyl_u[@]}" 2>/dev/null || __nyl_fail env
    [ \${#__nyl_x[@]} -eq 0 ] || export "\${__nyl_x[@]}" 2>/dev/null || __nyl_fail env
    __nyl_p=\${__nyl_a[0]}
    case $__nyl_p in
      */*) [ -e "$__nyl_p" ] || __nyl_fail ENOENT ;;
      *) __nyl_rest=\${PATH-/usr/bin:/bin}: __nyl_f=
         while [ -n "$__nyl_rest" ]; do
           __nyl_dir=\${__nyl_rest%%:*}; __nyl_rest=\${__nyl_rest#*:}
           if [ -f "\${__nyl_dir:-.}/$__nyl_p" ] && [ -x "\${__nyl_dir:-.}/$__nyl_p" ]; then __nyl_f=\${__nyl_dir:-.}/$__nyl_p; break; fi
         done
         [ -n "$__nyl_f" ] || __nyl_fail ENOENT
         __nyl_p=$__nyl_f ;;
    esac
    [ -f "$__nyl_p" ] && [ -x "$__nyl_p" ] || __nyl_fail EACCES
    umask 077
    { exec 5>"$__nyl_o"; } 2>/dev/null || __nyl_fail open
    if [ "$__nyl_e" = "$__nyl_o" ]; then exec 6>&5; else { exec 6>"$__nyl_e"; } 2>/dev/null || __nyl_fail open; fi
    umask "$__nyl_um"
    set -m
    trap 'jobs -l' CHLD
    exec -a "$__nyl_n" "$__nyl_p" "\${__nyl_a[@]:1}" 0</dev/null 1>&5 2>&6 5>&- 6>&- 3>&- &
    __nyl_c=$!
    LC_ALL=C
    printf '+%s %s\\n' "$__nyl_c" "$__nyl_s" >&3 2>/dev/null
    exec 3>&- 5>&- 6>&-
    printf 'P %s %s\\n' "$__nyl_i" "$__nyl_c"
    wait "$__nyl_c"; __nyl_st=$?
    while [ "$__nyl_st" -gt 128 ] && kill -0 "$__nyl_c" 2>/dev/null; do wait "$__nyl_c"; __nyl_st=$?; done
    printf 'X %s %s\\n' "$__nyl_i" "$__nyl_st"
  ) &
}
while IFS= read -r __nyl_len && IFS= read -r -N "$__nyl_len" __nyl_body; do eval "$__nyl_body"; done
`;

/** One tool to start. */
export interface Launch {
  /** The program (a name looked up along the tool's PATH, or a path) and its arguments. */
  argv: string[];
  /** What the tool sees as its argv[0] (default argv[0]). */
  argv0?: string;
  cwd: string;
  /** The tool's whole environment… */
  env?: NodeJS.ProcessEnv;
  /** …or, without env, nyl's environment (as when the helper started) plus these. */
  extraEnv?: Record<string, string>;
  /** Files for its stdout and stderr (one path for both: one log). */
  stdout: string;
  stderr: string;
  /** The signal the watchdog sends its group first should nyl die. */
  stopSignal: NodeJS.Signals;
}

export interface LaunchEvents {
  started(pid: number): void;
  /** It never started (it made no effect). */
  failed(reason: string): void;
  exited(code: number | null, signal: NodeJS.Signals | null): void;
  /** The helper went away before it started it: start it some other way. */
  retry(): void;
}

/** Variables every request sets or unsets: the helper's shells change or lack them. */
const ALWAYS = [...SHELL_SENSITIVE, 'SHLVL', 'PWD', 'OLDPWD'];
const ALWAYS_SET = new Set(ALWAYS);
/** Bash refuses to set these (readonly or its own): a tool whose environment changes one is started directly. */
const UNSETTABLE = new Set(['SHELLOPTS', 'BASHOPTS', 'BASHPID', 'PPID', 'UID', 'EUID', 'BASH_VERSINFO', 'GROUPS']);
const NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;
const SIGNAL_NAMES = new Map(Object.entries(constants.signals).map(([k, v]) => [v as number, k as NodeJS.Signals]));

/** A word bash reads back as exactly `s` (no NUL: callers check). */
export const quote = (s: string): string => `'${s.replaceAll("'", `'\\''`)}'`;

interface Pending {
  req: Launch;
  ev: LaunchEvents;
  pid?: number;
}

/** Whether bash ended a tool by exiting or a signal, from its job line (`Done`, `Exit 3`, `Killed`, `Terminated`…). */
function jobEnding(text: string): 'exit' | 'signal' | undefined {
  if (/^(Running|Stopped|Continued)\b/.test(text)) return undefined;
  return /^(Done|Exit)\b/.test(text) ? 'exit' : 'signal';
}

class Helper {
  readonly child: ChildProcess;
  private readonly pending = new Map<number, Pending>();
  private readonly endings = new Map<number, 'exit' | 'signal'>();
  private readonly base: NodeJS.ProcessEnv;
  private readonly shellBase: NodeJS.ProcessEnv;
  /** The ALWAYS part of a request on nyl's own environment, the same every time. */
  private readonly fixed: { x: string[]; u: string[] } | undefined;
  private nextId = 0;
  private buf = '';
  private closed = false;
  /** It answered at least once: it works on this machine. */
  answered = false;
  accepting = true;

  constructor(bash: string, onGone: (helper: Helper) => void) {
    this.base = { ...process.env };
    this.shellBase = helperShellEnv(this.base);
    this.fixed = this.alwaysOps(this.base);
    const wd = watchdogInput();
    this.child = spawn(bash, ['--noprofile', '--norc', '-c', SCRIPT, 'nyl-tools'], {
      detached: true,
      stdio: ['pipe', 'pipe', 'ignore', wd ?? 'ignore'],
      env: this.shellBase,
    });
    this.child.unref();
    const stdin = this.child.stdin as unknown as { unref?: () => void; on: Readable['on'] };
    stdin.unref?.();
    stdin.on('error', () => {});
    const out = this.child.stdout as Readable & { unref?: () => void; ref?: () => void };
    out.setEncoding('utf8');
    out.unref?.();
    out.on('data', (chunk: string) => this.onData(chunk));
    const gone = () => {
      this.accepting = false;
      onGone(this);
    };
    this.child.on('error', () => {
      gone();
      this.close();
    });
    this.child.on('exit', gone);
    out.on('close', () => this.close());
  }

  /** Sends a request; false when its environment cannot be set by the helper (start it directly). */
  launch(req: Launch, ev: LaunchEvents): boolean {
    const env = this.envOps(req);
    if (!env) return false;
    const words = [...req.argv, req.cwd, req.stdout, req.stderr, ...env.x];
    if (words.some((w) => w.includes('\0'))) return false;
    const id = ++this.nextId;
    const body =
      `__nyl_i=${id};__nyl_d=${quote(req.cwd)};__nyl_o=${quote(req.stdout)};__nyl_e=${quote(req.stderr)};` +
      `__nyl_s=${req.stopSignal.replace(/^SIG/, '')};__nyl_n=${quote(req.argv0 ?? (req.argv[0] as string))};` +
      `__nyl_a=(${req.argv.map(quote).join(' ')});__nyl_x=(${env.x.map(quote).join(' ')});` +
      `__nyl_u=(${env.u.join(' ')});nyl_spawn\n`;
    this.pending.set(id, { req, ev });
    if (this.pending.size === 1) (this.child.stdout as Readable & { ref?: () => void }).ref?.();
    this.child.stdin?.write(`${Buffer.byteLength(body)}\n${body}`);
    return true;
  }

  /** Exports and unsets that turn the helper's environment into the tool's; undefined when bash cannot. */
  private envOps(req: Launch): { x: string[]; u: string[] } | undefined {
    if (!req.env) {
      const extra = req.extraEnv ?? {};
      let ops = this.fixed;
      if (!ops) return undefined;
      const touched = Object.keys(extra).filter((k) => ALWAYS_SET.has(k));
      if (touched.length) ops = this.alwaysOps({ ...this.base, ...extra });
      if (!ops) return undefined;
      const x = [...ops.x];
      for (const [k, v] of Object.entries(extra)) {
        if (ALWAYS_SET.has(k) || v === this.shellBase[k]) continue;
        if (!NAME.test(k) || UNSETTABLE.has(k)) return undefined;
        x.push(`${k}=${v}`);
      }
      return { x, u: ops.u };
    }
    const env = req.env;
    const ops = this.alwaysOps(env);
    if (!ops) return undefined;
    for (const [k, v] of Object.entries(env)) {
      if (v === undefined || k === '_' || ALWAYS_SET.has(k) || v === this.shellBase[k]) continue;
      if (!NAME.test(k) || UNSETTABLE.has(k)) return undefined;
      ops.x.push(`${k}=${v}`);
    }
    for (const k of Object.keys(this.shellBase)) {
      if (k === '_' || env[k] !== undefined) continue;
      if (!NAME.test(k) || UNSETTABLE.has(k)) return undefined;
      ops.u.push(k);
    }
    return ops;
  }

  private alwaysOps(env: NodeJS.ProcessEnv): { x: string[]; u: string[] } | undefined {
    const x: string[] = [];
    const u: string[] = [];
    for (const k of ALWAYS) {
      const v = env[k];
      // The helper never exports SHELLOPTS or BASHOPTS (kept out of its environment), nor can set them.
      if (UNSETTABLE.has(k)) {
        if (v !== undefined) return undefined;
      } else if (v === undefined) u.push(k);
      else x.push(`${k}=${v}`);
    }
    for (const k of Object.keys(env)) if (k.startsWith('BASH_FUNC_')) return undefined;
    return { x, u };
  }

  private onData(chunk: string): void {
    this.buf += chunk;
    let nl = this.buf.indexOf('\n');
    while (nl >= 0) {
      const line = this.buf.slice(0, nl);
      this.buf = this.buf.slice(nl + 1);
      this.onLine(line);
      nl = this.buf.indexOf('\n');
    }
  }

  private onLine(line: string): void {
    this.answered = true;
    if (line.startsWith('[')) {
      const m = /^\[\d+\][+-]?\s+(\d+)\s+(\S.*)$/.exec(line);
      const ending = m && jobEnding(m[2] as string);
      if (m && ending) this.endings.set(Number(m[1]), ending);
      return;
    }
    const [kind, idText, value = ''] = line.split(' ');
    const id = Number(idText);
    const p = this.pending.get(id);
    if (!p) return;
    if (kind === 'P') {
      p.pid = Number(value);
      p.ev.started(p.pid);
      return;
    }
    this.settle(id);
    if (kind === 'E') {
      if (p.pid !== undefined) p.ev.exited(null, 'SIGKILL');
      else p.ev.failed(notStarted(value, p.req));
      return;
    }
    if (kind !== 'X') return;
    const status = Number(value);
    const ending = p.pid === undefined ? undefined : this.endings.get(p.pid);
    if (p.pid !== undefined) this.endings.delete(p.pid);
    // Without its job line (it should not happen), a status past 128 is taken for a signal: unknown effects.
    const signal = status > 128 && ending !== 'exit' ? SIGNAL_NAMES.get(status - 128) : undefined;
    if (signal) p.ev.exited(null, signal);
    else p.ev.exited(status, null);
  }

  private settle(id: number): void {
    this.pending.delete(id);
    if (!this.pending.size) (this.child.stdout as Readable & { unref?: () => void }).unref?.();
  }

  /** Every wrapper is gone with the helper: what never started can be started again; what did, ended unseen. */
  private close(): void {
    if (this.closed) return;
    this.closed = true;
    this.accepting = false;
    for (const [id, p] of [...this.pending]) {
      this.settle(id);
      if (p.pid === undefined) p.ev.retry();
      else p.ev.exited(null, 'SIGKILL');
    }
  }
}

function notStarted(why: string, req: Launch): string {
  const name = req.argv0 ?? req.argv[0];
  switch (why) {
    case 'cwd':
      return `spawn ${name} ENOENT (no folder ${req.cwd})`;
    case 'ENOENT':
    case 'EACCES':
      return `spawn ${req.argv[0]} ${why}`;
    case 'open':
      return 'its output files could not be created';
    case 'env':
      return 'its environment could not be set';
    default:
      return 'the tool helper ended before it started';
  }
}

let current: Helper | undefined;
let enabled = process.platform !== 'win32';
/** Helpers that went away without a word: after two, this machine's bash cannot run it. */
let silentDeaths = 0;
export const helperStats = { starts: 0 };

/** Turns the helper off (or on again) for this process: tools are then spawned by Node itself. */
export function useToolHelper(on: boolean): void {
  enabled = on && process.platform !== 'win32';
}

/**
 * Starts a tool through the helper. False when the helper cannot take it (off, unavailable, an
 * environment bash cannot set, a NUL byte): the caller spawns it itself.
 */
export function launchTool(req: Launch, ev: LaunchEvents): boolean {
  if (!enabled || silentDeaths >= 2) return false;
  if (!current?.accepting) {
    const bash = bashPath();
    if (!bash) return false;
    helperStats.starts++;
    current = new Helper(bash, (h) => {
      if (!h.answered) silentDeaths++;
      if (current === h) current = undefined;
    });
  }
  return current.launch(req, ev);
}
