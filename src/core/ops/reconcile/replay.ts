import { plannedReconciles } from '../../state/history-read.js';
import type { EnvState } from '../../state/read.js';
import { NylError } from '../../util/errors.js';
import { exitFor, type RunReport, type UnitRow } from '../workspace/report.js';
import type { OpContext } from '../workspace/workspace.js';

/** How far back a repeated plan is looked for: the runs of a busy day, not the whole history. */
const LOOK_BACK = 50;

/**
 * Seed 004's idempotent recovery key: a `reconcile --plan TOKEN` whose plan is stale because its
 * own run already landed answers with that run (`created: no`) instead of refusing or executing
 * again. Only a stale plan is looked for, so a plain reconcile never reads history.
 */
export async function landedPlan(
  ctx: OpContext,
  state: EnvState,
  token: string,
  e: unknown,
): Promise<RunReport | undefined> {
  if (!(e instanceof NylError) || !e.problems.some((p) => p.code === 'NYL-PLAN-STALE')) return undefined;
  const history = { ref: state.refs.history, tip: state.tips.history };
  const [r] = await plannedReconciles(ctx.repo, ctx.backend, history, [token], { limit: LOOK_BACK });
  if (!r) return undefined;
  const rows: UnitRow[] = Object.entries(r.results ?? {}).map(([unit, u]) => ({
    unit,
    kind: u.kind ?? '',
    result: u.result,
    detail: u.reason ?? '',
    ...(u.durationMs !== undefined ? { durationMs: u.durationMs } : {}),
  }));
  return {
    operation: 'reconcile',
    environment: state.environment,
    run: r.run,
    source: r.source,
    rows,
    problems: [],
    exit: exitFor(rows, [], ['awaiting-approval']),
    extra: [
      ['created', false],
      ['finished', r.finishedAt ?? r.updatedAt],
    ],
  };
}
