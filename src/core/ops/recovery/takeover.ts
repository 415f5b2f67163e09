import type { Config } from '../../config/model.js';
import type { Selection } from '../../resolve/select.js';
import type { ObservedUnit } from '../../state/documents.js';
import type { LeaseVerdict } from '../../state/lease.js';
import { clockSkewProblems, leaseVerdict } from '../../state/lease.js';
import type { EnvState } from '../../state/read.js';
import { Exit, type Problem, problem } from '../../util/errors.js';
import { waitForLease } from '../lease/wait.js';
import { desiredResolver } from '../transition/documents.js';
import { type Loaded, loadEnvironment, type OpContext, refuseUnpublished } from '../workspace/workspace.js';

import type { ImportResult } from './import-result.js';
import { importRuns } from './import-runs.js';

/** Checkpoints that arrived on evidence refs after their run was marked uncertain. */
export function lateCheckpoints(state: EnvState): Problem[] {
  const out: Problem[] = [];
  for (const ev of state.evidence.values())
    for (const [name, cp] of ev.checkpoints) {
      const c = state.observed.get(name)?.condition;
      if (c?.state !== 'uncertain' || c.run !== ev.id || c.checkpointed) continue;
      out.push(
        problem(
          'NYL-RUN-LATE-CHECKPOINT',
          `run ${ev.id} checkpointed ${name} (${cp.result}) after it was marked uncertain; the checkpoint is kept as evidence and does not clear the condition`,
          {
            severity: 'warning',
            subject: name,
            exit: Exit.uncertain,
            fix: `if that execution is the one you want, adopt it: \`nyl recover -e ${state.environment} --unit ${name} --accept ${ev.id} --reason <text>\``,
          },
        ),
      );
    }
  return out;
}

/**
 * What status and plan show for runs left behind: the state as the next import will record it,
 * and NYL-RUN-UNIMPORTED per dead run (a live run's ref is not dead).
 */
export function previewImport(
  sel: Selection,
  recorded: EnvState,
  v: LeaseVerdict,
  now: number,
): { state: EnvState; problems: Problem[] } {
  const env = recorded.environment;
  const problems: Problem[] = [];
  let state = recorded;
  const dead =
    v.kind === 'held' ? [...recorded.runs.values()].filter((r) => r.id !== v.run) : [...recorded.runs.values()];
  if (dead.length) {
    const preview = importRuns(
      sel,
      { ...recorded, runs: new Map(dead.map((r) => [r.id, r])) },
      desiredResolver(sel),
      now,
    );
    state = { ...recorded, observed: withChanges(recorded.observed, preview.observed) };
    for (const r of dead) {
      const left = [...preview.observed.values()].filter(
        (o): o is ObservedUnit => o?.condition?.run === r.id && o.condition.state === 'uncertain',
      );
      const how =
        r.record?.state === 'cancelled' ? 'cancelled' : v.kind === 'broken' && v.run === r.id ? 'lease broken' : 'died';
      problems.push(
        problem(
          'NYL-RUN-UNIMPORTED',
          `run ${r.id} (${r.record?.operation ?? 'unknown'}, ${how}) has not been imported: ${r.checkpoints.size} checkpoint(s)${left.length ? `; units it left uncertain: ${left.map((o) => o.name).join(', ')}` : ''}`,
          {
            severity: 'warning',
            subject: r.id,
            exit: Exit.uncertain,
            fix: `run \`nyl reconcile -e ${env}\` to take it over, or \`nyl recover -e ${env} --reason <text>\` to import it without executing`,
          },
        ),
      );
    }
  }
  return { state, problems };
}

/** What an importing operation starts from, when no gate stopped it. */
export interface TakenOver {
  stopped: undefined;
  cfg: Config;
  sel: Selection;
  /** The state as read; `state` is it with the import applied. */
  original: EnvState;
  verdict: LeaseVerdict;
  /** Whether there are dead runs (or a broken lease) to import. */
  takeover: boolean;
  imp: ImportResult | undefined;
  state: EnvState;
  problems: Problem[];
}

/**
 * What an importing operation (reconcile, teardown) starts from: configuration and state read,
 * unpublished local work refused, the lease waited for, and every dead run imported in memory.
 */
export async function loadTakingOver<G>(
  ctx: OpContext,
  env: string,
  /**
   * Asked before waiting for the lease, and again after a wait (the state may have moved): a
   * `stop` ends here with nothing taken; its problems go with the report.
   */
  gate?: (loaded: Loaded) => Promise<{ stop?: G; problems: Problem[] }>,
): Promise<{ stopped: G } | TakenOver> {
  let loaded = await loadEnvironment(ctx, env);
  refuseUnpublished(loaded);
  let gated = await gate?.(loaded);
  if (gated?.stop !== undefined) return { stopped: gated.stop } as const;
  const waited = await waitForLease(ctx, loaded, { takeover: true });
  if (waited.loaded.state.allTips !== loaded.state.allTips) {
    gated = await gate?.(waited.loaded);
    if (gated?.stop !== undefined) return { stopped: gated.stop } as const;
  }
  loaded = waited.loaded;
  const original = loaded.state;
  const verdict = leaseVerdict(original, ctx.now());
  const takeover = original.runs.size > 0 || verdict.kind === 'broken';
  const imp = takeover ? importRuns(loaded.sel, original, desiredResolver(loaded.sel), ctx.now()) : undefined;
  const state: EnvState = imp ? { ...original, observed: withChanges(original.observed, imp.observed) } : original;
  const problems: Problem[] = [
    ...(gated?.problems ?? []),
    ...waited.problems,
    ...clockSkewProblems(original, ctx.now()),
    ...(imp?.problems ?? []),
    ...lateCheckpoints(original),
  ];
  return { stopped: undefined, cfg: loaded.cfg, sel: loaded.sel, original, verdict, takeover, imp, state, problems };
}

/** Observed documents with `changes` applied: a changed document replaces its unit's, null drops it. */
export function withChanges(
  observed: Map<string, ObservedUnit>,
  changes: Map<string, ObservedUnit | null>,
): Map<string, ObservedUnit> {
  const out = new Map(observed);
  for (const [name, o] of changes) {
    if (o) out.set(name, o);
    else out.delete(name);
  }
  return out;
}
