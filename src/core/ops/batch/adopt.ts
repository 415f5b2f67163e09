import type { RunRecord } from '../../state/documents.js';
import { plannedReconciles } from '../../state/history-read.js';
import { readEnvironment } from '../../state/read.js';
import { Exit, type ExitCode } from '../../util/errors.js';
import type { OpContext } from '../workspace/workspace.js';

/** How far back the run history is read for the run a batch lost track of. */
const LOOK_BACK = 20;

/** A run's exit code from its final record, as its reconcile would have exited. */
export function exitOfRecord(r: RunRecord): ExitCode {
  const results = Object.values(r.results ?? {}).map((u) => u.result);
  if (results.includes('uncertain')) return Exit.uncertain;
  if (r.state === 'failed' || results.includes('failed')) return Exit.failed;
  if (results.includes('awaiting-approval')) return Exit.refused;
  return Exit.ok;
}

/**
 * The reconcile that landed on `environment` after the batch started it, when the batch could not
 * record it (killed between the landing and its own write, or a write of the record that was lost):
 * the oldest reconcile in the run history that started at or after `since`, executed one of the
 * batch's plan tokens for it (not a reconcile someone ran with -e meanwhile) and landed a transition.
 */
export async function landedSince(
  ctx: OpContext,
  prefix: string,
  environment: string,
  since: string,
  tokens: string[],
): Promise<RunRecord | undefined> {
  const state = await readEnvironment(ctx.repo, ctx.backend, prefix, environment);
  const history = { ref: state.refs.history, tip: state.tips.history };
  const runs = await plannedReconciles(ctx.repo, ctx.backend, history, tokens, {
    limit: LOOK_BACK,
    since: Date.parse(since),
  });
  // Newest first: the oldest that landed a transition.
  return runs.filter((r) => r.state === 'succeeded' || r.state === 'failed').at(-1);
}
