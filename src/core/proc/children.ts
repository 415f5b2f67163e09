import { type ChildProcess, type SpawnOptions, spawn } from 'node:child_process';
import { guard, type ListedGroup, release, type StopTarget } from './watchdog.js';

/**
 * Every process nyl starts (git and tools) runs in a process group of its own — so a terminal's
 * Ctrl+C reaches nyl, which finishes its writes, not the child in the middle of one — and is
 * listed here, so that every way out of nyl ends them all (endAll), and the watchdog ends the
 * guarded ones even when nyl is killed.
 */
const live = new Set<ChildProcess>();
/** Children that hold git's lock files while they run (fetches): ended with SIGTERM first (endGently). */
const gentle = new Set<ChildProcess>();
/** Groups of tools the tool helper started (spawner.ts): not nyl's children, ended the same way. */
const liveGroups = new Set<number>();

/** A group the tool helper started is running / is gone. */
export function adoptGroup(pgid: number): void {
  liveGroups.add(pgid);
}
export function dropGroup(pgid: number): void {
  liveGroups.delete(pgid);
}

export function spawnGroup(
  cmd: string,
  args: string[],
  opts: SpawnOptions & {
    guarded?: 'tool' | 'git';
    stopSignal?: NodeJS.Signals;
    stopTarget?: StopTarget;
    endGently?: boolean;
  },
): ChildProcess {
  const { guarded, stopSignal, stopTarget, endGently: soft, ...spawnOpts } = opts;
  const child = spawn(cmd, args, { ...spawnOpts, detached: true });
  const pid = child.pid;
  if (pid === undefined) return child; // it failed to start: its 'error' event says why
  live.add(child);
  if (soft) gentle.add(child);
  if (guarded) guard(pid, stopSignal, guarded, stopTarget);
  child.once('exit', () => {
    live.delete(child);
    gentle.delete(child);
    if (guarded) release(pid);
  });
  return child;
}

/**
 * Ends the children spawned `endGently` that still run (or those of them whose group is one of
 * `pids`) with SIGTERM, on which git removes its lock files (a depth fetch's `shallow.lock`: a
 * SIGKILL leaves it, and every later fetch of the clone fails), waits up to `ms` for them to go,
 * and SIGKILLs what is left. A child that went is off the list: an id it had is never signalled.
 */
export async function endGently(ms = 1_000, pids?: number[]): Promise<void> {
  const running = [...gentle].filter((c) => c.exitCode === null && c.signalCode === null);
  const chosen = pids ? running.filter((c) => c.pid !== undefined && pids.includes(c.pid)) : running;
  if (!chosen.length) return;
  for (const c of chosen) signalGroup(c.pid, 'SIGTERM');
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([
    Promise.all(chosen.map((c) => new Promise((resolve) => c.once('exit', resolve)))),
    new Promise((resolve) => {
      timer = setTimeout(resolve, ms);
    }),
  ]);
  clearTimeout(timer);
  for (const c of chosen) if (gentle.has(c)) signalGroup(c.pid, 'SIGKILL');
}

/** Signals a child's whole process group; quiet when it is gone. */
export function signalGroup(pid: number | undefined, sig: NodeJS.Signals): void {
  if (pid === undefined) return;
  try {
    process.kill(-pid, sig);
  } catch {
    try {
      process.kill(pid, sig); // not a group leader (Windows): the process itself
    } catch {
      /* gone */
    }
  }
}

/** Signals a group's leader alone (terraform, tofu: the tool, not the providers it runs); quiet when it is gone. */
export function signalLeader(pid: number | undefined, sig: NodeJS.Signals): void {
  if (pid === undefined) return;
  try {
    process.kill(pid, sig);
  } catch {
    /* gone */
  }
}

/** Sends a listed group its stop signal: to its leader alone when it is leader-only, else to the group. */
export function signalStop(g: Pick<ListedGroup, 'pgid' | 'signal' | 'leader'>): void {
  if (g.leader) signalLeader(g.pgid, g.signal);
  else signalGroup(g.pgid, g.signal);
}

/** Ends every child still running: the last thing every exit path of nyl does. */
export function endAll(): void {
  for (const c of live) signalGroup(c.pid, 'SIGKILL');
  for (const g of liveGroups) signalGroup(g, 'SIGKILL');
  live.clear();
  liveGroups.clear();
}

/** Children still running (tests and diagnostics). */
export function liveChildren(): number {
  return live.size + liveGroups.size;
}
