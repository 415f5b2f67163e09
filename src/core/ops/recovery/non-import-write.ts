import type { LeaseVerdict } from '../../state/lease.js';
import { Exit, NylError, problem } from '../../util/errors.js';
import { leaseHeldProblem } from '../lease/problems.js';
import { waitForLease } from '../lease/wait.js';
import type { Loaded, OpContext } from '../workspace/workspace.js';

/** The seed's NYL-LEASE-BROKEN: a state write that is not an import waits for the import. */
export function leaseBrokenError(env: string, run: string): NylError {
  return new NylError(
    problem('NYL-LEASE-BROKEN', `the lease of ${env} was broken and its run ${run} has not been imported yet`, {
      exit: Exit.refused,
      fix: `run \`nyl recover -e ${env}\` to import it (a \`nyl reconcile\` or \`nyl teardown\` of ${env} imports it too), then run this command again`,
    }),
  );
}

/**
 * Writes that are not imports (recover --unit, and later verify, hold, state): the lease must be
 * free and no dead run left unimported; under --wait-lease they wait for that.
 */
export async function waitForNonImportWrite(ctx: OpContext, loaded: Loaded): Promise<Loaded> {
  const env = loaded.sel.environment;
  const unimported = (l: Loaded) => [...l.state.runs.keys()];
  let current = loaded;
  current = (
    await waitForLease(ctx, current, {
      accept: (v) => v.kind !== 'held' && v.kind !== 'broken',
      refusal: (v: LeaseVerdict) =>
        v.kind === 'broken'
          ? leaseBrokenError(env, v.run)
          : new NylError(leaseHeldProblem(env, v as Extract<LeaseVerdict, { kind: 'held' }>)),
    })
  ).loaded;
  const left = unimported(current);
  const rec = left.length ? current.state.runs.get(left[0] as string)?.record : undefined;
  if (left.length)
    throw new NylError(
      problem(
        'NYL-RUN-UNIMPORTED',
        rec && rec.phase !== 'finished'
          ? `run ${left[0]} of ${env} has not finished and its deadline ${rec.deadline} passed: if its runner is gone, it is imported by the next reconcile or recover; if it is alive, wait for it`
          : `run ${left[0]} of ${env} ended without landing its results and has not been imported yet`,
        {
          exit: Exit.uncertain,
          fix: `run \`nyl recover -e ${env} --reason <text>\` to import it (or \`nyl reconcile -e ${env}\`), then run this command again`,
        },
      ),
    );
  return current;
}
