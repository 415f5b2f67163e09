import { rm } from 'node:fs/promises';
import { needsApproval } from '../../changes/counts.js';
import { groupOfName } from '../../config/for-each.js';
import type { ExecuteContext, ExecuteResult, SavedPlan } from '../../drivers/driver.js';
import { driverFor } from '../../drivers/index.js';
import type { DesiredUnit } from '../../resolve/desired.js';
import { expandFrom } from '../../resolve/select.js';
import { FILES, type ObservedUnit } from '../../state/documents.js';
import { crashPoint } from '../../util/crash.js';
import { mapPool } from '../../util/pool.js';
import { isoTime } from '../../util/time.js';
import { type Evaluation, evaluateUnit, uidFor } from '../evaluate/evaluate.js';
import { withoutSecretOutputs } from '../evaluate/outputs.js';
import { unitRevision } from '../evaluate/revision.js';
import { runWave, type Track } from '../runs/wave.js';
import { toolContext } from '../workspace/tool-context.js';
import { runAttempts, withAttempts } from './attempts.js';
import { approvalNeeded, planFor, planWave } from './plan-wave.js';
import type { Executed, Execution, RunInput } from './run-input.js';
import { removedRows } from './scope.js';
import {
  adoptedUnit,
  checkpointOf,
  execute,
  inspect,
  notStarted,
  type Outcome,
  outcomeOf,
  staticRow,
  stillUncertain,
  type Task,
} from './task.js';

/**
 * The execute phase, wave by wave: each unit is evaluated against what the waves before it did;
 * uncertain units whose kind can look are inspected (applied is recovered, not applied runs
 * again); the wave's executions start after one write records them, run in parallel, and are
 * checkpointed by the next write.
 */
export async function executeWaves(r: RunInput): Promise<Executed> {
  const ex: Executed = {
    outcomes: new Map(),
    executions: new Map(),
    outputs: new Map(),
    logs: new Map([...(r.imp?.logs ?? [])].map(([n, oid]) => [n, { oid }])),
  };
  try {
    for (let w = 0; w < r.sel.waves.length; w++) {
      // Groups mapped from an output expand from what it is now: recorded, imported, or produced by this run.
      expandFrom(r.sel, (u) => ex.outputs.get(u) ?? r.state.observed.get(u)?.receipt?.outputs);
      const { toRun, toInspect } = evaluateWave(r, w, ex);
      toRun.push(...(await inspectUncertain(r, toInspect, ex)));
      toRun.sort((a, b) => (a.name < b.name ? -1 : 1));
      if (toRun.length) await executeWave(r, w, toRun, ex);
    }
  } finally {
    // Reviewed plans of units that did not run (blocked, skipped, cancelled): a plan file holds every variable.
    await Promise.all([...r.prePlanned.values()].map((p) => rm(p.saved.file, { force: true })));
    r.prePlanned.clear();
  }
  // Instances whose keys an expansion lost are reported as units that left the configuration.
  if (r.sel.mapping?.groups.size) r.scope.removed = removedRows(r.sel, r.state);
  return ex;
}

/** What the driver of a unit gets in this run. */
function driverContext(r: RunInput, unit: DesiredUnit, saved?: SavedPlan): ExecuteContext {
  return toolContext(r.ctx, r.sel.environment, r.writer.run, unit, saved ? { saved } : {});
}

/**
 * A retry: a kind that plans plans again (what the failed attempt left is the state now), and a
 * plan that now deletes or replaces resources nobody approved fails the attempt, applying nothing.
 */
async function retry(r: RunInput, t: Task): Promise<ExecuteResult> {
  if (!driverFor(t.desired.kind).plan) return execute(t, driverContext(r, t.desired));
  const p = await planFor(r, t);
  if (p.status === 'failed') return { ...p, status: 'failed', retryable: p.retryable ?? true };
  const reviewed = t.reviewed && reviewedDestroys(t.saved, p.saved);
  const waits = approvalNeeded(r, { ...t, reviewed }, p.saved.changes, p.unreviewed);
  if (!waits) return execute(t, driverContext(r, t.desired, p.saved));
  await rm(p.saved.file, { force: true });
  return { status: 'failed', reason: waits, retryable: false, log: p.log, durationMs: 0 };
}

