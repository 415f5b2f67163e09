import { Exit } from '../../util/errors.js';
import { promotionGate, refusePending } from '../promotion.js';
import type { OpReport } from '../report.js';
import { judgeSource, type SourceVerdict } from '../source-order.js';
import type { Loaded, OpContext } from '../workspace.js';

/**
 * What is asked before a reconcile waits for the lease (and again after a wait): a source older
 * than the environment's is not applied (the run is superseded), and a promotion gate refuses a
 * source the environments before this one have not got, sound (and verified).
 */
export function sourceGate(ctx: OpContext, env: string, allowOlder: boolean) {
  let verdict: SourceVerdict | undefined;
  const gate = async (l: Loaded) => {
    verdict = await judgeSource(ctx.repo, ctx.backend, {
      environment: env,
      source: l.cfg.source,
      recorded: l.state.recordedSource,
      strict: l.sel.sourceOrder === 'strict',
      allowOlder,
    });
    if (!verdict.superseded) refusePending(l.sel, await promotionGate(ctx, l.cfg, l.sel, l.cfg.source));
    return { stop: verdict.superseded, problems: verdict.problems };
  };
  return { gate, verdict: () => verdict };
}

/** A reconcile that did not apply an older source: nothing taken, nothing executed, exit 0. */
export function superseded(env: string, s: NonNullable<SourceVerdict['superseded']>): OpReport {
  return {
    operation: 'reconcile',
    environment: env,
    outcome: 'superseded',
    facts: [
      ['source', s.source],
      ['recorded', s.recorded],
    ],
    problems: [s.problem],
    exit: Exit.ok,
  };
}
