import { unitChanges } from '../../changes/counts.js';
import type { VerifyResult } from '../../drivers/driver.js';
import { driverFor } from '../../drivers/index.js';
import { keyMatch } from '../../resolve/desired.js';
import type { ObservedUnit } from '../../state/documents.js';
import type { EnvState } from '../../state/read.js';
import { Exit, type Problem } from '../../util/errors.js';
import { mapPool } from '../../util/pool.js';
import { isoTime } from '../../util/time.js';
import { uuid7 } from '../../util/uuid7.js';
import { type EvaluatedUnit, evaluateAll } from '../evaluate/evaluate.js';
import { refuseUncommitted, toolUnit } from '../judge/files-gate.js';
import { verifiable } from '../judge/promotion.js';
import { DEFAULT_PARALLELISM } from '../reconcile/options.js';
import { waitForNonImportWrite } from '../recovery/non-import-write.js';
import { transitionMessage } from '../transition/message.js';
import type { RunReport, UnitRow } from '../workspace/report.js';
import { toolContext } from '../workspace/tool-context.js';
import { type Loaded, loadEnvironment, type OpContext, refuseUnpublished } from '../workspace/workspace.js';
import { writeObserved } from '../writes/write-observed.js';
import { driftProblem, observationChanged, observedAfter } from './observe.js';

/** Whether a unit's receipt is of its document now: only such a receipt is verified (a changed unit is reconcile's work). */
const current = (e: EvaluatedUnit) => {
  const r = e.observed?.receipt;
  return r !== undefined && e.desired !== undefined && keyMatch(e.desired, r.executionKey, r.files) !== 'different';
};

/**
 * Asks each unit's driver whether its receipt still holds, executing nothing. Records the latest
 * drift, health and attestations in one observed commit, none when nothing changed; never
 * touches a receipt or a condition. Exit 3 on drift. Phases: load (waiting out a lease) → refuse
 * files nobody committed → the checks, in parallel → each unit's row and observation → one write.
 */
export async function verify(ctx: OpContext, opts: { environment: string; parallelism?: number }): Promise<RunReport> {
  let loaded = await loadEnvironment(ctx, opts.environment);
  refuseUnpublished(loaded);
  loaded = await waitForNonImportWrite(ctx, loaded);
  const targets = [...evaluateAll(loaded.sel, loaded.state).values()];
  // A check runs on the working tree: refuse files that are not the commit's the receipt names.
  const checked = targets.filter((e) => current(e) && e.desired && verifiable(e.kind, e.desired.spec));
  await refuseUncommitted(
    ctx,
    loaded.sel,
    loaded.cfg.source,
    checked.flatMap((e) => (e.desired ? [toolUnit(e.desired)] : [])),
  );
  const runId = uuid7();
  const results = await mapPool(targets, opts.parallelism ?? DEFAULT_PARALLELISM, (e) => check(ctx, loaded, e, runId));
  const v = observe(loaded, targets, results, isoTime(ctx.now()));
  const observed = v.changed.size ? await record(ctx, loaded.state, v) : undefined;
  return {
    operation: 'verify',
    environment: opts.environment,
    source: loaded.cfg.source,
    observed: observed ?? loaded.state.tips.observed,
    rows: v.rows,
    problems: v.problems,
    exit: v.rows.some((r) => r.result === 'drifted') ? Exit.drift : Exit.ok,
    header: ['UNIT', 'KIND', 'DRIFT', 'DETAIL'],
    extra: [['recorded', observed ? 'yes' : 'no change']],
  };
}

/** The unit's check (its driver's verify) of its receipt: its uid and outputs, with the unit's current resolution. */
async function check(ctx: OpContext, loaded: Loaded, e: EvaluatedUnit, run: string): Promise<VerifyResult | undefined> {
  const o = e.observed;
  const driver = driverFor(e.kind);
  if (!o?.receipt || !e.desired || !current(e) || !driver.verify) return undefined;
  const unit = { ...e.desired, uid: o.uid };
  return driver.verify(toolContext(ctx, loaded.sel.environment, run, unit, { receipt: o.receipt }));
}

/** What the checks found: each unit's row, the observations that changed, the drift problems. */
interface Verified {
  rows: UnitRow[];
  changed: Map<string, ObservedUnit>;
  problems: Problem[];
}

function observe(
  loaded: Loaded,
  targets: EvaluatedUnit[],
  results: (VerifyResult | undefined)[],
  at: string,
): Verified {
  const v: Verified = { rows: [], changed: new Map(), problems: [] };
  for (const [i, e] of targets.entries()) {
    const r = results[i];
    const o = e.observed;
    const row = { unit: e.name, kind: e.kind };
    if (!o?.receipt) v.rows.push({ ...row, result: 'none', detail: 'no receipt to verify' });
    else if (!r) v.rows.push({ ...row, result: 'skipped', detail: skippedWhy(e) });
    else {
      v.rows.push({
        ...row,
        result: r.state,
        detail: r.detail,
        ...(r.changes ? { changes: unitChanges(r.changes) } : {}),
      });
      const next = observedAfter({ ...o, receipt: o.receipt }, r, at);
      if (observationChanged(next, o)) v.changed.set(e.name, next);
      if (r.state === 'drifted') v.problems.push(driftProblem(loaded.sel.environment, loaded.sel, e, next, r.detail));
    }
  }
  return v;
}

function skippedWhy(e: EvaluatedUnit): string {
  if (!e.desired) return 'pending: resolves after its inputs';
  if (!current(e)) return 'its configuration changed since its receipt: reconcile first';
  return 'its kind or spec has no check';
}

/** One observed commit with the observations that changed; its tip. */
async function record(ctx: OpContext, state: EnvState, v: Verified): Promise<string | undefined> {
  const message = transitionMessage({
    operation: 'verify',
    environment: state.environment,
    units: new Map(
      [...v.changed].map(([n, o]) => [n, { drift: o.drift?.state, detail: o.drift?.detail || undefined }]),
    ),
    results: v.rows.filter((r) => ['in-sync', 'drifted', 'unknown'].includes(r.result)).map((r) => r.result),
    lists: [['drifted', v.rows.filter((r) => r.result === 'drifted').map((r) => r.unit)]],
  });
  return (await writeObserved(ctx, state, 'verify', v.changed, message)).observed;
}
