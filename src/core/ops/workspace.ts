import { type Config, loadConfig } from '../config/load.js';
import { GitError, GitRepo } from '../git/repo.js';
import { type Selection, selectEnvironment } from '../resolve/select.js';
import { LocalBackend, type RefBackend } from '../state/backend.js';
import { type EnvState, readEnvironment } from '../state/read.js';
import { Cancellation } from '../util/cancel.js';
import { Exit, NylError, problem } from '../util/errors.js';

export interface WorkspaceOptions {
  cwd: string;
  /** --config FILE|DIR */
  config?: string;
  local: boolean;
  remote?: string;
}

export type ProgressEvent =
  | { type: 'unit-start'; unit: string; kind: string; at: number }
  | { type: 'unit-finish'; unit: string; kind: string; result: string; durationMs: number }
  | { type: 'note'; text: string };

/** What every operation gets: the repository, where refs live, and how to report progress. */
export interface OpContext {
  repo: GitRepo;
  backend: RefBackend;
  opts: WorkspaceOptions;
  cancellation: Cancellation;
  now: () => number;
  onEvent: (e: ProgressEvent) => void;
}

export async function openWorkspace(
  opts: WorkspaceOptions,
  extra: { cancellation?: Cancellation; onEvent?: (e: ProgressEvent) => void } = {},
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
  if (!opts.local)
    throw new NylError(
      problem('NYL-REMOTE-UNAVAILABLE', 'this build of nyl coordinates through the local repository only', {
        fix: 'pass --local to keep leases and state in this repository’s refs',
        exit: Exit.failed,
      }),
    );
  return {
    repo,
    backend: new LocalBackend(repo),
    opts,
    cancellation: extra.cancellation ?? new Cancellation(),
    now: () => Date.now(),
    onEvent: extra.onEvent ?? (() => {}),
  };
}

export interface Loaded {
  cfg: Config;
  sel: Selection;
  state: EnvState;
}

/** Configuration from the source commit, the environment's selection and its state. */
export async function loadEnvironment(ctx: OpContext, environment: string): Promise<Loaded> {
  const cfg = await loadConfig(ctx.repo, { config: ctx.opts.config, cwd: ctx.opts.cwd });
  const sel = selectEnvironment(cfg, environment);
  const state = await readEnvironment(ctx.repo, ctx.backend, sel.prefix, environment);
  return { cfg, sel, state };
}
