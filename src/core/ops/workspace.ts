import { type Config, loadConfig } from '../config/load.js';
import { GitError, GitRepo } from '../git/repo.js';
import { type Selection, selectEnvironment } from '../resolve/select.js';
import { LocalBackend, type RefBackend } from '../state/backend.js';
import { type LeaseVerdict, leaseVerdict } from '../state/lease.js';
import { type EnvState, readEnvironment } from '../state/read.js';
import { RemoteBackend, unpublishedLocalWork } from '../state/remote-backend.js';
import { Cancellation } from '../util/cancel.js';
import { Exit, NylError, problem } from '../util/errors.js';
import { leaseHeldProblem } from './lease-problems.js';

export interface WorkspaceOptions {
  cwd: string;
  /** --config FILE|DIR */
  config?: string;
  local: boolean;
  /** Remote holding the state refs (default origin). */
  remote?: string;
  /** --wait-lease: how long to wait for a held lease, in ms. */
  waitLeaseMs?: number;
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
  return {
    repo,
    backend: opts.local ? new LocalBackend(repo) : new RemoteBackend(repo, opts.remote ?? 'origin'),
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
  /** Local refs holding --local work the remote lacks (remote mode only). */
  unpublished: string[];
  /** The remote, in remote mode. */
  remote?: string;
}

/** Configuration from the source commit, the environment's selection and its state. */
export async function loadEnvironment(ctx: OpContext, environment: string): Promise<Loaded> {
  const cfg = await loadConfig(ctx.repo, { config: ctx.opts.config, cwd: ctx.opts.cwd });
  const sel = selectEnvironment(cfg, environment);
  return {
    cfg,
    sel,
    ...(await readState(ctx, sel)),
    remote: ctx.opts.local ? undefined : (ctx.opts.remote ?? 'origin'),
  };
}

export async function readState(ctx: OpContext, sel: Selection): Promise<{ state: EnvState; unpublished: string[] }> {
  const state = await readEnvironment(ctx.repo, ctx.backend, sel.prefix, sel.environment);
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

/**
 * Reads the environment until its lease is not held, for at most --wait-lease; without it, a
 * held lease is NYL-LEASE-HELD at once. Each poll is one fetch of the environment's refs.
 */
export async function waitForLease(
  ctx: OpContext,
  loaded: Loaded,
  accept: (v: LeaseVerdict) => boolean = (v) => v.kind !== 'held',
  refusal: (v: LeaseVerdict) => NylError = (v) =>
    new NylError(leaseHeldProblem(loaded.sel.environment, v as Extract<LeaseVerdict, { kind: 'held' }>)),
): Promise<Loaded> {
  const until = ctx.now() + (ctx.opts.waitLeaseMs ?? 0);
  let current = loaded;
  let delay = 250;
  let told = false;
  for (;;) {
    const v = leaseVerdict(current.state, ctx.now());
    if (accept(v)) return current;
    if (ctx.now() >= until || ctx.cancellation.requested) throw refusal(v);
    if (!told && v.kind === 'held') {
      ctx.onEvent({ type: 'note', text: `waiting for the lease of ${loaded.sel.environment} (run ${v.run})` });
      told = true;
    }
    await new Promise((r) => setTimeout(r, Math.min(delay, Math.max(0, until - ctx.now()))));
    delay = Math.min(delay * 2, 5_000);
    current = { ...current, ...(await readState(ctx, current.sel)) };
  }
}
