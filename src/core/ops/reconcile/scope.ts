import type { DesiredUnit } from '../../resolve/desired.js';
import type { Selection } from '../../resolve/select.js';
import type { EnvState } from '../../state/read.js';
import { NylError } from '../../util/errors.js';
import type { DecideOptions } from '../evaluate/decide.js';
import { type EvaluatedUnit, evaluateAll } from '../evaluate/evaluate.js';
import { computePlan, type Plan } from '../plan/compute.js';
import { checkToken } from '../plan/stale.js';
import { configChanged, type RecoverySelection, recoveryOptions, recoverySelection } from '../recovery/selection.js';
import { desiredFiles, sameFiles } from '../transition/documents.js';
import type { UnitRow } from '../workspace/report.js';
import { refuseUnknown, unitsNamed } from '../workspace/unit-names.js';
import type { OpContext } from '../workspace/workspace.js';
import type { ReconcileOptions } from './options.js';

/** What a reconcile may execute: the decisions' options, the approved plan's rows, the removed units. */
export interface Scope {
  decide: DecideOptions;
  /** With --plan: each unit's row in the approved plan; nothing the plan did not list runs. */
  planned?: Map<string, string>;
  plan?: string;
  /** Units that left the configuration: reported until torn down or forgotten, never dropped. */
  removed: UnitRow[];
  /** A recovery run's selection (--failed, --from): what it may execute. */
  recovery?: RecoverySelection;
  /** With --plan: the plan as it stands now, equal to the reviewed one at the unit level. */
  current?: Plan;
  /** --approve: units a person approved (re-running unsafely, or their plan's deletes and replaces). */
  approved: Set<string>;
}

/** The select phase: named units exist, an approved plan is still the plan, what left is listed. */
export function selectScope(
  sel: Selection,
  recorded: EnvState,
  state: EnvState,
  opts: ReconcileOptions,
  now: number,
): Scope {
  const env = sel.environment;
  const named = [...(opts.approve ?? []), ...(opts.reapply?.units ?? []), ...(opts.from?.units ?? [])];
  for (const u of named) refuseUnknown(sel, u);
  const approve = unitsNamed(sel, opts.approve ?? []);
  const reapply = unitsNamed(sel, opts.reapply?.units ?? []);
  const ask = { failed: opts.failed, from: opts.from?.units };
  const recovery = recoverySelection(sel, state, ask);
  if (recovery?.changed.length && !opts.allowConfigChange) throw new NylError(configChanged(sel, recovery, 'error'));
  let planned: Map<string, string> | undefined;
  let current: Plan | undefined;
  if (opts.plan) {
    current = computePlan(sel, recorded, now, ask);
    const stale = checkToken(env, opts.plan, current, opts.reviewed?.rows);
    if (stale) throw new NylError(stale);
    planned = new Map(current.rows.map((r) => [r.unit, r.result]));
  }
  const decide = recoveryOptions(recovery, {
    driftRepair: sel.driftRepair,
    approved: new Set(approve),
    reapply: new Set(reapply),
    planApproved: planned !== undefined,
  });
  const approved = new Set(approve);
  return { decide, planned, plan: opts.plan, removed: removedRows(sel, state), recovery, current, approved };
}

export function removedRows(sel: Selection, state: EnvState): UnitRow[] {
  const env = sel.environment;
  return [...state.observed.values()]
    .filter((o) => !sel.units.has(o.name))
    .map((o) => {
      // An uncertain unit stays uncertain (and the exit code says so) even out of the configuration.
      const uncertain = o.condition?.state === 'uncertain';
      return {
        unit: o.name,
        kind: o.kind,
        result: uncertain ? 'uncertain' : 'removed',
        detail: `${uncertain ? `${o.condition?.reason}; ` : ''}no longer in the configuration; its state is kept until \`nyl teardown -e ${env}\` or \`nyl state forget -e ${env} --unit ${o.name}\``,
      };
    });
}

/** The decide phase, before anything is taken: each unit's evaluation against the recorded state. */
export interface Upfront {
  evaluations: Map<string, EvaluatedUnit>;
  desired: Map<string, DesiredUnit>;
  /** Nothing to execute or inspect and the desired documents as recorded: no lease, no write. */
  nothingToDo: boolean;
}

export function decideUpfront(
  ctx: OpContext,
  sel: Selection,
  state: EnvState,
  scope: Scope,
  takeover: boolean,
): Upfront {
  const evaluations = evaluateAll(sel, state, scope.decide);
  const desired = new Map<string, DesiredUnit>();
  for (const [n, e] of evaluations) if (e.desired) desired.set(n, e.desired);
  // Adopting a receipt of an earlier nyl (its files' identities recorded) is a write too.
  const anyWork = [...evaluations.values()].some(
    (e) =>
      ['execute', 'pending', 'inspect'].includes(e.evaluation.action) ||
      (e.evaluation.action === 'current' && e.evaluation.adopt === true),
  );
  // A recovery run that runs nothing leaves the rest, new desired documents too, to a full reconcile.
  const nothingToDo =
    !takeover &&
    !anyWork &&
    (scope.recovery !== undefined || sameFiles(ctx.repo, desiredFiles(sel, desired, state), state.desiredFiles));
  return { evaluations, desired, nothingToDo };
}
