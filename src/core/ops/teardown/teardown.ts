import { GRACE_MS } from '../../state/lease.js';
import { Exit, NylError, problem } from '../../util/errors.js';
import { refuseUncommitted, toolUnit } from '../judge/files-gate.js';
import { DEFAULT_PARALLELISM } from '../reconcile/options.js';
import { loadTakingOver } from '../recovery/takeover.js';
import { startRun } from '../runs/start.js';
import { LostRace, RunWriter } from '../runs/writer.js';
import type { RunReport } from '../workspace/report.js';
import type { OpContext } from '../workspace/workspace.js';
import { landTeardown } from './land.js';
import type { Teardown } from './model.js';
import { destroying, teardownTargets } from './targets.js';
import { destroyWaves } from './teardown-run.js';

/**
 * `nyl teardown -e ENV`: runs each unit's destroy in reverse dependency order, units that left
 * the configuration included, and lands one transition that drops what was torn down. A broken
 * lease's run is imported first, as a reconcile would. Phases: load and take over → what to
 * destroy → refuse files nobody committed → take the lease with the first wave → destroy wave by
 * wave → land.
 */
export async function teardown(
  ctx: OpContext,
  opts: { environment: string; parallelism?: number },
): Promise<RunReport> {
  const env = opts.environment;
  const loaded = await loadTakingOver<never>(ctx, env);
  if (loaded.stopped !== undefined) throw new Error('teardown has no gate');
  const { cfg, sel, state } = loaded;
  const docs = await teardownTargets(ctx, loaded);
  if (!docs.size && !loaded.takeover)
    return {
      operation: 'teardown',
      environment: env,
      source: cfg.source,
      rows: [],
      problems: loaded.problems,
      exit: Exit.ok,
      extra: [['teardown', 'nothing recorded']],
    };
  // A destroy runs on the working tree: its files are the commit's.
  await refuseUncommitted(ctx, sel, cfg.source, destroying(docs, state).map(toolUnit));
  const { session, record } = await startRun(
    ctx,
    loaded.original,
    loaded.verdict,
    'teardown',
    { source: cfg.source, state: 'executing', phase: 'resolution', executing: [] },
    GRACE_MS,
  );
  const writer = new RunWriter(session, record, ctx.now, 'teardown');
  const t: Teardown = {
    ctx,
    env,
    state,
    imp: loaded.imp,
    docs,
    writer,
    parallelism: opts.parallelism ?? DEFAULT_PARALLELISM,
    rows: new Map(),
    changed: new Map(),
    stopped: new Set(),
  };
  try {
    await destroyWaves(t);
    return await landTeardown(t, loaded);
  } catch (e) {
    throw await writer.fail(e instanceof LostRace ? leaseTakenFirst(env) : e);
  }
}

function leaseTakenFirst(env: string): NylError {
  return new NylError(
    problem('NYL-LEASE-HELD', `another run took the lease of ${env} first`, {
      exit: Exit.refused,
      fix: 'run again, or pass --wait-lease <duration>',
    }),
  );
}
