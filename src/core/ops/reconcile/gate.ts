import { Exit, NylError, type Problem } from '../../util/errors.js';
import { promotionGate, refusePending } from '../judge/promotion.js';
import { judgeSource, type SourceVerdict } from '../judge/source-order.js';
import { RECORDED_REFUSALS, recordEnded } from '../runs/ended.js';
import type { OpReport } from '../workspace/report.js';
import type { Loaded, OpContext } from '../workspace/workspace.js';

/**
 * What is asked before a reconcile waits for the lease (and again after a wait): a source older
 * than the environment's is not applied (the run is superseded), and a promotion gate refuses a
 * source the environments before this one have not got, sound (and verified).
 */
export function sourceGate(ctx: OpContext, env: string, allowOlder: boolean) {
  let verdict: SourceVerdict | undefined;
  let seen: Loaded | undefined;
  const gate = async (l: Loaded) => {
    seen = l;
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
  return { gate, verdict: () => verdict, loaded: () => seen };
}

/** A reconcile that did not apply an older source: nothing taken, nothing executed, exit 0. */
export function superseded(
  env: string,
  s: NonNullable<SourceVerdict['superseded']>,
  recorded: { run: string; problem?: Problem },
): OpReport {
  return {
    operation: 'reconcile',
    environment: env,
    outcome: 'superseded',
    facts: [
      ['source', s.source],
      ['recorded', s.recorded],
      ['run', recorded.run],
    ],
    problems: [s.problem, ...(recorded.problem ? [recorded.problem] : [])],
    exit: Exit.ok,
  };
}

/** A refusal about this source or plan is kept in the run history (best effort), then stands. */
export async function recordRefusal(ctx: OpContext, e: unknown, l: Loaded | undefined): Promise<void> {
  const p = e instanceof NylError ? e.problems.find((x) => RECORDED_REFUSALS.has(x.code)) : undefined;
  if (!p || !l) return;
  await recordEnded(
    ctx,
    { environment: l.sel.environment, refs: l.state.refs },
    {
      operation: 'reconcile',
      source: l.cfg.source,
      state: 'refused',
      problem: p,
    },
  );
}
