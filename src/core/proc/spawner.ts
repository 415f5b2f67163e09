import { type ChildProcess, spawn } from 'node:child_process';
import { constants } from 'node:os';
import type { Readable } from 'node:stream';
import { bashPath, helperShellEnv, SHELL_SENSITIVE } from './bash.js';
import { type StopTarget, stopWords, watchdogLog } from './watchdog.js';

/**
 * Tool helpers: long-lived bash processes that start every tool, so that Node never forks its own
 * large heap per tool (a fork copies its page tables and the parent takes a copy-on-write fault
 * for each page it touches until the child has exec'd: most of a small unit's cost). Each helper
 * runs one tool at a time; nyl starts another when all are busy, so there are as many as tools
 * ever ran at once. Nyl writes a helper one request per tool on stdin (a byte count, then bash code
 * that sets the request's variables, each word quoted by `quote`). The helper forks a child that
 * enters the folder, opens the output files (mode 0600), sets the environment, appends its
 * process group to the watchdog's log itself (`+PGID SIG [leader]`, watchdog.ts) — so a nyl
 * killed at any moment leaves no unguarded tool: the watchdog reads the log back once nyl is
 * gone, and a child that finds nyl gone after writing its line starts nothing — and execs the
 * tool in that group of its own (job control); the helper waits for it. On stdout, a line each:
 *
 *   P <id> <pid>        started (pid = its process group)
 *   E <id> <why>        not started (cwd, ENOENT, EACCES, open, env, gone): it made no effect
 *   [n]+ <pid> <how> …  bash's job line as it ended: `Done`/`Exit N` (it exited) or how a signal ended it
 *   X <id> <status> [r] ended, with bash's status (128 + N for signal N: the job line tells which);
 *                       `r`: nothing of its group was left, and the helper struck it off the log itself
 *
 * The tool gets exactly the environment asked for: a helper's own is nyl's without the variables
 * that would change the helper's shell (SHELL_SENSITIVE); every request sets those back or unsets
 * them, with SHLVL, PWD and OLDPWD, which the helper's shells change.
 *
 * A helper's stderr is /dev/null (what bash says there is never read: the answers above are its
 * words), so none of its commands redirects its own: each redirection costs the fork a few
 * system calls per tool.
 */
