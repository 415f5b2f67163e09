import { groupOfName } from '../../config/for-each.js';
import type { UnitConfig } from '../../config/model.js';
import type { RecoveryPolicy } from '../../drivers/driver.js';
import { driverFor } from '../../drivers/index.js';
import { type DesiredUnit, MissingOutputError, resolveUnit, UnitFilesError } from '../../resolve/desired.js';
import type { Outputs } from '../../resolve/outputs.js';
import type { Selection } from '../../resolve/select.js';
import type { ObservedUnit } from '../../state/documents.js';
import type { EnvState } from '../../state/read.js';
import { uuid7 } from '../../util/uuid7.js';
import { type DecideOptions, type Decision, decide, decideUnresolved } from './decide.js';

export type Evaluation =
  | Decision
  /**
   * Inputs come from a unit that executes first: known only after it has. `regardless` is what happens
   * to it whatever those inputs turn out to be (it is new, changed, drifted, uncertain, held, …);
   * without it, it executes only if they change.
   */
  | { action: 'pending'; on: string[]; regardless?: Decision }
  /** Needs a unit that failed, is uncertain or is blocked itself. */
  | { action: 'blocked'; on: string; reason: string }
  /** Cannot be resolved, e.g. an upstream receipt lacks the referenced output. */
  | { action: 'invalid'; reason: string }
  /** Would execute, but this run executes only a selection (--failed, --from) it is not in. */
  | { action: 'skipped'; reason: string; would: Decision };

export interface EvaluatedUnit {
  name: string;
  kind: string;
  policy: RecoveryPolicy;
  observed?: ObservedUnit;
  desired?: DesiredUnit;
  evaluation: Evaluation;
}

export function uidFor(state: EnvState, name: string): string {
  const known = state.observed.get(name)?.uid ?? state.desiredUids.get(name);
  if (known) return known;
  // A unit's uid is created once, the first time it is resolved, and kept from then on.
  const uid = uuid7();
  state.desiredUids.set(name, uid);
  return uid;
}

/** Why a dependency stops a unit: it waits, failed, was not selected, or is blocked itself. */
function blockedBy(o: Evaluation): string | undefined {
  if (o.action === 'wait') return o.state;
  if (o.action === 'invalid') return 'failed';
  if (o.action === 'skipped') return 'not selected, and not current';
  return o.action === 'blocked' ? 'blocked' : undefined;
}

/** A unit a dependency stops (its own uncertainty says more than what blocks it), or undefined. */
function stopped(
  u: UnitConfig,
  observed: ObservedUnit | undefined,
  outcomeOf: (dep: string) => Evaluation | undefined,
): Evaluation | undefined {
  for (const dep of u.deps) {
    const o = outcomeOf(dep);
    const why = o ? blockedBy(o) : undefined;
    if (why === undefined) continue;
    const c = observed?.condition;
    if (c?.state === 'uncertain') return { action: 'wait', state: 'uncertain', reason: c.reason };
    return { action: 'blocked', on: dep, reason: `needs ${dep} (${why})` };
  }
  return undefined;
}

/** Why a unit cannot be resolved: files its spec names are not in the commit, or an upstream lacks an output. */
function unresolvable(
  e: unknown,
  state: EnvState,
  artifactsOf?: (dep: string) => Record<string, string> | undefined,
): string {
  if (e instanceof UnitFilesError) return e.problems.map((p) => `${p.field}: ${p.message}`).join('; ');
  if (!(e instanceof MissingOutputError)) throw e;
  // Sensitive outputs are never recorded, so they can never be passed on: say so (also of a
  // receipt this very run made).
  const artifacts = artifactsOf?.(e.ref) ?? state.observed.get(e.ref)?.receipt?.artifacts;
  const sensitive = artifacts?.sensitiveOutputs?.split(',') ?? [];
  return sensitive.includes(e.key)
    ? `output ${e.key} of ${e.ref} is sensitive (or holds a secret's value): Nyl never records such outputs, so units.${e.ref}.outputs.${e.key} cannot be passed; read it from the tool's state or a secret store instead`
    : `${e.ref} has no output ${e.key} (referenced as units.${e.ref}.outputs.${e.key})`;
}

/** Upstream units that execute first and whose outputs this unit reads (a mapped unit's items too, resolve/for-each.ts). */
function pendingOn(u: UnitConfig, outcomeOf: (dep: string) => Evaluation | undefined): string[] {
  const from = u.forEach && 'from' in u.forEach ? [u.forEach.from.unit] : [];
  return [...u.refs.map((r) => r.unit), ...from].filter(
    (d, i, a) => a.indexOf(d) === i && outcomeOf(d)?.action === 'execute',
  );
}

