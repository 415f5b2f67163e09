import { countsText, recordedChanges, unitChanges } from '../../changes/counts.js';
import type { PlannedChanges } from '../../changes/model.js';
import type { ExecuteContext, ExecuteResult, InspectResult, SavedPlan } from '../../drivers/driver.js';
import { driverFor } from '../../drivers/index.js';
import { type DesiredUnit, withFiles } from '../../resolve/desired.js';
import type { Checkpoint, Condition, ObservedUnit, Receipt } from '../../state/documents.js';
import { Exit, type Problem, problem } from '../../util/errors.js';
import { isoTime } from '../../util/time.js';
import { ADOPTED, type Change, whyText, wouldText } from '../evaluate/decide.js';
import type { Evaluation } from '../evaluate/evaluate.js';
import { withoutSecretOutputs } from '../evaluate/outputs.js';
import type { UnitRow } from '../workspace/report.js';

/**
 * One unit in one run: what happened to it (its row), what that means for the units after it
 * (its evaluation), and what this run records about it (its observed document, its desired one).
 */
export interface Outcome {
  row: UnitRow;
  evaluation: Evaluation;
  /** New observed document, when this run changes it. */
  observed?: ObservedUnit;
  desired?: DesiredUnit;
}

/** A unit this run executes: its resolved document, why, and what was recorded of it before. */
export interface Task {
  name: string;
  desired: DesiredUnit;
  why: string;
  prior?: ObservedUnit;
  /** Its configuration revision, recorded with a failure (a recovery run compares it). */
  revision?: string;
  /** The files that changed since its receipt, when that is why it runs: its row says so. */
  change?: Change;
  /** Kinds that plan: the plan its first attempt applies (planWave). */
  saved?: SavedPlan;
  /** That plan is the reviewed one (its deletes and replaces approved by the review). */
  reviewed?: boolean;
}

/**
 * A driver that throws (a bug) must not take the run down with units still running: its unit is
 * uncertain, the others finish and are checkpointed.
 */
export async function safeExecute(fn: () => Promise<ExecuteResult>): Promise<ExecuteResult> {
  try {
    return await fn();
  } catch (e) {
    return {
      status: 'uncertain',
      reason: `its driver failed: ${(e as Error)?.message ?? e}; its effects are unknown`,
      log: '',
      durationMs: 0,
    };
  }
}

/** Executes a task: the driver's result, with no secret left in its outputs. */
export async function execute(t: Task, ctx: ExecuteContext): Promise<ExecuteResult> {
  const executed = await safeExecute(() => driverFor(t.desired.kind).execute(ctx));
  return executed.status === 'succeeded' ? withoutSecretOutputs(executed) : executed;
}

/** Asks an uncertain unit's driver whether its effects were applied (inspect policy). */
export async function inspect(t: Omit<Task, 'why'>, ctx: ExecuteContext): Promise<InspectResult> {
  const driver = driverFor(t.desired.kind);
  if (!driver.inspect) return { status: 'unknown', reason: 'its kind cannot inspect', log: '' };
  return driver.inspect(ctx).catch((e: unknown) => ({
    status: 'unknown' as const,
    reason: `inspect failed: ${(e as Error)?.message ?? e}`,
    log: '',
  }));
}

/** A unit that stays uncertain (a cancel came first, or its driver could not tell). */
export function stillUncertain(t: Omit<Task, 'why'>, reason: string): Outcome {
  return {
    row: { unit: t.name, kind: t.desired.kind, result: 'uncertain', detail: reason },
    evaluation: { action: 'wait', state: 'uncertain', reason },
    desired: t.desired,
  };
}

export function notStarted(name: string, desired: DesiredUnit): Outcome {
  return {
    row: { unit: name, kind: desired.kind, result: 'skipped', detail: 'not started: the run was cancelled' },
    evaluation: { action: 'blocked', on: '', reason: 'the run was cancelled' },
    desired,
  };
}

/** The row of a unit this run does not execute. */
export function staticRow(unit: string, kind: string, e: Evaluation): UnitRow {
  switch (e.action) {
    case 'current':
      return { unit, kind, result: 'current', detail: e.adopt ? ADOPTED.done : '' };
    case 'wait':
      return { unit, kind, result: e.state, detail: e.reason };
    case 'blocked':
      return { unit, kind, result: 'blocked', detail: e.reason };
    case 'invalid':
      return { unit, kind, result: 'failed', detail: e.reason };
    case 'pending':
      return { unit, kind, result: 'pending', detail: `inputs known after ${e.on.join(', ')} executes` };
    case 'execute':
      return { unit, kind, result: 'execute', detail: whyText(e) };
    case 'inspect':
      return { unit, kind, result: 'inspect', detail: 'uncertain; its driver checks whether it was applied' };
    case 'awaiting-approval':
      return { unit, kind, result: 'awaiting-approval', detail: e.reason };
    case 'held':
      return { unit, kind, result: 'held', detail: e.reason };
    case 'drifted':
      return { unit, kind, result: 'drifted', detail: e.reason };
    case 'skipped':
      return { unit, kind, result: 'skipped', detail: `${e.reason}; it would ${wouldText(e.would)}` };
  }
}