const SCRIPT = `
(( BASH_VERSINFO[0] > 4 || (BASH_VERSINFO[0] == 4 && BASH_VERSINFO[1] >= 1) )) || exit 3
LC_ALL=C
__nyl_log=$1 __nyl_nyl=$2 __nyl_um=$(umask)
__nyl_fail() { printf 'E %s %s\\n' "$__nyl_i" "$1"; exit 0; }
# Called in a ( … ) subshell (a function alone in the background would exec with SHLVL one
# lower): a job line names its command, and it named the subshell by its whole text then (40
# lines per tool, each also read by nyl).
__nyl_start() {
  cd -- "$__nyl_d" || __nyl_fail cwd
  # The output files before the tool's environment: a POSIXLY_CORRECT it exports would make a
  # failed redirection of exec end this shell without a word.
  umask 077
  { exec 5>"$__nyl_o"; } || __nyl_fail open
  if [ "$__nyl_e" = "$__nyl_o" ]; then exec 6>&5; else { exec 6>"$__nyl_e"; } || __nyl_fail open; fi
  umask "$__nyl_um"
  [ \${#__nyl_u[@]} -eq 0 ] || unset -v "\${__nyl_u[@]}" || __nyl_fail env
  [ \${#__nyl_x[@]} -eq 0 ] || export "\${__nyl_x[@]}" || __nyl_fail env
  __nyl_p=\${__nyl_a[0]}
  case $__nyl_p in
    */*) [ -e "$__nyl_p" ] || __nyl_fail ENOENT ;;
    *) __nyl_rest=\${PATH-/usr/bin:/bin}: __nyl_f=
       while [ -n "$__nyl_rest" ]; do
         __nyl_dir=\${__nyl_rest%%:*} __nyl_rest=\${__nyl_rest#*:}
         if [ -f "\${__nyl_dir:-.}/$__nyl_p" ] && [ -x "\${__nyl_dir:-.}/$__nyl_p" ]; then __nyl_f=\${__nyl_dir:-.}/$__nyl_p; break; fi
       done
       [ -n "$__nyl_f" ] || __nyl_fail ENOENT
       __nyl_p=$__nyl_f ;;
  esac
  [ -f "$__nyl_p" ] && [ -x "$__nyl_p" ] || __nyl_fail EACCES
  # __nyl_s: the stop signal, then "leader" when the tool alone gets it (watchdog.ts).
  printf '+%s %s\\n' "$BASHPID" "$__nyl_s" >> "$__nyl_log"
  kill -0 "$__nyl_nyl" || __nyl_fail gone
  printf 'P %s %s\\n' "$__nyl_i" "$BASHPID"
  exec -a "$__nyl_n" "$__nyl_p" "\${__nyl_a[@]:1}" 0</dev/null 1>&5 2>&6 5>&- 6>&-
}
set -m
trap 'jobs -l' CHLD
while IFS= read -r __nyl_len && IFS= read -r -N "$__nyl_len" __nyl_body; do
  eval "$__nyl_body"
  ( __nyl_start ) &
  __nyl_c=$!
  wait "$__nyl_c"; __nyl_st=$?
  while [ "$__nyl_st" -gt 128 ] && kill -0 "$__nyl_c"; do wait "$__nyl_c"; __nyl_st=$?; done
  # Its group gone with it: struck off the watchdog's log here, not by a write from nyl per tool.
  if kill -0 -- "-$__nyl_c"; then __nyl_r=; else printf -- '-%s\\n' "$__nyl_c" >> "$__nyl_log"; __nyl_r=r; fi
  printf 'X %s %s %s\\n' "$__nyl_i" "$__nyl_st" "$__nyl_r"
done
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
  /** …or, without env, nyl's environment (as when the first helper started) plus these. */
  extraEnv?: Record<string, string>;
  /** Files for its stdout and stderr (one path for both: one log). */
  stdout: string;
  stderr: string;
  /** The signal the watchdog sends its group first should nyl die… */
  stopSignal: NodeJS.Signals;
  /** …to the group (default) or to the tool alone (`leader`: terraform, tofu). */
  stopTarget?: StopTarget;
}

export interface LaunchEvents {
  started(pid: number): void;
  /** It never started (it made no effect). */
  failed(reason: string): void;
  /** struckOff: its group is gone and off the watchdog's log already (nyl need not release it). */
  exited(code: number | null, signal: NodeJS.Signals | null, struckOff?: boolean): void;
  /** The helper went away before it started it: start it some other way. */
  retry(): void;
}

/** Variables every request sets or unsets: the helpers' shells change or lack them. */
const ALWAYS = [...SHELL_SENSITIVE, 'SHLVL', 'PWD', 'OLDPWD'];
const ALWAYS_SET = new Set(ALWAYS);
/** Bash refuses to set these (readonly or its own): a tool whose environment changes one is started by Node. */
const UNSETTABLE = new Set(['SHELLOPTS', 'BASHOPTS', 'BASHPID', 'PPID', 'UID', 'EUID', 'BASH_VERSINFO', 'GROUPS']);
const NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;
const SIGNAL_NAMES = new Map(Object.entries(constants.signals).map(([k, v]) => [v as number, k as NodeJS.Signals]));

/** A word bash reads back as exactly `s` (no NUL: callers check). */
export const quote = (s: string): string => `'${s.replaceAll("'", `'\\''`)}'`;

type EnvOps = { x: string[]; u: string[] };

/** A variable bash can export or unset. */
const settable = (k: string) => NAME.test(k) && !UNSETTABLE.has(k);

/** The environment every helper starts with, and how a request turns it into a tool's. */
class EnvPlan {
  readonly base: NodeJS.ProcessEnv = { ...process.env };
  readonly shell = helperShellEnv(this.base);
  /** The ALWAYS part of a request on nyl's own environment: the same every time. */
  private readonly fixed = this.alwaysOps(this.base);

  /** Exports and unsets for the helper; undefined when bash cannot make the tool's environment. */
  ops(req: Launch): EnvOps | undefined {
    return req.env ? this.wholeEnv(req.env) : this.extraEnv(req.extraEnv ?? {});
  }

