import { changesDigest } from '../../changes/compare.js';
import { countsText, needsApproval, unitChanges } from '../../changes/counts.js';
import type { PlannedChanges } from '../../changes/model.js';
import { driverFor } from '../../drivers/index.js';
import type { DesiredUnit } from '../../resolve/desired.js';
import { allowsDestructive, type Selection } from '../../resolve/select.js';
import { Exit, type Problem, problem } from '../../util/errors.js';
import { mapPool } from '../../util/pool.js';
import type { UnitRow } from '../workspace/report.js';
import { toolContext } from '../workspace/tool-context.js';
import type { OpContext } from '../workspace/workspace.js';
import type { Plan } from './compute.js';
import { withChanges } from './token.js';

/**
 * The resource level of a plan: each Terraform/OpenTofu unit that would execute is planned by its
 * tool (speculative: no state lock, nothing kept), and its row shows the counts, the changes and,
 * when they delete or replace resources, that it waits for approval. The token then covers the
 * changes too. A unit whose inputs wait for a unit that executes first is not planned against a
 * guess: it says what it waits for.
 */

/** Whether the tools run: yes, or not, and why (a face's choice: the plan action runs them only when asked). */
export type ResourcePlanning = { run: true; parallelism?: number } | { run: false; why?: string };

export interface ResourcePlans {
  planned: Map<string, PlannedChanges>;
  /** Units not planned at the resource level, and why. */
  notes: Map<string, string>;
  problems: Problem[];
}

/** Plans the units that can be, as the plan's rows say; notes why the others are not. */
export async function planResources(
  ctx: OpContext,
  sel: Selection,
  p: Plan,
  how: ResourcePlanning,
): Promise<ResourcePlans> {
  const out: ResourcePlans = { planned: new Map(), notes: new Map(), problems: [] };
  const todo: [string, DesiredUnit][] = [];
  if (!how.run && !how.why) return out;
  for (const [unit, r] of p.resourceUnits) {
    if ('waitsOn' in r) out.notes.set(unit, `its resource changes are known once ${r.waitsOn.join(', ')} executes`);
    else if (!how.run) out.notes.set(unit, `not planned at the resource level: ${how.why}`);
    else todo.push([unit, r.desired]);
  }
  if (!how.run) return out;
  await mapPool(todo, how.parallelism ?? 4, async ([unit, desired]) => {
    if (ctx.cancellation.requested) return void out.notes.set(unit, 'not planned: the plan was cancelled');
    const r = await driverFor(desired.kind).plan?.(toolContext(ctx, sel.environment, 'plan', desired), {});
    if (r?.status === 'planned') return void out.planned.set(unit, r.changes);
    const why = r?.reason ?? 'its kind cannot plan';
    out.notes.set(unit, `could not be planned: ${why}`);
    out.problems.push(unplanned(sel.environment, unit, why));
  });
  return out;
}

function unplanned(env: string, unit: string, why: string): Problem {
  return problem('NYL-PLAN-RESOURCES', `${unit} could not be planned at the resource level: ${why}`, {
    severity: 'warning',
    subject: unit,
    exit: Exit.ok,
    fix: `the unit-level plan stands; fix what stopped its plan and run \`nyl plan -e ${env}\` again to see its resource changes`,
  });
}

/** The rows with the resource plans, and the token that covers them. */
export function withResourcePlans(sel: Selection, p: Plan, rp: ResourcePlans): { rows: UnitRow[]; token: string } {
  const rows = p.rows.map((row) => {
    const planned = rp.planned.get(row.unit);
    const note = rp.notes.get(row.unit);
    if (planned) return plannedRow(sel, row, planned);
    return note ? { ...row, changesNote: note } : row;
  });
  const plannable = [...p.resourceUnits].flatMap(([u, r]) => ('desired' in r ? [u] : []));
  const covered = new Set(rp.planned.keys());
  const token = rp.planned.size ? withChanges(p.token, changesDigest(rp.planned), plannable, covered) : p.token;
  return { rows, token };
}

/** A row with its counts and changes; one whose changes destroy waits for approval unless configured to allow it. */
function plannedRow(sel: Selection, row: UnitRow, planned: PlannedChanges): UnitRow {
  const changes = unitChanges(planned);
  const counts = countsText(changes.counts);
  const detail = row.detail ? `${row.detail}; ${counts}` : counts;
  if (row.result !== 'execute' || !changes.resources.some(needsApproval) || allowsDestructive(sel, row.unit))
    return { ...row, detail, changes };
  return {
    ...row,
    result: 'awaiting-approval',
    gate: 'destructive',
    detail: `${detail}; deletes or replaces resources: waits for approval (--approve ${row.unit}, or this plan's token)`,
    changes,
  };
}