/** An executed row's detail (why, and the resource changes it applied) and its changes. */
function executedDetail(t: Task, changes: PlannedChanges | undefined): Pick<UnitRow, 'detail' | 'changes'> {
  const why = t.change ? whyText({ why: 'changed', change: t.change }) : '';
  if (!changes) return { detail: why };
  const c = unitChanges(changes);
  return { detail: [why, countsText(c.counts)].filter(Boolean).join('; '), changes: c };
}

/** What an execution's result records: a receipt, or a condition (failed or uncertain). */
export function outcomeOf(t: Task, r: ExecuteResult, run: string, now: number, source: string): Outcome {
  const at = isoTime(now);
  // Repairs stay on record; observations were about the old receipt; an approval is used up.
  const base: ObservedUnit = {
    schema: 'nyl.observed-unit/v1' as const,
    name: t.name,
    kind: t.desired.kind,
    uid: t.desired.uid,
    lastRun: run,
    ...(t.prior?.repairs ? { repairs: t.prior.repairs } : {}),
  };
  if (r.status === 'succeeded') {
    const receipt: Receipt = {
      executionKey: t.desired.executionKey,
      uid: t.desired.uid,
      run,
      source,
      at,
      outputs: r.outputs,
      artifacts: r.artifacts,
      ...withFiles(t.desired.files),
      ...(r.changes ? { changes: recordedChanges(r.changes) } : {}),
    };
    return {
      row: {
        unit: t.name,
        kind: t.desired.kind,
        result: t.why === 'recover' ? 'recovered' : 'executed',
        ...executedDetail(t, r.changes),
        durationMs: r.durationMs,
        executionKey: t.desired.executionKey,
      },
      evaluation: { action: 'current' },
      observed: { ...base, receipt },
      desired: t.desired,
    };
  }
  const condition: Condition =
    r.status === 'failed'
      ? {
          state: 'failed',
          reason: r.reason,
          run,
          since: at,
          retryable: r.retryable,
          exitCode: r.exitCode,
          executionKey: t.desired.executionKey,
          ...withFiles(t.desired.files),
          ...(t.revision ? { revision: t.revision } : {}),
        }
      : {
          state: 'uncertain',
          reason: r.reason,
          run,
          since: at,
          checkpointed: true,
          ...(t.revision ? { revision: t.revision } : {}),
        };
  return {
    row: {
      unit: t.name,
      kind: t.desired.kind,
      result: r.status === 'failed' ? 'failed' : 'uncertain',
      detail: r.reason,
      durationMs: r.durationMs,
    },
    evaluation: { action: 'wait', state: condition.state, reason: r.reason },
    observed: { ...base, receipt: t.prior?.receipt, condition, ...(t.prior?.drift ? { drift: t.prior.drift } : {}) },
    desired: t.desired,
  };
}

/**
 * A receipt of a nyl before file keys, of the document the unit has now: the same receipt keyed
 * with the identities of its files (and a drift observation about it kept about it), executing
 * nothing.
 */
export function adoptedUnit(prior: ObservedUnit & { receipt: Receipt }, d: DesiredUnit, run: string): ObservedUnit {
  const old = prior.receipt.executionKey;
  return {
    ...prior,
    receipt: { ...prior.receipt, executionKey: d.executionKey, ...withFiles(d.files) },
    ...(prior.drift?.receiptKey === old ? { drift: { ...prior.drift, receiptKey: d.executionKey } } : {}),
    lastRun: run,
  };
}

/** The checkpoint of an execution, on the run ref before the next wave. */
export function checkpointOf(d: DesiredUnit, r: ExecuteResult, now: number, source: string): Checkpoint {
  const c: Checkpoint = {
    schema: 'nyl.checkpoint/v1',
    name: d.name,
    kind: d.kind,
    uid: d.uid,
    executionKey: d.executionKey,
    source,
    result: r.status,
    at: isoTime(now),
    durationMs: r.durationMs,
    ...withFiles(d.files),
  };
  if (r.status === 'succeeded') {
    c.outputs = r.outputs;
    c.artifacts = r.artifacts;
    if (r.changes) c.changes = recordedChanges(r.changes);
  } else {
    c.reason = r.reason;
    if (r.status === 'failed') {
      c.exitCode = r.exitCode;
      c.retryable = r.retryable;
    }
  }
  return c;
}

export function uncertainProblem(env: string, unit: string, reason: string): Problem {
  return problem('NYL-UNIT-UNCERTAIN', `unit ${unit} is uncertain: ${reason}`, {
    severity: 'warning',
    subject: unit,
    exit: Exit.uncertain,
    fix: `check what the execution did; a unit whose recovery policy converges runs again in the next nyl reconcile, otherwise run \`nyl recover -e ${env} --unit ${unit} --retry --reason <text>\` once it is safe to run it again`,
  });
}
