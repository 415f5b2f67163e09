import type { ObservedUnit } from '../../state/documents.js';
import { currentHolder } from '../../state/lease.js';
import type { EnvState } from '../../state/read.js';
import { RunSession } from '../../state/run-session.js';
import { uuid7 } from '../../util/uuid7.js';
import { desiredFilesWithout, observedFiles } from '../transition/documents.js';
import type { OpContext } from '../workspace/workspace.js';

/**
 * One write for an operation that is not a run (recover --unit, verify, hold, resume, state
 * forget): observed documents changed or removed (null), in one commit checked against the
 * lease, which it renews and releases in the same push. Returns the new observed tip.
 */
export async function writeObserved(
  ctx: OpContext,
  state: EnvState,
  operation: string,
  changed: Map<string, ObservedUnit | null>,
  message: string,
  opts: { removeDesired?: string[]; consumed?: { id: string; ref: string; tip: string; retire: boolean }[] } = {},
): Promise<{ observed?: string; desired?: string }> {
  const files = observedFiles(state, changed);
  const updates = [{ ref: state.refs.observed, old: state.tips.observed, files, message }];
  if (opts.removeDesired?.length)
    updates.push({
      ref: state.refs.desired,
      old: state.tips.desired,
      files: desiredFilesWithout(state, opts.removeDesired),
      message,
    });
  const session = new RunSession(
    ctx.repo,
    ctx.backend,
    state,
    uuid7(),
    operation,
    currentHolder(),
    await ctx.repo.signature(),
  );
  session.prepare(ctx.now());
  const { tips } = await session.land(updates, ctx.now(), opts.consumed ?? []);
  return { observed: tips.get(state.refs.observed), desired: tips.get(state.refs.desired) };
}

export async function operatorIdentity(ctx: OpContext): Promise<string> {
  const s = await ctx.repo.signature();
  return `${s.name} <${s.email}>`;
}
