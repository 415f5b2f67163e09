import { recordedChanges } from '../../changes/counts.js';
import type { VerifyResult } from '../../drivers/driver.js';
import type { Selection } from '../../resolve/select.js';
import type { ObservedUnit } from '../../state/documents.js';
import { canonicalJson } from '../../util/canonical.js';
import { Exit, type Problem, problem } from '../../util/errors.js';
import { decide } from '../evaluate/decide.js';
import type { EvaluatedUnit } from '../evaluate/evaluate.js';

/** A unit's observed document with what a check found (drift, health, attestations), at `at`. */
export function observedAfter(o: ObservedUnit & { receipt: object }, r: VerifyResult, at: string): ObservedUnit {
  const receiptKey = (o.receipt as { executionKey: string }).executionKey;
  // The resources that drifted, as the actions that would put them back (kinds that plan).
  const resources = r.changes?.resources.length ? { resources: recordedChanges(r.changes).resources } : {};
  const next: ObservedUnit = { ...o, drift: { state: r.state, detail: r.detail, at, receiptKey, ...resources } };
  if (r.health) next.health = { ...r.health, at };
  if (r.attestations) next.attestations = r.attestations;
  return next;
}

/** Whether what was observed changed (not merely that it was observed again): only then is it written. */
export function observationChanged(next: ObservedUnit, before: ObservedUnit): boolean {
  const same = (x: ObservedUnit) =>
    canonicalJson([
      x.drift?.state,
      x.drift?.detail,
      x.drift?.receiptKey,
      x.health?.state,
      x.health?.detail,
      x.attestations,
    ]);
  return same(next) !== same(before);
}

/** NYL-VERIFY-DRIFT, saying what the next reconcile does with the unit. */
export function driftProblem(
  env: string,
  sel: Selection,
  e: EvaluatedUnit,
  next: ObservedUnit,
  detail: string,
): Problem {
  const d = e.desired ? decide(e.desired, next, e.policy, { driftRepair: sel.driftRepair }) : undefined;
  const then =
    d?.action === 'execute'
      ? `the next reconcile re-executes it (driftRepair: ${sel.driftRepair})`
      : d?.action === 'awaiting-approval'
        ? `the next reconcile waits for approval: it is not safe to re-run (recovery policy ${e.policy})`
        : d?.action === 'drifted'
          ? 'the next reconcile leaves it drifted (driftRepair: manual)'
          : d?.action === 'held'
            ? 'the next reconcile leaves it: it is held'
            : 'the next reconcile settles its condition first';
  return problem('NYL-VERIFY-DRIFT', `unit ${e.name} drifted: ${detail}; ${then}`, {
    severity: 'warning',
    subject: e.name,
    exit: Exit.drift,
    fix:
      d?.action === 'awaiting-approval'
        ? `run \`nyl reconcile -e ${env} --approve ${e.name}\` once re-running it is safe`
        : d?.action === 'drifted'
          ? `force it with \`nyl reconcile -e ${env} --unit ${e.name} --reapply --reason <text>\``
          : `run \`nyl reconcile -e ${env}\` to repair it`,
  });
}