/** Resolves one unit against outputs known so far and decides what to do with it. */
export function evaluateUnit(
  sel: Selection,
  state: EnvState,
  name: string,
  outcomeOf: (dep: string) => Evaluation | undefined,
  outputsOf: (dep: string) => Outputs | undefined,
  uid: string,
  opts: DecideOptions = { driftRepair: sel.driftRepair },
  /** Artifacts of receipts made in this run (by unit), to tell a sensitive output from a missing one. */
  artifactsOf?: (dep: string) => Record<string, string> | undefined,
): EvaluatedUnit {
  const u = sel.units.get(name);
  if (!u) throw new Error(`unit ${name} is not selected`);
  const observed = state.observed.get(name);
  const base = { name, kind: u.doc.kind, observed };
  const manual = (evaluation: Evaluation): EvaluatedUnit => ({ ...base, policy: 'manual', evaluation });
  const stop = stopped(u, observed, outcomeOf);
  if (stop) return manual(stop);
  const pending = pendingOn(u, outcomeOf);
  if (u.unresolved)
    return manual(
      pending.length && !u.instance ? { action: 'pending', on: pending } : { action: 'invalid', reason: u.unresolved },
    );
  if (pending.length) {
    const { policy, regardless } = provisional(sel, u, uid, state, observed, opts);
    return { ...base, policy, evaluation: { action: 'pending', on: pending, ...(regardless ? { regardless } : {}) } };
  }
  let desired: DesiredUnit;
  try {
    desired = resolveUnit(u, uid, outputsOf, sel.sources);
  } catch (e) {
    return manual({ action: 'invalid', reason: unresolvable(e, state, artifactsOf) });
  }
  const policy = driverFor(u.doc.kind).policy(desired);
  return { ...base, policy, desired, evaluation: selected(name, decide(desired, observed, policy, opts), opts) };
}

/** Outside a selection (--failed, --from), what would execute does not: reused receipts stay. */
function selected(name: string, d: Decision, opts: DecideOptions): Evaluation {
  const group = groupOfName(name);
  if (!opts.only || opts.only.has(name) || (group && opts.only.has(group))) return d;
  if (d.action !== 'execute' && d.action !== 'inspect' && d.action !== 'awaiting-approval') return d;
  return { action: 'skipped', reason: `not selected (${opts.onlyWhy ?? 'a selection'})`, would: d };
}

/**
 * What happens to a unit whose upstream executes first, whatever that produces: decided against
 * the outputs recorded now. If that says current, only changed inputs would make it execute
 * (undefined). Without recorded outputs to resolve against, its own state still says much: held,
 * uncertain, failed, or new.
 */
function provisional(
  sel: Selection,
  u: UnitConfig,
  uid: string,
  state: EnvState,
  observed: ObservedUnit | undefined,
  opts: DecideOptions,
): { policy: RecoveryPolicy; regardless?: Decision } {
  const driver = driverFor(u.doc.kind);
  let desired: DesiredUnit | undefined;
  try {
    desired = resolveUnit(u, uid, (d) => state.observed.get(d)?.receipt?.outputs, sel.sources);
  } catch (e) {
    if (!(e instanceof MissingOutputError) && !(e instanceof UnitFilesError)) throw e;
  }
  const policy = driver.policy(desired ?? ({ spec: u.doc.spec } as unknown as DesiredUnit));
  if (desired) {
    const d = decide(desired, observed, policy, opts);
    return { policy, ...(d.action === 'current' ? {} : { regardless: d }) };
  }
  const d = decideUnresolved(observed, policy);
  return { policy, ...(d ? { regardless: d } : {}) };
}

/** Evaluates every unit as things stand, without executing: what plan and status show. */
export function evaluateAll(
  sel: Selection,
  state: EnvState,
  opts: DecideOptions = { driftRepair: sel.driftRepair },
): Map<string, EvaluatedUnit> {
  const out = new Map<string, EvaluatedUnit>();
  for (const wave of sel.waves)
    for (const name of wave)
      out.set(
        name,
        evaluateUnit(
          sel,
          state,
          name,
          (d) => {
            const e = out.get(d)?.evaluation;
            // Pending outputs propagate: a consumer of a pending unit is pending too.
            return e?.action === 'pending' || e?.action === 'inspect' ? { action: 'execute', why: 'changed' } : e;
          },
          (d) => state.observed.get(d)?.receipt?.outputs,
          uidFor(state, name),
          opts,
        ),
      );
  return out;
}
