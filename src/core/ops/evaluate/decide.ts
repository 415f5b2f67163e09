import type { RecoveryPolicy } from '../../drivers/driver.js';
import { pathsText } from '../../files/source-files.js';
import { changeSince, type DesiredUnit, keyMatch } from '../../resolve/desired.js';
import type { ObservedUnit } from '../../state/documents.js';

export type Why = 'new' | 'changed' | 'retry' | 'recover' | 'drift' | 'reapply';

/** Why a changed unit executes, when its receipt recorded its files: which of them changed, and whether its document did too. */
export interface Change {
  files: string[];
  document: boolean;
}

export type Decision =
  | { action: 'execute'; why: Why; approvedBy?: 'approve' | 'plan'; change?: Change }
  /** `adopt`: its receipt is of a nyl before file keys and of the same document: the identities are recorded, nothing runs. */
  | { action: 'current'; adopt?: true }
  /** Uncertain, and the kind can observe its effects: ask the driver before deciding. */
  | { action: 'inspect' }
  /** A condition that waits for an operator (`nyl recover`). */
  | { action: 'wait'; state: 'uncertain' | 'failed'; reason: string }
  /** Would execute, but it is not safe to without a person's approval. */
  | { action: 'awaiting-approval'; why: Why; reason: string }
  /** Held by an operator: neither executed nor re-resolved. */
  | { action: 'held'; reason: string }
  /** Drifted, and the environment repairs drift manually. */
  | { action: 'drifted'; reason: string };

/** What the operator asked of this reconcile. */
export interface DecideOptions {
  driftRepair: 'converge' | 'manual';
  /** --approve: units whose unsafe execution (drift repair, reapply) is approved. */
  approved?: ReadonlySet<string>;
  /** --unit … --reapply: units to execute although current. */
  reapply?: ReadonlySet<string>;
  /** --plan with a matching token: the plan's executions are approved. */
  planApproved?: boolean;
  /** --failed: failed units run again, retryable or not (a person asked for it). */
  retry?: ReadonlySet<string>;
  /** --failed, --from: only these units may execute; the others are reused or skipped. */
  only?: ReadonlySet<string>;
  /** Why a unit outside `only` does not execute, in the row: `not selected (--failed)`. */
  onlyWhy?: string;
}

/** The latest drift observation, when it is about the current receipt and says drifted. */
export function driftOf(observed: ObservedUnit | undefined): string | undefined {
  const d = observed?.drift;
  if (d?.state !== 'drifted' || !observed?.receipt || d.receiptKey !== observed.receipt.executionKey) return undefined;
  return d.detail || 'drifted';
}

/** Whether a unit executes, from its desired document, what was observed, its policy and what was asked. */
export function decide(
  desired: DesiredUnit,
  observed: ObservedUnit | undefined,
  policy: RecoveryPolicy,
  opts: DecideOptions = { driftRepair: 'converge' },
): Decision {
  const name = desired.name;
  if (observed?.hold) return { action: 'held', reason: `held by ${observed.hold.by}: ${observed.hold.reason}` };
  const c = observed?.condition;
  const execute = (why: Why, change?: Change): Decision => {
    // After a native repair (nyl exec) the first execution needs the plan approved by its token.
    if (observed?.approvalRequired && !opts.planApproved)
      return { action: 'awaiting-approval', why, reason: observed.approvalRequired.reason };
    return {
      action: 'execute',
      why,
      ...(opts.planApproved && observed?.approvalRequired ? { approvedBy: 'plan' as const } : {}),
      ...(change ? { change } : {}),
    };
  };
  const unsafe = (why: Why, reason: string): Decision => {
    if (policy === 'converge') return execute(why);
    if (opts.approved?.has(name) || opts.planApproved)
      return { ...(execute(why) as object), approvedBy: opts.approved?.has(name) ? 'approve' : 'plan' } as Decision;
    return { action: 'awaiting-approval', why, reason };
  };
  if (c?.state === 'uncertain') {
    if (policy === 'converge') return execute('recover');
    if (policy === 'inspect') return { action: 'inspect' };
    return { action: 'wait', state: 'uncertain', reason: c.reason };
  }
  if (c?.state === 'failed') {
    if (c.retryable !== false || opts.retry?.has(name)) return execute('retry');
    // A non-retryable failure waits for `nyl recover --retry`, unless what failed has changed since.
    if (c.executionKey && keyMatch(desired, c.executionKey, c.files) === 'different') return execute('changed');
    return { action: 'wait', state: 'failed', reason: c.reason };
  }
  if (!observed?.receipt) return execute('new');
  const match = keyMatch(desired, observed.receipt.executionKey, observed.receipt.files);
  if (match === 'different') return execute('changed', changeSince(desired, observed.receipt));
  if (opts.reapply?.has(name))
    return unsafe('reapply', `reapplying it is not safe (recovery policy ${policy}): approve with --approve ${name}`);
  const drift = driftOf(observed);
  if (drift) {
    if (opts.driftRepair === 'manual') return { action: 'drifted', reason: `${drift} (driftRepair: manual)` };
    return unsafe(
      'drift',
      `drifted (${drift}); re-running it is not safe (recovery policy ${policy}): approve with --approve ${name}`,
    );
  }
  return match === 'adopt' ? { action: 'current', adopt: true } : { action: 'current' };
}

/**
 * The decision for a unit whose inputs cannot be resolved yet (its upstream has no recorded
 * outputs: it is new too): what its own state says, or undefined when only its inputs could tell.
 */
export function decideUnresolved(observed: ObservedUnit | undefined, policy: RecoveryPolicy): Decision | undefined {
  if (observed?.hold) return { action: 'held', reason: `held by ${observed.hold.by}: ${observed.hold.reason}` };
  const c = observed?.condition;
  if (c?.state === 'uncertain') {
    if (policy === 'converge') return { action: 'execute', why: 'recover' };
    if (policy === 'inspect') return { action: 'inspect' };
    return { action: 'wait', state: 'uncertain', reason: c.reason };
  }
  // A failure of other inputs: the new ones differ.
  if (c?.state === 'failed') return { action: 'execute', why: c.retryable !== false ? 'retry' : 'changed' };
  if (!observed?.receipt) return { action: 'execute', why: 'new' };
  return undefined;
}

export const WHY_TEXT: Record<Why, string> = {
  new: 'new unit',
  changed: 'desired document changed',
  retry: 'last execution failed',
  recover: 'uncertain; its recovery policy converges',
  drift: 'drifted; repairing it',
  reapply: 'reapply requested',
};

/** Why a unit executes, in a row's words: `files changed: infra/main.tf, … and 4 more` where its files did. */
export function whyText(d: { why: Why; change?: Change }): string {
  if (d.why !== 'changed' || !d.change) return WHY_TEXT[d.why];
  const files = `files changed: ${pathsText(d.change.files)}`;
  return d.change.document ? `${WHY_TEXT.changed}; ${files}` : files;
}

/** A unit current but for its receipt, written by a nyl before file keys: what the next reconcile does, and what it did. */
export const ADOPTED = {
  next: 'receipt of an earlier nyl: the next reconcile records its files, executing nothing',
  done: 'receipt of an earlier nyl: its files recorded, nothing executed',
};

/** What a unit outside a selection (--failed, --from) would have done, in a row's words. */
export function wouldText(d: Decision): string {
  if (d.action === 'execute') return `execute: ${whyText(d)}`;
  if (d.action === 'inspect') return 'be inspected';
  return `wait for approval: ${d.action === 'awaiting-approval' ? d.reason : ''}`;
}
