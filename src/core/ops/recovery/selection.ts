import { dependantsOf, type Selection } from '../../resolve/select.js';
import type { EnvState } from '../../state/read.js';
import { Exit, problem } from '../../util/errors.js';
import type { DecideOptions } from '../evaluate/decide.js';
import { evaluateAll } from '../evaluate/evaluate.js';
import { selectionRevision, unitRevision } from '../evaluate/revision.js';
import { unitsNamed } from '../workspace/unit-names.js';

/** What a recovery run asks for: the failed units and their dependants, and/or units to run again from. */
export interface RecoveryAsk {
  failed?: boolean;
  from?: string[];
  /** --allow-config-change: run units whose configuration changed since their failed attempt. */
  allowConfigChange?: boolean;
}

/**
 * The units a recovery run may execute (seed 004's "retry failed" and "recover from here"): its
 * roots — failed units (retryable or not) and uncertain ones whose policy converges, or the units
 * named with --from — and everything downstream of them. Current units outside it are reused;
 * nothing else executes.
 */
export interface RecoverySelection {
  only: Set<string>;
  /** Failed roots: run again whether their failure was retryable or not. */
  retry: Set<string>;
  /** Current units of the selection, executed again (downstream of a root, or --from). */
  reapply: Set<string>;
  roots: string[];
  /** `--failed`, `--from a`: the row detail of units outside it. */
  why: string;
  revision: string;
  /** Roots whose configuration changed since their failed attempt, as `unit (old → new)`. */
  changed: string[];
}

export function recoverySelection(sel: Selection, state: EnvState, ask: RecoveryAsk): RecoverySelection | undefined {
  if (!ask.failed && !ask.from?.length) return undefined;
  // A group named with --from stands for all its instances.
  const from = new Set<string>(unitsNamed(sel, ask.from ?? []));
  const roots = new Set(from);
  // A unit named with --from runs again whatever its state: a failure, retryable or not, too.
  const retry = new Set<string>([...from].filter((n) => state.observed.get(n)?.condition?.state === 'failed'));
  if (ask.failed) {
    const now = evaluateAll(sel, state);
    for (const [name, e] of now) {
      const c = state.observed.get(name)?.condition;
      if (c?.state === 'failed') retry.add(name);
      if (c?.state === 'failed' || (e.evaluation.action === 'execute' && e.evaluation.why === 'recover'))
        roots.add(name);
    }
  }
  const only = downstream(sel, roots);
  // --from re-runs its subtree, current or not; --failed re-runs what failed, and its dependants
  // execute as a reconcile would decide (a current one whose inputs come out the same is reused).
  const reapply = new Set([...downstream(sel, from)].filter((n) => !retry.has(n)));
  const named = [...new Set(ask.from ?? [])].sort();
  const why = [ask.failed ? '--failed' : '', ...named.map((u) => `--from ${u}`)].filter(Boolean).join(' ');
  return {
    only,
    retry,
    reapply,
    roots: [...roots].sort(),
    why,
    revision: selectionRevision(sel, only),
    changed: changedSince(sel, state, roots),
  };
}

/** The units and all that depends on them, transitively. */
function downstream(sel: Selection, roots: Set<string>): Set<string> {
  const out = new Set([...roots, ...dependantsOf(sel.units, roots)]);
  // A group mapped from a selected output is selected whole: instances its new list adds run too.
  for (const [g, group] of sel.mapping?.groups ?? [])
    if ('from' in group.source && out.has(group.source.from.unit)) out.add(g);
  return out;
}

/**
 * Roots whose configuration revision is not the one recorded with their failed attempt. An
 * attempt that recorded none (a dead run's import, a nyl before revisions) has nothing to compare.
 */
function changedSince(sel: Selection, state: EnvState, roots: Set<string>): string[] {
  const changed: string[] = [];
  for (const r of [...roots].sort()) {
    const c = state.observed.get(r)?.condition;
    const u = sel.units.get(r);
    if (!c?.revision || !u) continue;
    const now = unitRevision(u);
    if (c.revision !== now) changed.push(`${r} (${c.revision.slice(7)} → ${now.slice(7)})`);
  }
  return changed;
}

/**
 * A unit retried with another configuration than the attempt that failed is a different run:
 * asked for explicitly (NYL-CONFIG-CHANGED: an error that refuses a reconcile, a warning in a plan).
 */
export function configChanged(sel: Selection, r: RecoverySelection, severity: 'error' | 'warning') {
  const env = sel.environment;
  return problem(
    'NYL-CONFIG-CHANGED',
    `the configuration of ${r.changed.join(', ')} changed since the attempt that failed: re-running runs another configuration${severity === 'error' ? '; nothing was executed' : ''}`,
    {
      severity,
      subject: env,
      exit: severity === 'error' ? Exit.refused : Exit.ok,
      fix: `pass --allow-config-change to run it as configured now, or run a full \`nyl reconcile -e ${env}\``,
    },
  );
}

/** The decision options of a recovery run. */
export function recoveryOptions(r: RecoverySelection | undefined, base: DecideOptions): DecideOptions {
  if (!r) return base;
  return {
    ...base,
    only: r.only,
    onlyWhy: r.why,
    retry: r.retry,
    reapply: new Set([...(base.reapply ?? []), ...r.reapply]),
  };
}
