import { GRACE_MS, leaseVerdict, RESOLUTION_TIMEOUT_MS } from '../../state/lease.js';
import { Backoff } from '../../util/backoff.js';
import { Exit, NylError, type Problem, problem } from '../../util/errors.js';
import { mayRun, refuseUncommitted } from '../judge/files-gate.js';
import { leaseHeldProblem } from '../lease/problems.js';
import { loadTakingOver } from '../recovery/takeover.js';
import { recordEnded } from '../runs/ended.js';
import { startRun } from '../runs/start.js';
import { LostRace, RunWriter } from '../runs/writer.js';
import type { OpReport, RunReport } from '../workspace/report.js';
import { type Loaded, loadEnvironment, type OpContext } from '../workspace/workspace.js';
import { recordRefusal, sourceGate, superseded } from './gate.js';
import { type LandInput, landCancelled, landTransition } from './land.js';
import { DEFAULT_PARALLELISM, type ReconcileOptions } from './options.js';
import { landedPlan } from './replay.js';
import { runReport } from './report.js';
import { planReviewed } from './reviewed-changes.js';
import { decideUpfront, selectScope } from './scope.js';
import { staticRow } from './task.js';
import { executeWaves } from './waves.js';

export { inDoubt } from '../runs/writer.js';
export { DEFAULT_PARALLELISM, type ReconcileOptions } from './options.js';
export { safeExecute, uncertainProblem } from './task.js';

/**
 * Executes what differs from the recorded state, wave by wave, and lands one transition commit
 * (the model: ./README.md). Losing the race for the lease (nothing executed yet) starts over
 * from a fresh read: under --wait-lease that waits for the winner, otherwise it is
 * NYL-LEASE-HELD naming the winner.
 */
export async function reconcile(ctx: OpContext, opts: ReconcileOptions): Promise<RunReport | OpReport> {
  const until = ctx.now() + (ctx.opts.waitLeaseMs ?? 0);
  const backoff = new Backoff();
  for (let attempt = 0; ; attempt++) {
    if (attempt > 0) await backoff.wait({ until, now: ctx.now, cancellation: ctx.cancellation });
    const waitLeaseMs = Math.max(0, until - ctx.now());
    try {
      return await reconcileOnce(attempt === 0 ? ctx : { ...ctx, opts: { ...ctx.opts, waitLeaseMs } }, opts);
    } catch (e) {
      if (!(e instanceof LostRace)) throw e;
      if (ctx.now() >= until) await refuseLostRace(ctx, opts.environment);
    }
  }
}

async function refuseLostRace(ctx: OpContext, env: string): Promise<never> {
  const again = await loadEnvironment(ctx, env);
  const v = leaseVerdict(again.state, ctx.now());
  if (v.kind === 'held') throw new NylError(leaseHeldProblem(env, v));
  throw new NylError(
    problem('NYL-LEASE-HELD', `another run took the lease of ${env} first`, {
      fix: 'run again, or pass --wait-lease <duration>',
      exit: Exit.refused,
    }),
  );
}

function endedSuperseded(ctx: OpContext, l: Loaded | undefined, s: { source: string; problem: Problem }) {
  const where = l ? { environment: l.sel.environment, refs: l.state.refs } : undefined;
  if (!where) return Promise.resolve({ run: '' });
  return recordEnded(ctx, where, { operation: 'reconcile', source: s.source, state: 'superseded', problem: s.problem });
}

/** One attempt: load and take over → select → decide → execute waves → land. */
async function reconcileOnce(ctx: OpContext, opts: ReconcileOptions): Promise<RunReport | OpReport> {
  const env = opts.environment;
  const source = sourceGate(ctx, env, opts.allowOlderSource !== undefined);
  // Take over from dead runs first: what they recorded is imported, what they did not, uncertain.
  const loaded = await loadTakingOver(ctx, env, source.gate).catch(async (e) => {
    await recordRefusal(ctx, e, source.loaded());
    throw e;
  });
  if (loaded.stopped)
    return superseded(env, loaded.stopped, await endedSuperseded(ctx, source.loaded(), loaded.stopped));
  const { cfg, sel, original, verdict, takeover, imp, state, problems } = loaded;

  let scope: ReturnType<typeof selectScope>;
  try {
    scope = selectScope(sel, original, state, opts, ctx.now());
  } catch (e) {
    // The same accepted plan asked again after its run landed: that run is the answer.
    const again = opts.plan ? await landedPlan(ctx, state, opts.plan, e) : undefined;
    if (again) return again;
    await recordRefusal(ctx, e, source.loaded());
    throw e;
  }
  const upfront = decideUpfront(ctx, sel, state, scope, takeover);
  if (upfront.nothingToDo) {
    // Nothing to do: one read, no lease, no write.
    const rows = [...upfront.evaluations.values()].map((e) => staticRow(e.name, e.kind, e.evaluation));
    return runReport(sel, {
      source: cfg.source,
      rows: [...rows, ...scope.removed],
      observed: state.tips.observed,
      problems,
      landed: state.observed,
    });
  }

  // The tools run on the working tree: refuse files that are not what the keys name.
  await refuseUncommitted(ctx, sel, cfg.source, mayRun(upfront.evaluations.values()));
  const started = await startRun(
    ctx,
    original,
    verdict,
    'reconcile',
    { source: cfg.source, state: 'claimed', phase: 'resolution', executing: [] },
    RESOLUTION_TIMEOUT_MS + GRACE_MS,
  );
  // A reviewed plan's Terraform/OpenTofu units planned again and compared, before anything is taken.
  const prePlanned = await planReviewed(ctx, sel, scope.current, opts, started.run).catch(async (e) => {
    await recordRefusal(ctx, e, source.loaded());
    throw e;
  });
  const leaseTaken = {
    operation: 'reconcile' as const,
    environment: sel.environment,
    run: started.run,
    source: cfg.source,
    production: sel.production,
  };
  const writer = new RunWriter(started.session, started.record, ctx.now, 'reconcile', () =>
    ctx.onEvent({ type: 'lease-taken', ...leaseTaken }),
  );
  if (opts.plan) writer.record.plan = opts.plan;
  if (scope.recovery)
    writer.record.recovery = {
      selection: scope.recovery.why,
      roots: scope.recovery.roots,
      revision: scope.recovery.revision,
    };
  const input: LandInput = {
    ctx,
    sel,
    state,
    imp,
    scope,
    writer,
    source: cfg.source,
    parallelism: opts.parallelism ?? DEFAULT_PARALLELISM,
    original,
    takeover,
    upfront,
    opts,
    verdict: source.verdict(),
    problems,
    prePlanned,
  };
  try {
    const executed = await executeWaves(input);
    if (ctx.cancellation.requested) return await landCancelled(input, executed);
    return await landTransition(input, executed);
  } catch (e) {
    // What finished is recorded on the run's own ref; the run says how it ended.
    throw await writer.fail(e);
  }
}
