import { loadConfig } from '../../config/load.js';
import type { Config } from '../../config/model.js';
import { isSafeName } from '../../config/schema.js';
import { GitError, GitRepo } from '../../git/repo.js';
import { DEFAULT_PREFIX, expandFrom, type Selection, selectEnvironment } from '../../resolve/select.js';
import { withSources } from '../../resolve/unit-sources.js';
import { LocalBackend, type RefBackend } from '../../state/backend.js';
import { type EnvState, readEnvironment, type Unreadable } from '../../state/read.js';
import { DEFAULT_NETWORK_TIMEOUT_MS, RemoteBackend, unpublishedLocalWork } from '../../state/remote-backend.js';
import { Cancellation } from '../../util/cancel.js';
import { Exit, NylError, problem } from '../../util/errors.js';
import { masker } from '../../util/mask.js';
import { type JobLookup, noLookup } from '../lease/github-job.js';
import { refuseUnreadable, type Where } from './unreadable.js';

export interface WorkspaceOptions {
  cwd: string;
  /** --config FILE|DIR */
  config?: string;
  local: boolean;
  /** Remote holding the state refs (default origin). */
  remote?: string;
  /** --wait-lease: how long to wait for a held lease, in ms. */
  waitLeaseMs?: number;
  /** --network-timeout: the bound of one call to the remote, in ms (default 60 s). */
  networkTimeoutMs?: number;
}

export type ProgressEvent =
  | { type: 'unit-start'; unit: string; kind: string; at: number }
  | { type: 'unit-finish'; unit: string; kind: string; result: string; durationMs: number }
  | { type: 'note'; text: string }
  /** A run took the environment's lease: it will land a transition, or end failed or cancelled. */
  | {
      type: 'lease-taken';
      operation: 'reconcile' | 'teardown';
      environment: string;
      run: string;
      source?: string;
      /** The Environment's `production`. */
      production?: boolean;
    }
  /** A unit's attempt failed and another one starts after `delayMs` (`retries`); `text` says so. */
  | { type: 'unit-retry'; unit: string; kind: string; attempt: number; of: number; delayMs: number; text: string };

/** What every operation gets: the repository, where refs live, and how to report progress. */
export interface OpContext {
  repo: GitRepo;
  backend: RefBackend;
  opts: WorkspaceOptions;
  cancellation: Cancellation;
  now: () => number;
  onEvent: (e: ProgressEvent) => void;
  /** Asks whether a lease holder's GitHub job finished (the faces provide it; none: it cannot be told). */
  jobLookup: JobLookup;
}

export async function openWorkspace(
  opts: WorkspaceOptions,
  extra: { cancellation?: Cancellation; onEvent?: (e: ProgressEvent) => void; jobLookup?: JobLookup } = {},
): Promise<OpContext> {
  let repo: GitRepo;
  try {
    repo = await GitRepo.open(opts.cwd);
  } catch (e) {
    if (e instanceof GitError)
      throw new NylError(
        problem('NYL-NOT-A-REPOSITORY', `${opts.cwd} is not inside a git repository`, {
          fix: 'run nyl from a clone of the repository that holds nyl.yaml',
        }),
      );
    throw e;
  }
  // No secret reaches a ref: every blob and commit message goes through the masking.
  repo.textFilter = masker;
  const cancellation = extra.cancellation ?? new Cancellation();
  return {
    repo,
    backend: opts.local
      ? new LocalBackend(repo)
      : new RemoteBackend(repo, opts.remote ?? 'origin', {
          timeoutMs: opts.networkTimeoutMs ?? DEFAULT_NETWORK_TIMEOUT_MS,
          cancellation,
        }),
    opts,
    cancellation,
    now: () => Date.now(),
    onEvent: extra.onEvent ?? (() => {}),
    jobLookup: extra.jobLookup ?? noLookup('no token to ask the Actions API with (set GITHUB_TOKEN)'),
  };
}

