import type { UnitConfig } from '../../config/model.js';
import { RETRY_DELAY_CAP_MS } from '../../config/schema.js';
import type { ExecuteResult, RecoveryPolicy } from '../../drivers/driver.js';
import { formatDuration, parseDuration } from '../../util/duration.js';

/**
 * Retries inside a run (a unit's `retries: {limit, backoff}`): the policy alone — how long to
 * wait, whether to run again, what the row says. The attempts themselves are in attempts.ts.
 */

export const DEFAULT_BACKOFF_MS = 10_000;

export interface RetryPolicy {
  /** Runs again at most this many times: limit + 1 attempts in all. */
  limit: number;
  backoffMs: number;
}

/** A unit's retry policy; none when it has no retries (or limit 0). */
export function retryPolicy(u: UnitConfig | undefined): RetryPolicy | undefined {
  const r = u?.doc.retries;
  if (!r?.limit) return undefined;
  return { limit: r.limit, backoffMs: (r.backoff && parseDuration(r.backoff)) || DEFAULT_BACKOFF_MS };
}

export function maxAttempts(p: RetryPolicy): number {
  return p.limit + 1;
}

/**
 * The wait after attempt `failed` (1, 2, …): backoff × 2^(failed-1), at most 5m. The cap stays
 * below the lease's grace, and the write before each wait extends the deadline past it.
 */
export function retryDelayMs(p: RetryPolicy, failed: number): number {
  return Math.min(p.backoffMs * 2 ** Math.min(failed - 1, 20), RETRY_DELAY_CAP_MS);
}

/**
 * Whether attempt `attempt` runs again: a retryable failure does; an uncertain result (a timeout)
 * only when the unit's recovery policy converges, as the next reconcile would run it anyway.
 * Never after a cancel, never past the limit.
 */
export function shouldRetry(
  p: RetryPolicy,
  attempt: number,
  r: ExecuteResult,
  policy: RecoveryPolicy,
  cancelled: boolean,
): boolean {
  if (cancelled || attempt > p.limit) return false;
  if (r.status === 'failed') return r.retryable;
  return r.status === 'uncertain' && policy === 'converge';
}

/** The row's detail after more than one attempt (one attempt keeps the plain detail). */
export function attemptsDetail(r: ExecuteResult, attempts: number, p: RetryPolicy, detail: string): string {
  if (attempts < 2) return detail;
  if (r.status === 'succeeded') return `succeeded on attempt ${attempts} of ${maxAttempts(p)}`;
  if (r.status === 'failed') return `failed ${attempts} times: ${detail}`;
  return `uncertain on attempt ${attempts} of ${maxAttempts(p)}: ${detail}`;
}

/** What the live progress says when a retry is scheduled. */
export function retryNote(unit: string, r: ExecuteResult, next: number, p: RetryPolicy, delayMs: number): string {
  const why = r.status === 'succeeded' ? '' : firstLine(r.reason);
  return `${unit} ${r.status} (${why}); retrying in ${formatDuration(delayMs)}: attempt ${next} of ${maxAttempts(p)}`;
}

function firstLine(s: string): string {
  return s.split('\n')[0] ?? '';
}
