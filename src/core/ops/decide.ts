import type { RecoveryPolicy } from '../drivers/driver.js';
import type { DesiredUnit } from '../resolve/desired.js';
import type { ObservedUnit } from '../state/documents.js';

export type Decision =
  | { action: 'execute'; why: 'new' | 'changed' | 'retry' | 'recover' }
  | { action: 'current' }
  /** Uncertain, and the kind can observe its effects: ask the driver before deciding. */
  | { action: 'inspect' }
  /** A condition that waits for an operator (`nyl recover`). */
  | { action: 'wait'; state: 'uncertain' | 'failed'; reason: string };

/** Whether a unit executes, from its desired document, what was observed and its recovery policy. */
export function decide(desired: DesiredUnit, observed: ObservedUnit | undefined, policy: RecoveryPolicy): Decision {
  const c = observed?.condition;
  if (c?.state === 'uncertain') {
    if (policy === 'converge') return { action: 'execute', why: 'recover' };
    if (policy === 'inspect') return { action: 'inspect' };
    return { action: 'wait', state: 'uncertain', reason: c.reason };
  }
  if (c?.state === 'failed') {
    if (c.retryable !== false) return { action: 'execute', why: 'retry' };
    // A non-retryable failure waits for `nyl recover --retry`, unless what failed has changed since.
    if (c.executionKey && c.executionKey !== desired.executionKey) return { action: 'execute', why: 'changed' };
    return { action: 'wait', state: 'failed', reason: c.reason };
  }
  if (!observed?.receipt) return { action: 'execute', why: 'new' };
  if (observed.receipt.executionKey !== desired.executionKey) return { action: 'execute', why: 'changed' };
  return { action: 'current' };
}

export const WHY_TEXT: Record<'new' | 'changed' | 'retry' | 'recover', string> = {
  new: 'new unit',
  changed: 'desired document changed',
  retry: 'last execution failed',
  recover: 'uncertain; its recovery policy converges',
};
