import { withRun } from '../../state/history.js';
import { walkHistory } from '../../state/history-read.js';
import { currentHolder } from '../../state/lease.js';
import { RunSession } from '../../state/run-session.js';
import { formatDuration } from '../../util/duration.js';
import { Exit } from '../../util/errors.js';
import { uuid7 } from '../../util/uuid7.js';
import { waitForNonImportWrite } from '../recovery/non-import-write.js';
import type { OpReport } from '../workspace/report.js';
import { loadEnvironment, type OpContext, refuseUnpublished } from '../workspace/workspace.js';

/**
 * `nyl runs prune -e ENV --older-than 90d`: drops the run history older than the cutoff by
 * re-committing the newer entries (same trees, messages, authors and times) onto no parent, in one
 * write under the lease. Only the history ref moves: the state refs and their tips are untouched.
 */
export async function pruneRuns(ctx: OpContext, opts: { environment: string; olderThanMs: number }): Promise<OpReport> {
  const env = opts.environment;
  let loaded = await loadEnvironment(ctx, env, () => true);
  refuseUnpublished(loaded);
  loaded = await waitForNonImportWrite(ctx, loaded);
  const state = loaded.state;
  const cutoff = ctx.now() - opts.olderThanMs;
  const kept: { commit: string }[] = [];
  let dropped = false;
  const walk = walkHistory(ctx.repo, ctx.backend, { ref: state.refs.history, tip: state.tips.history }, 100);
  for (;;) {
    const next = await walk.next();
    if (next.done) break;
    const r = next.value.record;
    if (Date.parse(r.finishedAt ?? r.updatedAt) < cutoff) {
      dropped = true;
      break;
    }
    kept.push({ commit: next.value.commit });
  }
  const base = { operation: 'runs prune', environment: env, problems: [], exit: Exit.ok };
  const facts: [string, unknown][] = [
    ['kept', kept.length],
    ['olderThan', formatDuration(opts.olderThanMs)],
  ];
  if (!dropped) return { ...base, outcome: 'nothing to prune', facts };
  const batch = ctx.repo.batch();
  let parent: string | undefined;
  for (const k of kept.reverse()) {
    const c = await ctx.repo.readCommit(k.commit);
    if (!c) continue;
    const who = /^(.*) <(.*)>$/.exec(c.author);
    const author = who ? { name: who[1] as string, email: who[2] as string } : await ctx.repo.signature();
    // Each kept entry keeps its run's moves (its second parent), unless it becomes the first entry.
    parent = batch.commit({
      tree: c.tree,
      parents: withRun(parent, c.parents[1]),
      author,
      message: c.message,
      time: c.time,
    });
  }
  await batch.flush();
  const session = new RunSession(
    ctx.repo,
    ctx.backend,
    state,
    uuid7(),
    'runs prune',
    currentHolder(),
    await ctx.repo.signature(),
  );
  session.prepare(ctx.now());
  await session.replace(
    [{ ref: state.refs.history, old: state.tips.history, new: parent }],
    ctx.now(),
    `the pruned run history of ${env}`,
  );
  return { ...base, outcome: 'pruned', facts: [...facts, ['history', parent ?? '(empty)']] };
}