/**
 * The deletes and replaces of a retry's plan are among the reviewed plan's (the review approved
 * them; the failed attempt may have done some). Its creates and updates are the rest of what was
 * reviewed, planned against what that attempt left: they apply, as a retry of any kind does.
 */
function reviewedDestroys(a: SavedPlan | undefined, b: SavedPlan): boolean {
  const of = (s: SavedPlan | undefined) =>
    (s?.changes.resources ?? []).filter(needsApproval).map((x) => `${x.action} ${x.address}`);
  const approved = new Set(of(a));
  return of(b).every((d) => approved.has(d));
}

function evaluateWave(r: RunInput, w: number, ex: Executed) {
  const toRun: Task[] = [];
  const toInspect: Omit<Task, 'why'>[] = [];
  for (const name of r.sel.waves[w] as string[]) {
    const ev = evaluateUnit(
      r.sel,
      r.state,
      name,
      (dep) => ex.outcomes.get(dep)?.evaluation,
      (dep) => ex.outputs.get(dep) ?? r.state.observed.get(dep)?.receipt?.outputs,
      uidFor(r.state, name),
      r.scope.decide,
      (d) => ex.outcomes.get(d)?.observed?.receipt?.artifacts,
    );
    const e = ev.evaluation;
    if (e.action === 'execute' && ev.desired && r.scope.planned && !inPlan(plannedRow(r.scope.planned, name), e)) {
      const reason = `not in the approved plan ${r.scope.plan}: review it again with \`nyl plan -e ${r.sel.environment}\``;
      ex.outcomes.set(name, {
        row: { unit: name, kind: ev.kind, result: 'awaiting-approval', detail: reason },
        evaluation: { action: 'awaiting-approval', why: e.why, reason },
        desired: ev.desired,
      });
    } else if (e.action === 'execute' && ev.desired) {
      toRun.push({
        name,
        desired: ev.desired,
        why: e.why,
        prior: ev.observed,
        revision: revisionOf(r, name),
        ...(e.change ? { change: e.change } : {}),
      });
      ex.executions.set(name, e);
    } else if (e.action === 'inspect' && ev.desired) {
      toInspect.push({ name, desired: ev.desired, prior: ev.observed, revision: revisionOf(r, name) });
    } else {
      ex.outcomes.set(name, staticOutcome(r, name, ev.kind, e, ev.desired, ev.observed));
    }
  }
  return { toRun, toInspect };
}

function revisionOf(r: RunInput, name: string): string | undefined {
  const u = r.sel.units.get(name);
  return u ? unitRevision(u) : undefined;
}

/** A unit this run does not execute; an invalid one records its failure. */
function staticOutcome(
  r: RunInput,
  name: string,
  kind: string,
  e: Evaluation,
  desired?: DesiredUnit,
  prior?: ObservedUnit,
): Outcome {
  const imported = r.imp?.rows.get(name);
  let row = staticRow(name, kind, e);
  // An import shows as such, unless the unit's state says more (failed, blocked, ...).
  if (imported && (row.result === 'current' || row.result === imported.result)) row = imported;
  const o: Outcome = { row, evaluation: e, desired };
  if (e.action === 'current' && e.adopt && prior?.receipt && desired)
    o.observed = adoptedUnit({ ...prior, receipt: prior.receipt }, desired, r.writer.run);
  // A group whose items are unknown or unusable is no unit of its own: nothing is recorded under its name.
  if (e.action === 'invalid' && !r.sel.mapping?.groups.get(name)?.unresolved)
    o.observed = {
      schema: 'nyl.observed-unit/v1',
      name,
      kind,
      uid: uidFor(r.state, name),
      receipt: prior?.receipt,
      condition: {
        state: 'failed',
        reason: e.reason,
        run: r.writer.run,
        since: isoTime(r.ctx.now()),
        retryable: true,
        revision: revisionOf(r, name),
      },
      lastRun: r.writer.run,
    };
  return o;
}

