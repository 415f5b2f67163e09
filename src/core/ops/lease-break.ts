import type { LeaseDoc } from '../state/documents.js';
import { FILES } from '../state/documents.js';
import { currentHolder, holderText, leaseVerdict } from '../state/lease.js';
import { prettyJson } from '../util/canonical.js';
import { Exit, NylError, problem } from '../util/errors.js';
import { isoTime } from '../util/time.js';
import type { OpReport } from './report.js';
import { loadEnvironment, type OpContext } from './workspace.js';

/**
 * Declares the lease's holder gone: a new lease commit in state `broken` naming who broke it and
 * why. The holder, if alive, can no longer write state; only an importer takes the lease over.
 */
export async function leaseBreak(ctx: OpContext, opts: { environment: string; reason: string }): Promise<OpReport> {
  const env = opts.environment;
  const { state } = await loadEnvironment(ctx, env);
  const v = leaseVerdict(state, ctx.now());
  const base = { operation: 'lease-break', environment: env };
  if (v.kind === 'free')
    return {
      ...base,
      outcome: 'nothing to break',
      facts: [['lease', state.lease ? state.lease.state : 'none']],
      problems: [],
      exit: Exit.ok,
    };
  if (v.kind === 'broken')
    return { ...base, outcome: 'already broken', facts: [['broken', `run ${v.run}`]], problems: [], exit: Exit.ok };
  // The lease ref may be gone while a run ref holds the environment: rebuild the lease from it.
  const run = state.runs.get(v.run);
  const held: LeaseDoc =
    state.lease && state.lease.run === v.run
      ? state.lease
      : {
          schema: 'nyl.lease/v1',
          environment: env,
          state: 'held',
          run: v.run,
          operation: run?.record?.operation ?? 'unknown',
          holder: run?.record?.holder ?? currentHolder(),
          acquiredAt: run?.record?.startedAt ?? isoTime(ctx.now()),
          renewedAt: run?.record?.updatedAt ?? isoTime(ctx.now()),
          deadline: run?.record?.deadline ?? isoTime(ctx.now()),
        };
  const who = await ctx.repo.signature();
  const broken: LeaseDoc = {
    ...held,
    state: 'broken',
    broken: { at: isoTime(ctx.now()), by: `${who.name} <${who.email}>`, reason: opts.reason },
  };
  const batch = ctx.repo.batch();
  const tree = batch.tree(new Map([[FILES.lease, Buffer.from(prettyJson(broken))]]));
  const commit = batch.commit({
    tree,
    parents: state.tips.lease ? [state.tips.lease] : [],
    author: who,
    message: `nyl: break lease ${env} of run ${v.run}\n\nreason: ${opts.reason}\n`,
  });
  await batch.flush();
  if (!(await ctx.backend.update([{ ref: state.refs.lease, old: state.tips.lease, new: commit }])))
    throw new NylError(
      problem('NYL-LEASE-HELD', `the lease of ${env} changed while breaking it`, {
        exit: Exit.refused,
        fix: `run \`nyl status -e ${env}\` and break it again if its holder is still gone`,
      }),
    );
  return {
    ...base,
    outcome: 'done',
    facts: [['broken', `run ${v.run}`]],
    problems: [
      problem(
        'NYL-LEASE-HELD',
        `the lease of run ${v.run} by ${holderText(held.holder)} was broken; if that run is still alive it may still cause effects, but it can no longer write state`,
        {
          severity: 'warning',
          exit: Exit.ok,
          fix: 'make sure the runner is gone; units it was executing become uncertain at the next run',
        },
      ),
    ],
    exit: Exit.ok,
  };
}
