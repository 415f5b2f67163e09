import { rm } from 'node:fs/promises';
import { countsText, needsApproval, unitChanges } from '../../changes/counts.js';
import type { PlannedChanges } from '../../changes/model.js';
import type { PlanResult, SavedPlan } from '../../drivers/driver.js';
import { driverFor } from '../../drivers/index.js';
import { workPath } from '../../proc/workdir.js';
import { allowsDestructive } from '../../resolve/select.js';
import { FILES } from '../../state/documents.js';
import { mapPool } from '../../util/pool.js';
import type { Why } from '../evaluate/decide.js';
import { toolContext } from '../workspace/tool-context.js';
import type { Executed, RunInput } from './run-input.js';
import { notStarted, type Outcome, outcomeOf, type Task } from './task.js';

/**
 * The plan step of a wave, before its units are recorded on the run ref: each unit whose kind plans
 * (Terraform, OpenTofu) gets its plan in a file (the reviewed one made before the run, else one
 * made now, against what the waves before it produced), and a unit whose plan deletes or replaces
 * resources nobody approved waits (awaiting-approval, nothing applied) while the rest goes on.
 * Approval is the configuration's `destructiveChanges: allow`, `--approve UNIT`, or a reviewed
 * plan that listed those changes.
 */
export async function planWave(r: RunInput, toRun: Task[], ex: Executed): Promise<Task[]> {
  const ready: Task[] = [];
  await mapPool(toRun, r.parallelism, async (t) => {
    if (!driverFor(t.desired.kind).plan) return void ready.push(t);
    const p = await planFor(r, t);
    if (p.status === 'failed') return void ex.outcomes.set(t.name, planFailed(r, t, p, ex));
    const task = { ...t, saved: p.saved, reviewed: p.reviewed };
    const waits = approvalNeeded(r, task, p.saved.changes, p.unreviewed);
    if (!waits) return void ready.push(task);
    await rm(p.saved.file, { force: true });
    r.writer.session.runFiles.set(FILES.runLog(t.name), Buffer.from(p.log));
    ex.outcomes.set(t.name, awaiting(t, p.saved.changes, waits));
  });
  return ready.sort((a, b) => (a.name < b.name ? -1 : 1));
}

type Planned =
  | {
      status: 'planned';
      saved: SavedPlan;
      reviewed: boolean;
      log: string;
      /** Why this plan, made instead of a reviewed one, waits for a person whatever it changes. */
      unreviewed?: string;
    }
  | Extract<PlanResult, { status: 'failed' }>;

/**
 * The reviewed plan made before the run, for this very document; else a plan made now. A unit
 * whose document changed since (an upstream's outputs came out otherwise) is planned again, and
 * that plan, which nobody reviewed, waits for approval.
 */
export async function planFor(r: RunInput, t: Task): Promise<Planned> {
  const pre = r.prePlanned.get(t.name);
  if (!pre) return planNow(r, t);
  r.prePlanned.delete(t.name);
  if (pre.executionKey === t.desired.executionKey)
    return { status: 'planned', saved: pre.saved, reviewed: true, log: pre.saved.log ?? '' };
  await rm(pre.saved.file, { force: true });
  const p = await planNow(r, t);
  if (p.status === 'failed') return p;
  return {
    ...p,
    unreviewed: 'its inputs changed during the run, after the plan was reviewed: its changes now were not',
  };
}

async function planNow(r: RunInput, t: Task): Promise<Planned> {
  const file = workPath(`${t.name.replace(/[^A-Za-z0-9_.-]/g, '_')}.tfplan`);
  const p = await driverFor(t.desired.kind).plan?.(toolContext(r.ctx, r.sel.environment, r.writer.run, t.desired), {
    out: file,
  });
  if (!p) return { status: 'failed', reason: 'its kind cannot plan', log: '', durationMs: 0 };
  if (p.status === 'failed') return p;
  return {
    status: 'planned',
    saved: { file, changes: p.changes, log: p.log, durationMs: p.durationMs },
    reviewed: false,
    log: p.log,
  };
}

/**
 * Why a plan waits for a person: it deletes or replaces resources, and neither the configuration,
 * nor --approve, nor the reviewed plan (which listed them) approves that. Undefined: it may apply.
 */
export function approvalNeeded(r: RunInput, t: Task, changes: PlannedChanges, unreviewed?: string): string | undefined {
  const review = `review them (\`nyl plan -e ${r.sel.environment}\`), then approve with \`nyl reconcile -e ${r.sel.environment} --approve ${t.name}\``;
  if (unreviewed && !r.scope.approved.has(t.name)) return `${unreviewed}; nothing was applied; ${review}`;
  const destroys = changes.resources.filter(needsApproval);
  if (!destroys.length || t.reviewed || allowsDestructive(r.sel, t.name) || r.scope.approved.has(t.name))
    return undefined;
  const listed = destroys.slice(0, 5).map((d) => `${d.action} ${d.address}`);
  const more = destroys.length > listed.length ? ` and ${destroys.length - listed.length} more` : '';
  return `its plan deletes or replaces resources (${listed.join(', ')}${more}): nothing was applied; ${review} or a reviewed plan that lists them`;
}

/** A plan that waits for approval: its row shows the changes; nothing is recorded about the unit. */
function awaiting(t: Task, changes: PlannedChanges, reason: string): Outcome {
  const c = unitChanges(changes);
  return {
    row: {
      unit: t.name,
      kind: t.desired.kind,
      result: 'awaiting-approval',
      detail: `${countsText(c.counts)}; ${reason}`,
      changes: c,
      gate: 'destructive',
    },
    evaluation: { action: 'awaiting-approval', why: t.why as Why, reason },
    desired: t.desired,
  };
}

/** A plan that failed applied nothing: the unit failed (retryable), or never started after a cancel. */
function planFailed(r: RunInput, t: Task, p: Extract<PlanResult, { status: 'failed' }>, ex: Executed): Outcome {
  if (p.cancelled) return notStarted(t.name, t.desired);
  r.writer.session.runFiles.set(FILES.runLog(t.name), Buffer.from(p.log));
  ex.logs.set(t.name, p.log);
  const failed = {
    status: 'failed' as const,
    reason: p.reason,
    retryable: p.retryable ?? true,
    ...(p.exitCode !== undefined ? { exitCode: p.exitCode } : {}),
    log: p.log,
    durationMs: p.durationMs,
  };
  return outcomeOf(t, failed, r.writer.run, r.ctx.now(), r.source);
}