  /** nyl's own environment plus `extra`: its fixed part, and an export for each value the shell does not have. */
  private extraEnv(extra: Record<string, string>): EnvOps | undefined {
    const ops = Object.keys(extra).some((k) => ALWAYS_SET.has(k))
      ? this.alwaysOps({ ...this.base, ...extra })
      : this.fixed;
    if (!ops) return undefined;
    const x = [...ops.x];
    for (const [k, v] of Object.entries(extra)) {
      if (ALWAYS_SET.has(k) || v === this.shell[k]) continue;
      if (!settable(k)) return undefined;
      x.push(`${k}=${v}`);
    }
    return { x, u: ops.u };
  }

  /** A whole environment: exports for what differs from the shell's, unsets for what it lacks. */
  private wholeEnv(env: NodeJS.ProcessEnv): EnvOps | undefined {
    const ops = this.alwaysOps(env);
    if (!ops) return undefined;
    for (const [k, v] of Object.entries(env)) {
      if (v === undefined || k === '_' || ALWAYS_SET.has(k) || v === this.shell[k]) continue;
      if (!settable(k)) return undefined;
      ops.x.push(`${k}=${v}`);
    }
    for (const k of Object.keys(this.shell)) {
      if (k === '_' || env[k] !== undefined) continue;
      if (!settable(k)) return undefined;
      ops.u.push(k);
    }
    return ops;
  }

  private alwaysOps(env: NodeJS.ProcessEnv): EnvOps | undefined {
    const x: string[] = [];
    const u: string[] = [];
    for (const k of ALWAYS) {
      const v = env[k];
      // Helpers never have SHELLOPTS or BASHOPTS (kept out of their environment), nor can set them.
      if (UNSETTABLE.has(k)) {
        if (v !== undefined) return undefined;
      } else if (v === undefined) u.push(k);
      else x.push(`${k}=${v}`);
    }
    // Exported functions: bash re-exports them in its own words.
    for (const k of Object.keys(env)) if (k.startsWith('BASH_FUNC_')) return undefined;
    return { x, u };
  }
}

/** Whether bash's job line says the tool exited (`Done`, `Exit 3`) or a signal ended it (`Killed`, `Terminated`…). */
function jobEnding(text: string): 'exit' | 'signal' | undefined {
  if (/^(Running|Stopped|Continued)\b/.test(text)) return undefined;
  return /^(Done|Exit)\b/.test(text) ? 'exit' : 'signal';
}

function notStarted(why: string, req: Launch): string {
  switch (why) {
    case 'cwd':
      return `spawn ${req.argv0 ?? req.argv[0]} ENOENT (no folder ${req.cwd})`;
    case 'ENOENT':
    case 'EACCES':
      return `spawn ${req.argv[0]} ${why}`;
    case 'open':
      return 'its output files could not be created';
    case 'env':
      return 'its environment could not be set';
    default:
      return 'nyl was ending';
  }
}

interface Job {
  id: number;
  req: Launch;
  ev: LaunchEvents;
  pid?: number;
  ending?: 'exit' | 'signal';
  settled?: boolean;
}

type Stream = Readable & { ref?: () => void; unref?: () => void };

/** One helper: one tool at a time. */
class Helper {
  private readonly child: ChildProcess;
  private readonly out: Stream;
  private job: Job | undefined;
  private buf = '';
  private gone = false;
  /** It answered at least once: it works on this machine. */
  answered = false;

  constructor(
    bash: string,
    env: NodeJS.ProcessEnv,
    log: string,
    private readonly onGone: (h: Helper) => void,
  ) {
    this.child = spawn(bash, ['--noprofile', '--norc', '-c', SCRIPT, 'nyl-tools', log, String(process.pid)], {
      detached: true,
      stdio: ['pipe', 'pipe', 'ignore'],
      env,
    });
    // It must never keep nyl alive while idle; a running tool does (see run/settle).
    this.child.unref();
    (this.child.stdin as unknown as Stream | null)?.unref?.();
    this.child.stdin?.on('error', () => {});
    this.out = this.child.stdout as Stream;
    this.out.setEncoding('utf8');
    this.out.unref?.();
    this.out.on('data', (chunk: string) => this.onData(chunk));
    this.child.on('error', () => this.end());
    this.out.on('close', () => this.end());
  }

  get idle(): boolean {
    return !this.gone && !this.job;
  }

