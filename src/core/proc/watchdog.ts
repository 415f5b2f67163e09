import { type ChildProcess, spawn } from 'node:child_process';
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import type { Socket } from 'node:net';
import { bashPath, helperShellEnv } from './bash.js';
import { workPath } from './workdir.js';

/**
 * The watchdog ends the process groups nyl started when nyl itself dies, by any signal, SIGKILL
 * included (Linux has no parent-death signal a Node process can ask for its children). It is a
 * small bash loop started once per nyl process, on first need, in a process group of its own: nyl
 * writes `+PGID SIGNAL` on its stdin when a group starts and `-PGID` when it is gone. When its
 * stdin reaches EOF — nyl exited or was killed, the kernel closes the pipe either way — it sends
 * each group still listed its stop signal (SIGTERM, or SIGINT for tools whose graceful stop that
 * is), waits up to the grace for them to go, then sends SIGKILL to what is left. With a state file
 * it keeps the list there, for a CI post step or `nyl lease break` on the same host: a log of
 * `+PGID SIGNAL` and `-PGID` lines, appended (no process started per change), to which the tool
 * helpers' children (spawner.ts) append their own groups before they exec — so a tool is listed
 * before nyl even hears of it — and which it reads back at EOF; removed once every group is gone.
 */
const SCRIPT = `
grace_ms=$1; state=$2; live=" "
while IFS=' ' read -r cmd sig; do
  g=\${cmd#[+-]}
  case $g in ''|*[!0-9]*) continue ;; esac
  case $sig in ''|*[!A-Z0-9]*) sig=TERM ;; esac
  if [ -n "$state" ]; then printf '%s %s\\n' "$cmd" "$sig" >> "$state"; continue; fi
  case $cmd in
    +*) live="$live$g "; eval "sig_$g=$sig" ;;
    -*) live="\${live/ $g / }" ;;
  esac
done
# The log lists nyl's lines and those the tool helpers' children appended themselves.
if [ -n "$state" ] && [ -f "$state" ]; then
  while IFS=' ' read -r cmd sig; do
    g=\${cmd#[+-]}
    case $g in ''|*[!0-9]*) continue ;; esac
    case $sig in ''|*[!A-Z0-9]*) sig=TERM ;; esac
    live="\${live/ $g / }"
    case $cmd in +*) live="$live$g "; eval "sig_$g=$sig" ;; esac
  done < "$state"
fi
set -- $live
if [ $# -gt 0 ]; then
  for g in "$@"; do eval "s=\\$sig_$g"; kill -"$s" -- "-$g" 2>/dev/null; done
  n=$(( (grace_ms + 99) / 100 ))
  while [ $n -gt 0 ]; do
    alive=0
    for g in "$@"; do kill -0 -- "-$g" 2>/dev/null && alive=1; done
    [ $alive -eq 0 ] && break
    sleep 0.1; n=$(( n - 1 ))
  done
  for g in "$@"; do kill -KILL -- "-$g" 2>/dev/null; done
fi
[ -n "$state" ] && rm -f "$state"
exit 0
`;

let child: ChildProcess | undefined;
/** stateFile: a path, '' for none, or 'auto' for one in nyl's work folder (made when first asked). */
let settings = { graceMs: 30_000, stateFile: 'auto' };
const guarded = new Map<number, 'tool' | 'git'>();

/** Grace the watchdog gives groups between their stop signal and SIGKILL, and where it lists them; before first use. */
export function configureWatchdog(opts: { graceMs?: number; stateFile?: string }): void {
  settings = { ...settings, ...opts };
}

/** Where the watchdog lists the live groups ('' when none is kept). */
export function watchdogStateFile(): string {
  if (settings.stateFile === 'auto') settings.stateFile = process.platform === 'win32' ? '' : workPath('groups');
  return settings.stateFile;
}

function start(): ChildProcess | undefined {
  if (child || process.platform === 'win32') return child;
  try {
    // Made here, before anyone may append to it (the helpers' children do, at once).
    const file = watchdogStateFile();
    if (file) writeFileSync(file, '', { mode: 0o600 });
    const args = ['--noprofile', '--norc', '-c', SCRIPT, 'nyl-watchdog', String(settings.graceMs), watchdogStateFile()];
    child = spawn(bashPath() ?? 'bash', args, {
      detached: true,
      stdio: ['pipe', 'ignore', 'ignore'],
      env: helperShellEnv(),
    });
  } catch {
    return undefined;
  }
  child.on('error', () => {
    child = undefined;
  });
  child.stdin?.on('error', () => {});
  // It must never keep nyl alive: nyl exiting is exactly what it waits for.
  child.unref();
  (child.stdin as Socket | null)?.unref();
  return child;
}

/**
 * Where the tool helpers' children list the groups they start: the watchdog's state file, with
 * the watchdog running ('' when there is none).
 */
export function watchdogLog(): string {
  const file = watchdogStateFile();
  return file && start() ? file : '';
}

/** A group the tool helper announced to the watchdog itself: listed with the run's groups, released as usual. */
export function noteGuarded(pgid: number): void {
  guarded.set(pgid, 'tool');
}

/** Puts a process group under the watchdog: it dies with nyl (its stop signal first, then SIGKILL). */
export function guard(pgid: number, stopSignal: NodeJS.Signals = 'SIGTERM', what: 'tool' | 'git' = 'tool'): void {
  guarded.set(pgid, what);
  start()?.stdin?.write(`+${pgid} ${stopSignal.replace(/^SIG/, '')}\n`);
}

/** A group a tool helper struck off the watchdog's log itself (it is gone): forgotten here too. */
export function forgetGuarded(pgid: number): void {
  guarded.delete(pgid);
}

/** The group is gone (or nyl ended it itself): nothing to do for it any more. */
export function release(pgid: number): void {
  guarded.delete(pgid);
  child?.stdin?.write(`-${pgid}\n`);
}

/** Tools' process groups under the watchdog now (recorded with the run, for the post step and lease break). */
export function guardedGroups(): number[] {
  return [...guarded].filter(([, w]) => w === 'tool').map(([g]) => g);
}

/** The groups a watchdog's state file lists (another nyl process's, e.g. a killed main step's). */
export function groupsListedIn(file: string): number[] {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch {
    return [];
  }
  const live = new Set<number>();
  for (const line of text.split('\n')) {
    const n = Number(line.split(' ')[0]?.replace(/^[+-]/, ''));
    if (!Number.isInteger(n) || n <= 0) continue;
    if (line.startsWith('-')) live.delete(n);
    else live.add(n);
  }
  return [...live];
}

/**
 * Whether a process group still has a live member. A zombie (dead, not yet reaped — containers
 * whose init does not reap are common) does not count: on Linux the process table says which.
 */
export function groupAlive(pgid: number): boolean {
  try {
    process.kill(-pgid, 0);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'EPERM') return false;
  }
  if (process.platform !== 'linux') return true;
  try {
    for (const pid of readdirSync('/proc')) {
      if (!/^\d+$/.test(pid)) continue;
      let stat: string;
      try {
        stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
      } catch {
        continue;
      }
      // pid (comm) state ppid pgrp …; comm may hold spaces and parentheses: read after the last ')'.
      const [state, , pgrp] = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      if (Number(pgrp) === pgid && state !== 'Z' && state !== 'X') return true;
    }
    return false;
  } catch {
    return true;
  }
}
