import { driverFor } from '../../drivers/index.js';
import type { DesiredUnit } from '../../resolve/desired.js';
import type { Selection } from '../../resolve/select.js';
import { configuredFiles } from '../../resolve/unit-sources.js';
import { leaseVerdict } from '../../state/lease.js';
import type { EnvState } from '../../state/read.js';
import { sha256Key } from '../../util/canonical.js';
import type { Problem } from '../../util/errors.js';
import { ADOPTED, whyText, wouldText } from '../evaluate/decide.js';
import { type EvaluatedUnit, type Evaluation, evaluateAll } from '../evaluate/evaluate.js';
import { type RecoveryAsk, type RecoverySelection, recoveryOptions, recoverySelection } from '../recovery/selection.js';
import { previewImport } from '../recovery/takeover.js';
import type { UnitRow } from '../workspace/report.js';
import { unitToken } from './token.js';

/**
 * The unit-level plan: each unit's row as a reconcile would report it, and its token. Computed the
 * same way by `nyl plan` and by `reconcile --plan`, so equal tokens mean equal plans.
 */

/** A unit of a kind that plans its resources: its resolved document, or the units its inputs wait for. */
export type ResourceUnit = { desired: DesiredUnit } | { waitsOn: string[] };

export interface Plan {
  rows: UnitRow[];
  problems: Problem[];
  /** Names source, desired and observed state and the plan itself: any change makes it stale. */
  token: string;
  /** A recovery plan's selection (--failed, --from). */
  recovery?: RecoverySelection;
  /** Units of kinds that plan (Terraform, OpenTofu) that would execute: what their resource plan needs. */
  resourceUnits: Map<string, ResourceUnit>;
}

/** The plan as things stand (dead runs imported first, as a reconcile would). */
export function computePlan(sel: Selection, recorded: EnvState, now: number, ask: RecoveryAsk = {}): Plan {
  const { state, problems } = previewImport(sel, recorded, leaseVerdict(recorded, now), now);
  const recovery = recoverySelection(sel, state, ask);
  const rows: UnitRow[] = [];
  const resourceUnits = new Map<string, ResourceUnit>();
  for (const e of evaluateAll(sel, state, recoveryOptions(recovery, { driftRepair: sel.driftRepair })).values()) {
    const r = resourceUnit(e);
    if (r) resourceUnits.set(e.name, r);
    const ev = e.evaluation;
    const u = sel.units.get(e.name);
    const files = e.desired?.files ?? (u ? configuredFiles(sel, u) : undefined);
    const row: Omit<UnitRow, 'result' | 'detail'> = {
      unit: e.name,
      kind: e.kind,
      executionKey: e.desired?.executionKey,
      ...(files ? { files } : {}),
    };
    if (ev.action === 'pending' && !ev.regardless) {
      const mapped = sel.units.get(e.name)?.unresolved;
      const detail = mapped
        ? `mapped over the outputs of ${ev.on.join(', ')}: ${mapped}; each new or changed instance executes`
        : `executes if the outputs of ${ev.on.join(', ')} change`;
      rows.push({ ...row, result: 'maybe', detail });
      continue;
    }
    // A unit whose upstream executes first, but whose own state decides already, is shown as that.
    const d = ev.action === 'pending' ? (ev.regardless as Exclude<typeof ev.regardless, undefined>) : ev;
    const after = ev.action === 'pending' ? ` (after ${ev.on.join(', ')})` : '';
    const changed = d.action === 'execute' ? d.change?.files : undefined;
    rows.push({
      ...row,
      ...planRow(d),
      ...(after ? { detail: `${planRow(d).detail}${after}` } : {}),
      ...(changed ? { filesChanged: changed } : {}),
    });
  }
  // A recovery plan is bound to its selection. Not to the revision: that names the variables set
  // where the plan was made (a PR job has no secrets); reconcile checks it against the failed attempt.
  const digest = rowsDigest(sel, rows, recovery ? [recovery.why, [...recovery.only].sort()] : []);
  // Not the source commit: a merge that resolves to the same documents keeps the token.
  const token = unitToken(recorded.tips, digest);
  return { rows, problems, token, recovery, resourceUnits };
}

/**
 * A unit whose kind plans and that would execute (or waits for approval to): planned with its
 * document as resolved now; one whose inputs wait for a unit that executes first is not, it waits.
 */
function resourceUnit(e: EvaluatedUnit): ResourceUnit | undefined {
  const ev = e.evaluation;
  if (!driverFor(e.kind).plan) return undefined;
  if (ev.action === 'pending') {
    const d = ev.regardless;
    return !d || d.action === 'execute' || d.action === 'awaiting-approval' ? { waitsOn: ev.on } : undefined;
  }
  if ((ev.action === 'execute' || ev.action === 'awaiting-approval') && e.desired) return { desired: e.desired };
  return undefined;
}

/**
 * What the plan's rows say, in 12 hex digits: each unit's result and the execution key of its
 * desired document (a unit whose inputs are not known yet: the key of its configuration).
 */
function rowsDigest(sel: Selection, rows: UnitRow[], bound: unknown[]): string {
  const list: unknown[] = rows.map((r) => [r.unit, r.result, r.executionKey ?? configKey(sel, r.unit)]);
  return sha256Key(bound.length ? [...list, bound] : list).slice(7, 19);
}

/**
 * A unit's configuration as written (kind, name, spec, dependencies) and the files it names
 * outright: known before its inputs are.
 */
export function configKey(sel: Selection, unit: string): string {
  const u = sel.units.get(unit);
  if (!u) return '';
  const files = configuredFiles(sel, u);
  const named = files && Object.keys(files).length ? { files } : {};
  return sha256Key({ kind: u.doc.kind, name: u.doc.name, spec: u.doc.spec, deps: u.deps, ...named });
}

/** A plan row's result and detail for a decision (as reconcile would report the unit). */
function planRow(d: Exclude<Evaluation, { action: 'pending' }>): { result: string; detail: string } {
  switch (d.action) {
    case 'execute':
      return { result: 'execute', detail: whyText(d) };
    case 'current':
      return { result: 'current', detail: d.adopt ? ADOPTED.next : '' };
    case 'wait':
      return { result: d.state, detail: `${d.reason}; waits for nyl recover` };
    case 'blocked':
      return { result: 'blocked', detail: d.reason };
    case 'inspect':
      return { result: 'inspect', detail: 'uncertain; asks its driver whether it was applied, executes if not' };
    case 'invalid':
      return { result: 'failed', detail: d.reason };
    case 'awaiting-approval':
      return { result: 'awaiting-approval', detail: d.reason };
    case 'held':
      return { result: 'held', detail: d.reason };
    case 'drifted':
      return { result: 'drifted', detail: d.reason };
    case 'skipped':
      return { result: 'skipped', detail: `${d.reason}; it would ${wouldText(d.would)}` };
  }
}
