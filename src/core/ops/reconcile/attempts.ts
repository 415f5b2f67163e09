import type { ExecuteResult } from '../../drivers/driver.js';
import { driverFor } from '../../drivers/index.js';
import { timeoutMs } from '../../resolve/desired.js';
import { type Checkpoint, FILES } from '../../state/documents.js';
import { GRACE_MS } from '../../state/lease.js';
import { sleepUnlessCancelled } from '../../util/cancel.js';
import {
  attemptsDetail,
  maxAttempts,
  type RetryPolicy,
  retryDelayMs,
  retryNote,
  retryPolicy,
  shouldRetry,
} from './retry.js';
import type { RunInput } from './run-input.js';
import { checkpointOf, type Outcome, type Task } from './task.js';

/** A task's last result, after how many attempts, under which retry policy (none: one attempt). */
export interface Attempted {
  result: ExecuteResult;
  attempts: number;
  policy?: RetryPolicy;
}

/**
 * A task's attempts in this run (`retries`). A failed attempt is checkpointed before the wait, so
 * a run killed while waiting is imported as failed after that many attempts; before the next
 * attempt starts, the run ref drops that checkpoint and records the attempt's number, so a run
 * killed during it leaves the unit uncertain at that attempt. A cancel ends the wait at once and
 * nothing more starts.
 */
export async function runAttempts(r: RunInput, t: Task, once: () => Promise<ExecuteResult>): Promise<Attempted> {
  const policy = retryPolicy(r.sel.units.get(t.name));
  const recovery = driverFor(t.desired.kind).policy(t.desired);
  for (let attempt = 1; ; attempt++) {
    const result = await once();
    const done = { result, attempts: attempt, policy };
    if (!policy || !shouldRetry(policy, attempt, result, recovery, stopped(r))) return settled(r, t.name, done);
    const delayMs = retryDelayMs(policy, attempt);
    r.ctx.onEvent({
      type: 'unit-retry',
      unit: t.name,
      kind: t.desired.kind,
      attempt: attempt + 1,
      of: maxAttempts(policy),
      delayMs,
      text: retryNote(t.name, result, attempt + 1, policy, delayMs),
    });
    if (!(await waitForAttempt(r, t, result, attempt, delayMs))) return settled(r, t.name, done);
  }
}

/** A cancel, or a lease found lost: no attempt starts. */
function stopped(r: RunInput): boolean {
  return r.ctx.cancellation.requested || r.writer.session.heartbeatFailure !== undefined;
}

/** Checkpoints attempt `attempt`, waits, records the next one; false when it must not start. */
async function waitForAttempt(
  r: RunInput,
  t: Task,
  result: ExecuteResult,
  attempt: number,
  delayMs: number,
): Promise<boolean> {
  const { writer, ctx } = r;
  const timeout = timeoutMs(t.desired);
  try {
    writer.checkpoint({ ...checkpointOf(t.desired, result, ctx.now(), r.source), attempts: attempt });
    writer.session.runFiles.set(FILES.runLog(t.name), Buffer.from(result.log));
    await writer.write(deadlineAtLeast(r, delayMs + timeout + GRACE_MS));
    await sleepUnlessCancelled(delayMs, ctx.cancellation);
    if (stopped(r)) return false;
    writer.session.runFiles.delete(FILES.runCheckpoint(t.name));
    recordAttempt(r, t.name, attempt + 1);
    await writer.write(deadlineAtLeast(r, timeout + GRACE_MS));
    return !stopped(r);
  } catch (e) {
    // Like a heartbeat that finds the lease lost: nothing more starts, the wave's end rethrows it.
    writer.session.writeFailed(e);
    return false;
  }
}

/** A write's deadline: never earlier than the one the run ref has (other units of the wave run on). */
function deadlineAtLeast(r: RunInput, ms: number): number {
  return Math.max(Date.parse(r.writer.record.deadline) - r.ctx.now(), ms);
}

/** The run record names the attempts actually made (a cancelled next attempt never started). */
function settled(r: RunInput, unit: string, a: Attempted): Attempted {
  if (a.attempts > 1 || r.writer.record.attempts?.[unit] !== undefined) recordAttempt(r, unit, a.attempts);
  return a;
}

function recordAttempt(r: RunInput, unit: string, attempt: number): void {
  r.writer.record.attempts = { ...r.writer.record.attempts, [unit]: attempt };
}

/** A retried unit's outcome and checkpoint name its attempts; its row says which one ended it. */
export function withAttempts(a: Attempted, o: Outcome, cp: Checkpoint): void {
  if (!a.policy) return;
  cp.attempts = a.attempts;
  // A failure's receipt is the earlier one: only a new receipt names this run's attempts.
  if (a.result.status === 'succeeded' && o.observed?.receipt) o.observed.receipt.attempts = a.attempts;
  if (o.observed?.condition) o.observed.condition.attempts = a.attempts;
  o.row.detail = attemptsDetail(a.result, a.attempts, a.policy, o.row.detail);
}
