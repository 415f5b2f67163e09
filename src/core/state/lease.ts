import { hostname, userInfo } from 'node:os';
import { isoTime } from '../util/time.js';
import type { Holder, LeaseDoc, RunRecord } from './documents.js';
import type { EnvState } from './read.js';

/** Deadlines are written by the holder's clock; another runner's clock may differ this much. */
export const CLOCK_SKEW_MS = 60_000;
export const GRACE_MS = 10 * 60_000;
export const RESOLUTION_TIMEOUT_MS = 30 * 60_000;

export function currentHolder(env: NodeJS.ProcessEnv = process.env): Holder {
  let user = 'unknown';
  try {
    user = userInfo().username || 'unknown';
  } catch {
    /* no passwd entry (containers) */
  }
  const h: Holder = { id: `${user}@${hostname() || 'localhost'}` };
  if (env.GITHUB_ACTOR) h.actor = env.GITHUB_ACTOR;
  if (env.GITHUB_RUN_ID)
    h.workflowRun = `${env.GITHUB_SERVER_URL ?? 'https://github.com'}/${env.GITHUB_REPOSITORY ?? ''}/actions/runs/${env.GITHUB_RUN_ID}`;
  return h;
}

export function holderText(h: Holder): string {
  return h.actor ? `${h.id} (${h.actor}${h.workflowRun ? `, ${h.workflowRun}` : ''})` : h.id;
}

export type LeaseVerdict =
  | { kind: 'free' }
  | { kind: 'held'; run: string; operation: string; holder: Holder; deadline: string; via: 'lease' | 'run-ref' }
  | { kind: 'expired'; run: string }
  | { kind: 'broken'; run: string; lease: LeaseDoc };

function expired(deadline: string, now: number): boolean {
  return Date.parse(deadline) + CLOCK_SKEW_MS < now;
}

/** Who holds the environment: a live lease, or an unfinished run ref whose deadline is ahead. */
export function leaseVerdict(state: EnvState, now: number): LeaseVerdict {
  const l = state.lease;
  if (l?.state === 'held' && !expired(l.deadline, now))
    return { kind: 'held', run: l.run, operation: l.operation, holder: l.holder, deadline: l.deadline, via: 'lease' };
  // Deleting the lease ref does not free the environment: a live run ref holds it too. While a
  // lease document exists it is the authority: a run ref it does not name lost the lease.
  if (!l)
    for (const r of state.runs.values()) {
      const rec = r.record;
      if (rec && rec.phase !== 'finished' && !expired(rec.deadline, now))
        return {
          kind: 'held',
          run: rec.run,
          operation: rec.operation,
          holder: rec.holder,
          deadline: rec.deadline,
          via: 'run-ref',
        };
    }
  if (l?.state === 'broken') return { kind: 'broken', run: l.run, lease: l };
  if (l?.state === 'held') return { kind: 'expired', run: l.run };
  return { kind: 'free' };
}

export function newLease(
  environment: string,
  run: string,
  operation: string,
  holder: Holder,
  now: number,
  deadlineMs: number,
): LeaseDoc {
  const at = isoTime(now);
  return {
    schema: 'nyl.lease/v1',
    environment,
    state: 'held',
    run,
    operation,
    holder,
    acquiredAt: at,
    renewedAt: at,
    deadline: isoTime(now + deadlineMs),
  };
}

export function runRecordDeadline(rec: RunRecord): number {
  return Date.parse(rec.deadline);
}
