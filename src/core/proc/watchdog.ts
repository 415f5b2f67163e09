import { type ChildProcess, spawn } from 'node:child_process';
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import type { Socket } from 'node:net';
import { bashPath, helperShellEnv } from './bash.js';
import { workPath } from './workdir.js';

/**
 * The watchdog ends the process groups nyl started when nyl itself dies, by any signal, SIGKILL
 * included (Linux has no parent-death signal a Node process can ask for its children). It is a
 * small bash loop started once per nyl process, on first need, in a process group of its own. Nyl
 * writes it a line per change:
 *
 *   +PGID SIG          a group started: at nyl's death it gets SIG (TERM when missing)
 *   +PGID SIG leader   the same, but SIG goes to the process PGID alone (the tool, which leads
 *                      its group): terraform and tofu stop their providers themselves, and a
 *                      signal to the group would kill those mid-create (they die of SIGTERM)
 *   ~PGID              its stop signal was sent already: not sent again (a second SIGINT makes
 *                      terraform exit at once), SIGKILL after the grace still is
 *   -PGID              it is gone
 *
 * When its stdin reaches EOF — nyl exited or was killed, the kernel closes the pipe either way —
 * it sends each group still listed its stop signal, waits up to the grace for it to end (for a
 * leader-only group: the leader), then sends SIGKILL to each group. With a state file it keeps the
 * list there, for a CI post step or `nyl lease break` on the same host: a log of those lines,
 * appended (no process started per change), to which the tool helpers' children (spawner.ts)
 * append their own groups before they exec — so a tool is listed before nyl even hears of it —
 * and which it reads back at EOF; it appends `~PGID` for each leader it signals then (so that the
 * post step does not signal it again), and removes the file once every group is gone.
 */