/** Uncertain units whose kind can observe its effects: the ones found not applied run again. */
async function inspectUncertain(r: RunInput, toInspect: Omit<Task, 'why'>[], ex: Executed): Promise<Task[]> {
  const again: Task[] = [];
  await mapPool(toInspect, r.parallelism, async (t) => {
    const was = t.prior?.condition?.reason ?? 'uncertain';
    // After a cancel nothing more is asked: the unit stays uncertain for the next run.
    if (r.ctx.cancellation.requested) return void ex.outcomes.set(t.name, stillUncertain(t, was));
    const found = await inspect(t, driverContext(r, t.desired));
    if (found.status === 'not-applied') return void again.push({ ...t, why: 'recover' });
    if (found.status === 'unknown') return void ex.outcomes.set(t.name, stillUncertain(t, `${was}; ${found.reason}`));
    const result = {
      status: 'succeeded' as const,
      outputs: { ...t.prior?.receipt?.outputs, ...found.outputs },
      artifacts: found.artifacts,
      log: found.log,
      durationMs: 0,
    };
    const o = outcomeOf({ ...t, why: 'recover' }, withoutSecretOutputs(result), r.writer.run, r.ctx.now(), r.source);
    o.row.detail = 'inspect: applied';
    ex.outcomes.set(t.name, o);
    ex.outputs.set(t.name, o.observed?.receipt?.outputs ?? {});
  });
  return again;
}

/** One wave's executions: recorded on the run ref first, run in parallel, checkpointed after. */
async function executeWave(r: RunInput, w: number, toRun: Task[], ex: Executed): Promise<void> {
  if (r.ctx.cancellation.requested) {
    for (const t of toRun) ex.outcomes.set(t.name, notStarted(t.name, t.desired));
    return;
  }
  // Terraform/OpenTofu units are planned first: one whose deletes nobody approved is not recorded, it waits.
  const planned = await planWave(r, toRun, ex);
  if (!planned.length) return;
  const tasks = new Map(planned.map((t) => [t.name, t]));
  let finished = 0;
  try {
    await runWave(
      r.ctx,
      r.writer,
      { index: w, docs: planned.map((t) => t.desired), parallelism: r.parallelism },
      {
        skip: (d) => void ex.outcomes.set(d.name, notStarted(d.name, d)),
        run: async (d, track) => {
          await executeTask(r, tasks.get(d.name) as Task, ex, track);
          if (++finished === 1) crashPoint('mid-wave');
        },
      },
    );
  } finally {
    // An execute removes its plan file; a unit skipped (cancel, lease lost) never got to.
    await Promise.all(planned.map((t) => t.saved && rm(t.saved.file, { force: true })));
  }
}

/** One unit of a wave: its attempts, then its outcome and checkpoint, carried by the next write. */
async function executeTask(r: RunInput, t: Task, ex: Executed, track: Track): Promise<void> {
  const { ctx, writer } = r;
  let attempt = 0;
  const attempted = await runAttempts(r, t, () => {
    ctx.onEvent({ type: 'unit-start', unit: t.name, kind: t.desired.kind, at: ctx.now() });
    return track(() => (++attempt === 1 ? execute(t, driverContext(r, t.desired, t.saved)) : retry(r, t)));
  });
  const { result } = attempted;
  const o = outcomeOf(t, result, writer.run, ctx.now(), r.source);
  const cp = checkpointOf(t.desired, result, ctx.now(), r.source);
  withAttempts(attempted, o, cp);
  ex.outcomes.set(t.name, o);
  if (result.status === 'succeeded') ex.outputs.set(t.name, result.outputs);
  writer.checkpoint(cp);
  writer.session.runFiles.set(FILES.runLog(t.name), Buffer.from(result.log));
  ex.logs.set(t.name, result.log);
  ctx.onEvent({
    type: 'unit-finish',
    unit: t.name,
    kind: t.desired.kind,
    result: o.row.result,
    durationMs: result.durationMs,
  });
}

/**
 * Whether an approved plan lets a unit execute now: it listed it as executing, inspecting or
 * awaiting approval (the token approves that); a `maybe` only when its inputs did change, and
 * for nothing else (a maybe was approved for nothing).
 */
function inPlan(row: string | undefined, e: Execution): boolean {
  if (row === 'execute' || row === 'inspect' || row === 'awaiting-approval') return true;
  return row === 'maybe' && (e.why === 'changed' || e.why === 'new') && e.approvedBy === undefined;
}

/**
 * The plan row that covers a unit: its own, or for an instance the plan could not know (its group
 * expands over outputs produced in this run) the group's `maybe` row — those outputs did change.
 */
function plannedRow(planned: Map<string, string>, name: string): string | undefined {
  const own = planned.get(name);
  if (own !== undefined) return own;
  const group = groupOfName(name);
  return group && planned.get(group) === 'maybe' ? 'maybe' : undefined;
}
