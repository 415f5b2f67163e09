import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { sleep } from './repo.js';

/** A process's state, parent and group, from /proc; undefined when it is gone. */
export function procStat(
  pid: number | string,
): { comm: string; state: string; ppid: number; pgrp: number } | undefined {
  let text: string;
  try {
    text = readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return undefined;
  }
  // pid (comm) state ppid pgrp …; comm may hold spaces and parentheses: read after the last ')'.
  const [state = '', ppid, pgrp] = text.slice(text.lastIndexOf(')') + 2).split(' ');
  return {
    comm: text.slice(text.indexOf('(') + 1, text.lastIndexOf(')')),
    state,
    ppid: Number(ppid),
    pgrp: Number(pgrp),
  };
}

/** Live members of a process group (zombies do not count). */
export function groupMembers(pgid: number): { pid: number; comm: string; ppid: number }[] {
  const members: { pid: number; comm: string; ppid: number }[] = [];
  for (const p of readdirSync('/proc')) {
    if (!/^\d+$/.test(p)) continue;
    const s = procStat(p);
    if (s && s.pgrp === pgid && s.state !== 'Z' && s.state !== 'X') members.push({ pid: Number(p), ...s });
  }
  return members;
}

/** Polls `cond` every 20 ms; throws naming `what` once `timeoutMs` have passed. */
export async function waitFor(what: string, cond: () => boolean, timeoutMs: number): Promise<void> {
  const until = Date.now() + timeoutMs;
  while (!cond()) {
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`);
    await sleep(20);
  }
}

/** The output file of the tool run (nyl's private folders under `runnerTemp`) whose output holds `marker`; '' when none. */
export function toolLog(runnerTemp: string, marker: string): string {
  for (const d of readdirSync(runnerTemp))
    for (const f of readdirSync(join(runnerTemp, d)).filter((n) => n.endsWith('-log'))) {
      const text = readFileSync(join(runnerTemp, d, f), 'utf8');
      if (text.includes(marker)) return text;
    }
  return '';
}