  run(job: Job, body: string): void {
    this.job = job;
    this.out.ref?.();
    this.child.stdin?.write(`${Buffer.byteLength(body)}\n${body}`);
  }

  private onData(chunk: string): void {
    this.buf += chunk;
    let nl = this.buf.indexOf('\n');
    while (nl >= 0) {
      this.onLine(this.buf.slice(0, nl));
      this.buf = this.buf.slice(nl + 1);
      nl = this.buf.indexOf('\n');
    }
  }

  private onLine(line: string): void {
    this.answered = true;
    const job = this.job;
    if (!job) return;
    if (line.startsWith('[')) {
      const m = /^\[\d+\][+-]?\s+(\d+)\s+(\S.*)$/.exec(line);
      const ending = m && Number(m[1]) === job.pid ? jobEnding(m[2] as string) : undefined;
      if (ending) job.ending = ending;
      return;
    }
    const [kind, id, value = '', flag] = line.split(' ');
    if (Number(id) !== job.id) return;
    if (kind === 'P') {
      job.pid = Number(value);
      job.ev.started(job.pid);
    } else if (kind === 'E') {
      job.settled = true;
      job.ev.failed(notStarted(value, job.req));
    } else if (kind === 'X') {
      this.job = undefined;
      this.out.unref?.();
      if (job.settled) return;
      const status = Number(value);
      // Without its job line (it should not happen), a status past 128 is taken for a signal: unknown effects.
      const signal = status > 128 && job.ending !== 'exit' ? SIGNAL_NAMES.get(status - 128) : undefined;
      if (signal) job.ev.exited(null, signal, flag === 'r');
      else job.ev.exited(status, null, flag === 'r');
    }
  }

  /** The helper is gone: its tool, if it never started, can be started again; if it did, it ended unseen. */
  private end(): void {
    if (this.gone) return;
    this.gone = true;
    const job = this.job;
    this.job = undefined;
    this.onGone(this);
    if (!job || job.settled) return;
    if (job.pid === undefined) job.ev.retry();
    else job.ev.exited(null, 'SIGKILL');
  }
}

let enabled = process.platform === 'linux';
let plan: EnvPlan | undefined;
const helpers: Helper[] = [];
/** Helpers that went away without a word: after two, this machine's bash cannot run them. */
let silentDeaths = 0;
let nextId = 0;
export const helperStats = { starts: 0 };

/** Turns the helpers off (or on again) for this process: tools are then spawned by Node itself. */
export function useToolHelpers(on: boolean): void {
  enabled = on && process.platform === 'linux';
}

/**
 * Starts a tool through an idle helper (starting one when none is). False when no helper can
 * take it (off, not Linux, no bash, an environment bash cannot set, a NUL byte): the caller
 * spawns it itself.
 */
export function launchTool(req: Launch, ev: LaunchEvents): boolean {
  if (!enabled || silentDeaths >= 2) return false;
  const bash = bashPath();
  if (!bash) return false;
  plan ??= new EnvPlan();
  const env = plan.ops(req);
  if (!env) return false;
  const words = [...req.argv, req.cwd, req.stdout, req.stderr, ...env.x];
  if (words.some((w) => w.includes('\0'))) return false;
  let helper = helpers.find((h) => h.idle);
  if (!helper) {
    // Without the watchdog's log the helpers' children could not list their groups before nyl knows them.
    const log = watchdogLog();
    if (!log) return false;
    helperStats.starts++;
    helper = new Helper(bash, plan.shell, log, (h) => {
      if (!h.answered) silentDeaths++;
      helpers.splice(helpers.indexOf(h), 1);
    });
    helpers.push(helper);
  }
  const id = ++nextId;
  const body =
    `__nyl_i=${id};__nyl_d=${quote(req.cwd)};__nyl_o=${quote(req.stdout)};__nyl_e=${quote(req.stderr)};` +
    `__nyl_s=${quote(stopWords(req.stopSignal, req.stopTarget))};__nyl_n=${quote(req.argv0 ?? (req.argv[0] as string))};` +
    `__nyl_a=(${req.argv.map(quote).join(' ')});__nyl_x=(${env.x.map(quote).join(' ')});__nyl_u=(${env.u.join(' ')})\n`;
  helper.run({ id, req, ev }, body);
  return true;
}