export interface Loaded {
  cfg: Config;
  sel: Selection;
  state: EnvState;
  /** Local refs holding --local work the remote lacks (remote mode only). */
  unpublished: string[];
  /** The remote, in remote mode. */
  remote?: string;
  /** State that could not be read and that this operation may still go on with (default: none). */
  tolerate: (u: Unreadable) => boolean;
}

/** Where an environment's state lives, for the commands fixes print. */
export function whereOf(ctx: OpContext, environment: string): Where {
  return { environment, local: ctx.opts.local, remote: ctx.opts.remote ?? 'origin' };
}

/**
 * Configuration from the source commit, the environment's selection and its state. State that
 * cannot be read is refused (NYL-STATE-UNREADABLE) unless `tolerate` allows it.
 */
export async function loadEnvironment(
  ctx: OpContext,
  environment: string,
  tolerate: (u: Unreadable) => boolean = () => false,
  /** `files: 'lenient'`: a path naming nothing in the commit is left to resolution (a unit it makes invalid), not refused: for the ways out (lease break, state show/forget). */
  opts: { files?: 'strict' | 'lenient' } = {},
): Promise<Loaded> {
  const cfg = await loadConfig(ctx.repo, {
    config: ctx.opts.config,
    cwd: ctx.opts.cwd,
    beforeParse: (files) => prefetchState(ctx, environment, files),
  });
  const sel = await withSources(ctx.repo, cfg, selectEnvironment(cfg, environment), opts.files ?? 'strict');
  const read = await readState(ctx, sel, tolerate);
  expandFrom(sel, (u) => read.state.observed.get(u)?.receipt?.outputs);
  return {
    cfg,
    sel,
    ...read,
    remote: ctx.opts.local ? undefined : (ctx.opts.remote ?? 'origin'),
    tolerate,
  };
}

/**
 * Starts the fetch of the environment's state while its configuration is parsed (on a runner the
 * fetch is the round trip, the parse the CPU time: they overlap). It guesses the ref prefix: the
 * default one, unless a file sets one of its own; a wrong guess costs one fetch, nothing else (the
 * read takes the answer only for the prefix it asks for). Names that are not an environment's
 * never reach a refspec.
 */
function prefetchState(ctx: OpContext, environment: string, files: { text: string }[]): void {
  if (!ctx.backend.prefetch || !isSafeName(environment)) return;
  if (files.some((f) => f.text.includes('coordinationRefPrefix'))) return;
  ctx.backend.prefetch(`${DEFAULT_PREFIX}/${environment}`);
}

export async function readState(
  ctx: OpContext,
  sel: Selection,
  tolerate: (u: Unreadable) => boolean,
): Promise<{ state: EnvState; unpublished: string[] }> {
  const state = await readEnvironment(ctx.repo, ctx.backend, sel.prefix, sel.environment);
  refuseUnreadable(state, whereOf(ctx, sel.environment), tolerate);
  const b = ctx.backend;
  const unpublished =
    b instanceof RemoteBackend ? await unpublishedLocalWork(ctx.repo, state.allTips, b.localTips) : [];
  return { state, unpublished };
}

/** An online write would leave --local receipts and checkpoints behind: refuse it. */
export function refuseUnpublished(loaded: Loaded): void {
  if (!loaded.unpublished.length) return;
  const env = loaded.sel.environment;
  throw new NylError(
    problem(
      'NYL-LOCAL-UNPUBLISHED',
      `this repository holds state of ${env} written with --local that the remote does not have: ${loaded.unpublished.join(', ')}`,
      {
        subject: env,
        exit: Exit.refused,
        fix: `keep working with --local, or publish it (\`git push ${loaded.remote ?? 'origin'} '${loaded.sel.prefix}/${env}/*:${loaded.sel.prefix}/${env}/*'\` when the remote has no state of its own), or set it aside (\`git update-ref -d <ref>\`) once it is recorded elsewhere`,
      },
    ),
  );
}
