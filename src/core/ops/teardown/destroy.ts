import type { ExecuteResult } from '../../drivers/driver.js';
import { driverFor } from '../../drivers/index.js';
import type { DesiredUnit } from '../../resolve/desired.js';
import type { Checkpoint, ObservedUnit } from '../../state/documents.js';
import { isoTime } from '../../util/time.js';
import { safeExecute } from '../reconcile/task.js';
import type { Track } from '../runs/wave.js';
import type { UnitRow } from '../workspace/report.js';
import { toolContext } from '../workspace/tool-context.js';
import type { Teardown } from './model.js';

/** Runs a unit's destroy: undefined when the unit has nothing to run; a throwing driver leaves it uncertain. */
async function runDestroy(t: Teardown, d: DesiredUnit, track: Track): Promise<ExecuteResult | undefined> {
  const { ctx } = t;
  try {
    return await track(async () => driverFor(d.kind).destroy?.(toolContext(ctx, t.env, t.writer.run, d)));
  } catch (e) {
    return safeExecute(() => Promise.reject(e));
  }
}

/** What a destroy's result records: its row, and the unit's state dropped (gone) or kept with a condition. */
function destroyed(
  t: Teardown,
  d: DesiredUnit,
  r: ExecuteResult | undefined,
): { row: UnitRow; observed: ObservedUnit | null } {
  const base = { unit: d.name, kind: d.kind };
  if (!r)
    return { row: { ...base, result: 'removed', detail: 'no destroy: its effects are left in place' }, observed: null };
  if (r.status === 'succeeded') return { row: { ...base, result: 'destroyed', detail: '' }, observed: null };
  const state = r.status === 'failed' ? 'failed' : 'uncertain';
  const { env } = t;
  return {
    row: { ...base, result: state, detail: r.reason },
    observed: {
      ...(t.state.observed.get(d.name) as ObservedUnit),
      lastRun: t.writer.run,
      // A failed destroy must not make the next reconcile run the unit again: it waits.
      condition: {
        state,
        reason: `teardown: ${r.reason}; run \`nyl teardown -e ${env}\` again once fixed, or \`nyl recover -e ${env} --unit ${d.name} --retry\` to keep the unit`,
        run: t.writer.run,
        since: isoTime(t.ctx.now()),
        retryable: false,
      },
    },
  };
}

function checkpointOf(d: DesiredUnit, r: ExecuteResult | undefined, now: number): Checkpoint {
  return {
    schema: 'nyl.checkpoint/v1',
    name: d.name,
    kind: d.kind,
    uid: d.uid,
    executionKey: d.executionKey,
    result: !r || r.status === 'succeeded' ? 'succeeded' : r.status,
    at: isoTime(now),
    durationMs: r?.durationMs ?? 0,
    ...(r && r.status !== 'succeeded' ? { reason: r.reason } : {}),
  };
}

/** One unit's destroy in its wave: run, recorded in the teardown's rows and changes, checkpointed. */
export async function destroyUnit(t: Teardown, d: DesiredUnit, track: Track): Promise<void> {
  const { ctx } = t;
  ctx.onEvent({ type: 'unit-start', unit: d.name, kind: d.kind, at: ctx.now() });
  const r = await runDestroy(t, d, track);
  const { row, observed } = destroyed(t, d, r);
  t.rows.set(d.name, row);
  t.changed.set(d.name, observed);
  if (observed) t.stopped.add(d.name);
  t.writer.checkpoint(checkpointOf(d, r, ctx.now()));
  ctx.onEvent({ type: 'unit-finish', unit: d.name, kind: d.kind, result: row.result, durationMs: r?.durationMs ?? 0 });
}
