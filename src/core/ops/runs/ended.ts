import type { RunRecord } from '../../state/documents.js';
import { FILES } from '../../state/documents.js';
import { historySubject } from '../../state/history.js';
import { currentHolder } from '../../state/lease.js';
import type { EnvRefs } from '../../state/read.js';
import { prettyJson } from '../../util/canonical.js';
import { Exit, type Problem, problem } from '../../util/errors.js';
import { isoTime } from '../../util/time.js';
import { uuid7 } from '../../util/uuid7.js';
import type { OpContext } from '../workspace/workspace.js';

/** Refusals a run's history keeps: decisions about this source or plan, not contention or bad input. */
export const RECORDED_REFUSALS = new Set(['NYL-PROMOTION-PENDING', 'NYL-PLAN-STALE', 'NYL-SOURCE-DIVERGED']);

/**
 * Records a run that ended without taking the lease (superseded by a newer source, refused by a
 * gate or a stale plan) on a ref of its own, `ended/<run>`: created, never moved, so it races
 * nobody; the next write under the lease folds it into history. Best effort: a write that fails
 * leaves the answer as it was, with a warning.
 */
export async function recordEnded(
  ctx: OpContext,
  where: { environment: string; refs: EnvRefs },
  fields: { operation: string; source: string; state: 'superseded' | 'refused'; problem: Problem },
): Promise<{ run: string; problem?: Problem }> {
  const run = uuid7();
  const now = isoTime(ctx.now());
  const record: RunRecord = {
    schema: 'nyl.run/v1',
    run,
    environment: where.environment,
    operation: fields.operation,
    state: fields.state,
    holder: currentHolder(),
    source: fields.source,
    startedAt: now,
    updatedAt: now,
    deadline: now,
    finishedAt: now,
    phase: 'finished',
    executing: [],
    states: [{ state: fields.state, at: now }],
    ended: { code: fields.problem.code, message: fields.problem.message },
  };
  try {
    const batch = ctx.repo.batch();
    const tree = batch.tree(new Map([[FILES.run, Buffer.from(prettyJson(record))]]));
    const commit = batch.commit({
      tree,
      parents: [],
      author: await ctx.repo.signature(),
      message: historySubject(record),
    });
    await batch.flush();
    const ok = await ctx.backend.update([{ ref: where.refs.ended(run), old: undefined, new: commit }], {
      environment: where.environment,
      what: `the record of run ${run} (${fields.state})`,
      ifLanded: '`nyl runs` lists it',
      ifNot: 'it is not in the run history; nothing else changes',
    });
    if (ok) return { run };
  } catch {
    /* the answer stands without it */
  }
  return {
    run,
    problem: problem('NYL-RUN-UNRECORDED', `run ${run} (${fields.state}) could not be recorded in the run history`, {
      severity: 'warning',
      subject: where.environment,
      exit: Exit.ok,
      fix: 'nothing to do: what it answered stands; `nyl runs` will not list it',
    }),
  };
}