const SCRIPT = `
grace_ms=$1; state=$2; live=" "
# A line read into cmd, sig and to, checked: g its group; false when it is none.
parse() {
  g=\${cmd#[+~-]}
  case $g in ''|*[!0-9]*) return 1 ;; esac
  case $sig in ''|*[!A-Z0-9]*) sig=TERM ;; esac
  [ "$to" = leader ] || to=
}
note() {
  case $cmd in
    +*) live="\${live/ $g / }$g "; eval "sig_$g=$sig to_$g=$to sent_$g=" ;;
    -*) live="\${live/ $g / }" ;;
    '~'*) eval "sent_$g=1" ;;
  esac
}
while IFS=' ' read -r cmd sig to; do
  parse || continue
  if [ -z "$state" ]; then note; continue; fi
  case $cmd in
    +*) printf '%s %s%s\\n' "$cmd" "$sig" "\${to:+ $to}" >> "$state" ;;
    *) printf '%s\\n' "$cmd" >> "$state" ;;
  esac
done
# The log lists nyl's lines and those the tool helpers' children appended themselves.
if [ -n "$state" ] && [ -f "$state" ]; then
  while IFS=' ' read -r cmd sig to; do parse && note; done < "$state"
fi
set -- $live
if [ $# -gt 0 ]; then
  for g in "$@"; do
    eval "s=\\$sig_$g t=\\$to_$g d=\\$sent_$g"
    [ -n "$d" ] && continue
    if [ -z "$t" ]; then kill -"$s" -- "-$g" 2>/dev/null; continue; fi
    kill -"$s" -- "$g" 2>/dev/null
    [ -n "$state" ] && printf '~%s\\n' "$g" >> "$state"
  done
  n=$(( (grace_ms + 99) / 100 ))
  while [ $n -gt 0 ]; do
    alive=0
    for g in "$@"; do
      eval "t=\\$to_$g"
      if [ -n "$t" ]; then kill -0 -- "$g" 2>/dev/null && alive=1; else kill -0 -- "-$g" 2>/dev/null && alive=1; fi
    done
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

/** Who gets a group's stop signal: the group, or its leader alone (the tool; SIGKILL still goes to the group). */
export type StopTarget = 'group' | 'leader';

/** The tail of a group's `+PGID` line: its stop signal, and `leader` when the tool alone gets it. */
export const stopWords = (stopSignal: NodeJS.Signals, target: StopTarget = 'group'): string =>
  `${stopSignal.replace(/^SIG/, '')}${target === 'leader' ? ' leader' : ''}`;

/** Puts a process group under the watchdog: it dies with nyl (its stop signal first, then SIGKILL). */
export function guard(
  pgid: number,
  stopSignal: NodeJS.Signals = 'SIGTERM',
  what: 'tool' | 'git' = 'tool',
  target: StopTarget = 'group',
): void {
  guarded.set(pgid, what);
  start()?.stdin?.write(`+${pgid} ${stopWords(stopSignal, target)}\n`);
}

/** Nyl sent a leader-only group its stop signal: the watchdog (and the post step) must not send it again. */
export function stopSent(pgid: number): void {
  child?.stdin?.write(`~${pgid}\n`);
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

/** A group a watchdog's state file lists, and how it is to be stopped. */
export interface ListedGroup {
  pgid: number;
  /** Its stop signal (SIGTERM when the line names none). */
  signal: NodeJS.Signals;
  /** The stop signal goes to the leader alone (terraform, tofu); SIGKILL to the group. */
  leader: boolean;
  /** Its stop signal was sent already (`~PGID`): another would make terraform exit at once. */
  sent: boolean;
}

const SIGNAL_WORD = /^[A-Z0-9]+$/;

/** The groups a watchdog's state file lists (another nyl process's, e.g. a killed main step's), with their stop. */
export function stopsListedIn(file: string): ListedGroup[] {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch {
    return [];
  }
  const live = new Map<number, ListedGroup>();
  for (const line of text.split('\n')) {
    const [head = '', sig = '', to] = line.split(' ');
    const pgid = Number(head.replace(/^[+~-]/, ''));
    if (!Number.isInteger(pgid) || pgid <= 0) continue;
    const listed = live.get(pgid);
    if (head.startsWith('-')) live.delete(pgid);
    else if (head.startsWith('~')) {
      if (listed) listed.sent = true;
    } else {
      // Deleted first: a pid used again is listed last.
      live.delete(pgid);
      const signal = `SIG${SIGNAL_WORD.test(sig) ? sig : 'TERM'}` as NodeJS.Signals;
      live.set(pgid, { pgid, signal, leader: to === 'leader', sent: false });
    }
  }
  return [...live.values()];
}

/** The groups a watchdog's state file lists. */
export function groupsListedIn(file: string): number[] {
  return stopsListedIn(file).map((g) => g.pgid);
}

/** A process's state and group from /proc (Linux); undefined when it is gone. */
function procStat(pid: string | number): { state: string; pgrp: number } | undefined {
  let stat: string;
  try {
    stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return undefined;
  }
  // pid (comm) state ppid pgrp …; comm may hold spaces and parentheses: read after the last ')'.
  const [state = '', , pgrp] = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return { state, pgrp: Number(pgrp) };
}

const running = (s: { state: string } | undefined) => !!s && s.state !== 'Z' && s.state !== 'X';

/** Whether kill(2) finds `target` (a pid, or -pgid for a group): EPERM means it exists. */
function found(target: number): boolean {
  try {
    process.kill(target, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * Whether a process group still has a live member. A zombie (dead, not yet reaped — containers
 * whose init does not reap are common) does not count: on Linux the process table says which.
 */
export function groupAlive(pgid: number): boolean {
  if (!found(-pgid)) return false;
  if (process.platform !== 'linux') return true;
  try {
    for (const pid of readdirSync('/proc')) {
      if (!/^\d+$/.test(pid)) continue;
      const st = procStat(pid);
      if (running(st) && st?.pgrp === pgid) return true;
    }
    return false;
  } catch {
    return true;
  }
}

/** Whether a process lives (a zombie does not, on Linux). */
export function processAlive(pid: number): boolean {
  if (!found(pid)) return false;
  if (process.platform !== 'linux') return true;
  const st = procStat(pid);
  return !st || running(st); // unreadable: kill(2) found it
}

/** Whether the stop of a listed group still waits: for its leader (leader-only), else for any of the group. */
export const stopPending = (g: ListedGroup): boolean => (g.leader ? processAlive(g.pgid) : groupAlive(g.pgid));
