import { rm } from 'node:fs/promises';
import { changesDigest, differences } from '../../changes/compare.js';
import type { KeptChanges, PlannedChanges } from '../../changes/model.js';
import type { SavedPlan } from '../../drivers/driver.js';
import { driverFor } from '../../drivers/index.js';
import { workPath } from '../../proc/workdir.js';
import type { DesiredUnit } from '../../resolve/desired.js';
import type { Selection } from '../../resolve/select.js';
import { Exit, NylError, problem } from '../../util/errors.js';
import { mapPool } from '../../util/pool.js';
import type { Plan } from '../plan/compute.js';
import { staleProblem } from '../plan/stale.js';
import { coveredUnits, tokenParts } from '../plan/token.js';
import { toolContext } from '../workspace/tool-context.js';
import type { OpContext } from '../workspace/workspace.js';
import type { ReconcileOptions } from './options.js';

/**
 * A reviewed plan's resource changes, checked before anything is taken or run: each
 * Terraform/OpenTofu unit the review planned is planned again, kept in a file, and its changes
 * compared with the reviewed ones (as data: addresses, actions, digests of the planned values).
 * The same: those files are what the waves apply, their deletes and replaces approved by the
 * review. Different: NYL-PLAN-STALE naming the units and resources, and nothing is executed.
 */

/** A unit's plan made before the run, for the document it was made of. */
export interface PrePlanned {
  saved: SavedPlan;
  executionKey: string;
}

type Made = { unit: string; desired: DesiredUnit } & (
  | { saved: SavedPlan }
  | { failed: string; file: string }
  | { cancelled: true; file: string }
);

export async function planReviewed(
  ctx: OpContext,
  sel: Selection,
  current: Plan | undefined,
  opts: ReconcileOptions,
  run: string,
): Promise<Map<string, PrePlanned>> {
  const digest = opts.plan ? tokenParts(opts.plan).changes : undefined;
  const kept = opts.reviewed?.changes;
  if (!opts.plan || !current || (!digest && !kept)) return new Map();
  const plannable = [...current.resourceUnits].flatMap(([unit, r]) =>
    'desired' in r ? [{ unit, desired: r.desired }] : [],
  );
  // The units the review planned: those kept, else those the token's digest covers.
  const covered = new Set(
    coveredUnits(
      opts.plan,
      plannable.map((u) => u.unit),
    ),
  );
  const units = plannable.filter((u) => (kept ? Object.hasOwn(kept, u.unit) : covered.has(u.unit)));
  const made = await planEach(ctx, sel, units, run, opts.parallelism ?? 4);
  try {
    if (ctx.cancellation.requested) throw new Cancelled();
    refuseUnplanned(sel.environment, made);
    refuseChanged(sel.environment, opts.plan, current, made, { digest, kept });
  } catch (e) {
    await Promise.all(made.map((m) => rm('saved' in m ? m.saved.file : m.file, { force: true })));
    if (e instanceof Cancelled) return new Map();
    throw e;
  }
  return new Map(
    made.flatMap((m) => ('saved' in m ? [[m.unit, { saved: m.saved, executionKey: m.desired.executionKey }]] : [])),
  );
}

/** A cancel during the plans: nothing is compared, the run starts nothing. */
class Cancelled extends Error {}

async function planEach(
  ctx: OpContext,
  sel: Selection,
  units: { unit: string; desired: DesiredUnit }[],
  run: string,
  parallelism: number,
): Promise<Made[]> {
  const made: Made[] = [];
  await mapPool(units, parallelism, async ({ unit, desired }) => {
    const file = workPath(`${unit.replace(/[^A-Za-z0-9_.-]/g, '_')}.tfplan`);
    if (ctx.cancellation.requested) return void made.push({ unit, desired, cancelled: true, file });
    const p = await driverFor(desired.kind).plan?.(toolContext(ctx, sel.environment, run, desired), { out: file });
    if (p?.status === 'planned')
      return void made.push({
        unit,
        desired,
        saved: { file, changes: p.changes, log: p.log, durationMs: p.durationMs },
      });
    if (p?.cancelled) return void made.push({ unit, desired, cancelled: true, file });
    made.push({ unit, desired, failed: p?.reason ?? 'its kind cannot plan', file });
  });
  return made.sort((a, b) => (a.unit < b.unit ? -1 : 1));
}

/** A unit of the reviewed plan that cannot be planned again: its changes cannot be compared. */
function refuseUnplanned(env: string, made: Made[]): void {
  const failed = made.flatMap((m) => ('failed' in m ? [`${m.unit}: ${m.failed}`] : []));
  if (!failed.length) return;
  throw new NylError(
    problem('NYL-PLAN-RESOURCES', `the reviewed plan cannot be checked: ${failed.join('; ')}; nothing was executed`, {
      subject: env,
      exit: Exit.failed,
      fix: `fix what stops the plan (its log above), then reconcile again; or review the plan again with \`nyl plan -e ${env}\``,
    }),
  );
}

/** The changes planned now against the reviewed ones: NYL-PLAN-STALE naming what differs. */
function refuseChanged(env: string, token: string, current: Plan, made: Made[], reviewed: Reviewed): void {
  const now = new Map<string, PlannedChanges>(made.flatMap((m) => ('saved' in m ? [[m.unit, m.saved.changes]] : [])));
  const differ = whatDiffers(now, reviewed);
  if (differ) throw new NylError(staleProblem(env, token, differ, current));
}

interface Reviewed {
  /** The token's resource part. */
  digest?: string;
  /** The reviewed changes by unit, when kept (a plan file, a PR comment). */
  kept?: Record<string, KeptChanges>;
}

const NONE: KeptChanges = { resources: [], outputs: [] };

/** Unit by unit and resource by resource where the reviewed changes are kept; undefined when nothing differs. */
function whatDiffers(now: Map<string, PlannedChanges>, { digest, kept }: Reviewed): string | undefined {
  if (kept) {
    const units = [...new Set([...Object.keys(kept), ...now.keys()])].sort();
    const lines = units.flatMap((u) => {
      const d = differences(kept[u] ?? NONE, now.get(u) ?? { resources: [], outputs: [] });
      return d.length ? [`${u}: ${d.join(', ')}`] : [];
    });
    if (lines.length) return `the resource changes differ from the reviewed plan: ${lines.join('; ')}`;
  }
  if (!digest || changesDigest(now) === digest) return undefined;
  const units = [...now.keys()];
  if (kept) return 'the token does not match the resource changes kept with it';
  return `the resource changes of ${units.length > 1 ? `one or more of ${units.join(', ')}` : units.join('')} differ from the reviewed plan (a token alone cannot say which resources: \`nyl plan --out FILE\` keeps them for \`--plan FILE\`)`;
}
