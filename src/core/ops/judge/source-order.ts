import type { GitRepo } from '../../git/repo.js';
import type { RefBackend } from '../../state/backend.js';
import { Exit, NylError, type Problem, problem } from '../../util/errors.js';

/**
 * Where a reconcile's source commit stands against the environment's recorded source: GitHub
 * runs queued jobs of a concurrency group (`queue: max`) and re-runs of old workflows in no
 * guaranteed order, so an older commit may come after a newer one. Older: an ancestor of the
 * recorded one. Diverged: neither ancestor nor descendant. Unknown: the history needed to tell is
 * not in this clone and could not be fetched.
 */
export type SourceOrder =
  | { kind: 'first' | 'same' | 'newer' }
  | { kind: 'older' | 'diverged'; recorded: string }
  | { kind: 'unknown'; recorded: string; why: string };

const DAY = 86_400_000;

export async function sourceOrder(
  repo: GitRepo,
  backend: RefBackend,
  source: string,
  recorded: string | undefined,
): Promise<SourceOrder> {
  if (!recorded) return { kind: 'first' };
  if (recorded === source) return { kind: 'same' };
  const shallow = await repo.isShallow();
  // Not in this clone (a shallow checkout, another branch): fetch it, then enough history to link them.
  if (!(await repo.readCommit(recorded)) && !(await backend.fetchCommits?.([recorded], shallow ? { depth: 1 } : {})))
    return {
      kind: 'unknown',
      recorded,
      why: `the recorded source ${recorded} is not in this clone and could not be fetched`,
    };
  const [ours, theirs] = await Promise.all([repo.readCommit(source), repo.readCommit(recorded)]);
  if (!ours || !theirs) return { kind: 'unknown', recorded, why: `commit ${ours ? recorded : source} cannot be read` };
  if (shallow) {
    const since = Math.min(ours.time, theirs.time) - DAY;
    if (!(await backend.fetchCommits?.([source, recorded], { since })))
      return {
        kind: 'unknown',
        recorded,
        why: 'this clone is shallow and the history since both commits could not be fetched',
      };
  }
  const relation = await repo.relation(source, recorded);
  if (relation === 'ancestor') return { kind: 'older', recorded };
  if (relation === 'descendant') return { kind: 'newer' };
  return { kind: 'diverged', recorded };
}

/** What a reconcile does about its source's place: go on (with warnings), or stop as superseded. */
export interface SourceVerdict {
  superseded?: { source: string; recorded: string; problem: Problem };
  /** With --allow-older-source: recorded in the transition. */
  olderSource?: { recorded: string };
  problems: Problem[];
}

/**
 * A source older than the recorded one is not applied (NYL-SOURCE-OLDER, exit 0: a superseded
 * queued job is no failure) unless asked for on purpose; a diverged one is applied with a warning
 * (refused under `sourceOrder: strict`); one whose place cannot be told is applied, saying so.
 */
export async function judgeSource(
  repo: GitRepo,
  backend: RefBackend,
  w: { environment: string; source: string; recorded: string | undefined; strict: boolean; allowOlder: boolean },
): Promise<SourceVerdict> {
  const env = w.environment;
  const order = await sourceOrder(repo, backend, w.source, w.recorded);
  const again = `\`nyl reconcile -e ${env} --allow-older-source --reason <text>\``;
  if (order.kind === 'older' && !w.allowOlder)
    return {
      superseded: {
        source: w.source,
        recorded: order.recorded,
        problem: problem(
          'NYL-SOURCE-OLDER',
          `source ${w.source} is older than ${order.recorded}, which ${env} was last reconciled from: it is not applied, and nothing was executed`,
          {
            severity: 'warning',
            subject: env,
            exit: Exit.ok,
            fix: `nothing to do: a newer configuration was applied after this commit; to apply this one on purpose, ${again}`,
          },
        ),
      },
      problems: [],
    };
  if (order.kind === 'older')
    return {
      olderSource: { recorded: order.recorded },
      problems: [
        problem(
          'NYL-SOURCE-OLDER',
          `source ${w.source} is older than ${order.recorded}, which ${env} was last reconciled from: applied on purpose (--allow-older-source)`,
          { severity: 'warning', subject: env, exit: Exit.ok, fix: 'the transition records who asked and why' },
        ),
      ],
    };
  if (order.kind === 'diverged') {
    const what = `source ${w.source} and ${order.recorded}, which ${env} was last reconciled from, have diverged (neither contains the other)`;
    if (w.strict && !w.allowOlder)
      throw new NylError(
        problem('NYL-SOURCE-DIVERGED', `${what}: refused (sourceOrder: strict); nothing was executed`, {
          subject: env,
          exit: Exit.refused,
          fix: `reconcile a commit that contains ${order.recorded} (merge it), or apply this one on purpose: ${again}`,
        }),
      );
    // Under strict order a diverged source goes through only on purpose: recorded as such.
    const onPurpose = w.strict && w.allowOlder;
    return {
      ...(onPurpose ? { olderSource: { recorded: order.recorded } } : {}),
      problems: [
        problem(
          'NYL-SOURCE-DIVERGED',
          `${what}: ${onPurpose ? 'applied on purpose (--allow-older-source)' : 'it is applied as the newest configuration'}`,
          {
            severity: 'warning',
            subject: env,
            exit: Exit.ok,
            fix: onPurpose
              ? 'the transition records who asked and why'
              : `make sure it holds what ${order.recorded} applied (merge it), or set sourceOrder: strict on the Environment to refuse diverged sources`,
          },
        ),
      ],
    };
  }
  if (order.kind === 'unknown')
    return {
      problems: [
        problem(
          'NYL-SOURCE-UNKNOWN',
          `whether source ${w.source} is older than ${order.recorded}, which ${env} was last reconciled from, could not be told: ${order.why}; it is applied`,
          {
            severity: 'warning',
            subject: env,
            exit: Exit.ok,
            fix: 'give the job the history (actions/checkout with fetch-depth: 0) so nyl can tell an older commit from a newer one',
          },
        ),
      ],
    };
  return { problems: [] };
}
