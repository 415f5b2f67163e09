import type { GithubJob } from '../../state/documents.js';
import { DEFAULT_HEARTBEAT_MS } from '../../state/heartbeat.js';
import { asHeld, clockSkewProblems, type LeaseVerdict, leaseVerdict, skewProblem } from '../../state/lease.js';
import type { EnvState } from '../../state/read.js';
import { backoffStats } from '../../util/backoff.js';
import { NylError, type Problem } from '../../util/errors.js';
import { isoTime, withOffset } from '../../util/time.js';
import { type Loaded, type OpContext, readState } from '../workspace/workspace.js';
import { writeBreak } from './break.js';
import { expectedRelease } from './expect.js';
import { type JobState, jobNote } from './github-job.js';
import { LeasePoller, sameLeaseTips } from './poll.js';
import { leaseHeldProblem } from './problems.js';
import { PollSchedule } from './schedule.js';

export interface LeaseWaitOptions {
  /** Verdicts this operation may go on with (default: anything but held). */
  accept?: (v: LeaseVerdict) => boolean;
  refusal?: (v: LeaseVerdict) => NylError;
  /**
   * An importing operation (reconcile, teardown, `recover -e`): before going on with an expired
   * lease, confirm that its holder is silent; and a lease held by a GitHub job that has completed
   * is broken and taken over at once.
   */
  takeover?: boolean;
}

/** Between two asks about one job, while waiting (the API is not polled at the lease's pace). */
const JOB_ASK_MS = 10_000;

/**
 * Reads the environment until its lease can be gone on with, for at most --wait-lease; without
 * it, a held lease is NYL-LEASE-HELD at once. A poll lists the lease and run refs alone (one
 * request, `lease-poll.ts`); the environment is read again only once they changed. Polls come
 * 0.48 a second on average, at most, densest when the holder's past says it is likely to finish
 * (`lease-schedule.ts`, `lease-expect.ts`). Returns the state to go on with and the
 * NYL-CLOCK-SKEW warnings met on the way.
 */
export async function waitForLease(
  ctx: OpContext,
  loaded: Loaded,
  opts: LeaseWaitOptions = {},
): Promise<{ loaded: Loaded; problems: Problem[] }> {
  const env = loaded.sel.environment;
  const accept = opts.accept ?? ((v: LeaseVerdict) => v.kind !== 'held');
  const refusal =
    opts.refusal ??
    ((v: LeaseVerdict) => new NylError(leaseHeldProblem(env, v as Extract<LeaseVerdict, { kind: 'held' }>)));
  const until = ctx.now() + (ctx.opts.waitLeaseMs ?? 0);
  let poller: LeasePoller | undefined;
  let schedule: PollSchedule | undefined;
  /** Runs seen renewing after their deadline had passed by this clock: alive, whatever the times say. */
  const alive = new Set<string>();
  const problems: Problem[] = [];
  const jobs = new Map<string, { at: number; state: JobState }>();
  /** What the Actions API says of the holder's job (asked at most every JOB_ASK_MS). */
  const jobOf = async (v: LeaseVerdict): Promise<{ job: GithubJob; state: JobState } | undefined> => {
    const job = holderJob(current.state, v);
    if (!job || (v.kind !== 'held' && v.kind !== 'expired')) return undefined;
    const known = jobs.get(v.run);
    if (known && ctx.now() - known.at < JOB_ASK_MS) return { job, state: known.state };
    const state = await ctx.jobLookup(job).catch((e: unknown): JobState => ({ kind: 'unknown', why: String(e) }));
    jobs.set(v.run, { at: ctx.now(), state });
    return { job, state };
  };
  let current = loaded;
  let told = false;
  try {
    for (;;) {
      const seen = leaseVerdict(current.state, ctx.now());
      const job = await jobOf(seen);
      // A completed GitHub job can no longer write: an importer breaks its lease and takes over.
      if (job?.state.kind === 'completed' && opts.takeover) {
        const reason = `GitHub job ${job.state.url} completed (${job.state.conclusion})`;
        ctx.onEvent({ type: 'note', text: `the lease of ${env} is held by ${reason}: breaking it` });
        await writeBreak(ctx, current.state, seen, reason);
        current = { ...current, ...(await readState(ctx, current.sel, current.tolerate)) };
        continue;
      }
      // A job still running holds its lease whatever its deadline says.
      const running = job?.state.kind === 'running' && seen.kind === 'expired';
      const v = seen.kind === 'expired' && (alive.has(seen.run) || running) ? asHeld(current.state, seen) : seen;
      if (v.kind === 'expired' && opts.takeover && accept(v)) {
        const watched = await watchForSilence(ctx, current, v);
        current = watched.loaded;
        if (watched.silent) return { loaded: current, problems };
        // Cancelled while watching: nothing was seen either way.
        if (watched.cancelled) throw new NylError([...refusal(asHeld(current.state, v)).problems, ...problems]);
        const again = leaseVerdict(current.state, ctx.now());
        if (again.kind === 'expired' && again.run === v.run) {
          alive.add(v.run);
          problems.push(
            skewProblem(
              env,
              `run ${v.run} renewed its lease although its deadline ${withOffset(v.deadline)} had passed by this machine's clock (${withOffset(isoTime(ctx.now()))})`,
            ),
          );
        }
        continue;
      }
      if (accept(v)) return { loaded: current, problems };
      if (ctx.now() >= until || ctx.cancellation.requested) {
        const e = refusal(v);
        const first = e.problems[0];
        // What the API said of the holder's job goes with the refusal, in the operator's terms.
        if (job && first && (first.code === 'NYL-LEASE-HELD' || first.code === 'NYL-RUN-UNIMPORTED'))
          e.problems[0] = {
            ...first,
            message: `${first.message}\n${jobNote(job.job, job.state)}${
              job.state.kind === 'completed'
                ? `: the next \`nyl reconcile -e ${env}\` or \`nyl recover -e ${env}\` breaks its lease and imports it`
                : ''
            }`,
          };
        throw new NylError([...e.problems, ...problems, ...clockSkewProblems(current.state, ctx.now())]);
      }
      if (!told && v.kind === 'held') {
        ctx.onEvent({ type: 'note', text: `waiting for the lease of ${env} (run ${v.run})` });
        told = true;
      }
      poller ??= await LeasePoller.open(ctx, current.sel.prefix, env);
      schedule ??= new PollSchedule(ctx.now());
      schedule.expectRelease(v.kind === 'held' ? expectedRelease(current.state, v.run) : undefined);
      backoffStats.waits++;
      const woken = await poller.sleep(Math.min(schedule.next(ctx.now(), poller.cost), Math.max(0, until - ctx.now())));
      if (ctx.cancellation.requested) continue;
      schedule.polled(ctx.now(), woken ? 1 : poller.cost);
      const tips = woken ? undefined : await poller.poll();
      if (tips && sameLeaseTips(current.state, tips)) continue;
      // The read after a poll that saw the lease move is a request too: it is paid from the same
      // budget (every write of the holder renews its lease, so each one costs the waiter a read).
      if (tips) schedule.polled(ctx.now(), 1);
      current = { ...current, ...(await readState(ctx, current.sel, current.tolerate)) };
    }
  } finally {
    poller?.close();
  }
}

/** The GitHub job a held or expired lease names (in the lease, or in its run's record). */
function holderJob(state: EnvState, v: LeaseVerdict): GithubJob | undefined {
  if (v.kind === 'held') return v.holder.github;
  if (v.kind !== 'expired') return undefined;
  const l = state.lease?.run === v.run ? state.lease : undefined;
  return l?.holder.github ?? state.runs.get(v.run)?.record?.holder.github;
}

/** The lease and the holder's run ref, whose change means the holder still writes. */
function fingerprint(state: EnvState, run: string): string {
  return `${state.tips.lease ?? ''} ${state.tips.runs.get(run) ?? ''}`;
}

/**
 * A deadline passed by this machine's clock does not prove the holder gone: clocks differ. The
 * holder renews its lease every heartbeat interval (the lease records it); so before taking over,
 * watch the lease and the holder's run ref for two intervals on this machine's monotonic clock.
 * Unchanged all along: the holder is silent. Changed: it is alive (or it just finished).
 */
async function watchForSilence(
  ctx: OpContext,
  loaded: Loaded,
  v: Extract<LeaseVerdict, { kind: 'expired' }>,
): Promise<{ silent: boolean; cancelled?: boolean; loaded: Loaded }> {
  const lease = loaded.state.lease;
  const interval = (lease?.run === v.run ? lease.heartbeatMs : undefined) ?? DEFAULT_HEARTBEAT_MS;
  const watch = 2 * interval;
  const first = fingerprint(loaded.state, v.run);
  const start = performance.now();
  ctx.onEvent({
    type: 'note',
    text: `the deadline of run ${v.run} passed (${withOffset(v.deadline)}); making sure for ${Math.round(watch / 1000)}s that it no longer renews its lease before taking over`,
  });
  let current = loaded;
  for (;;) {
    const left = watch - (performance.now() - start);
    if (left <= 0) return { silent: true, loaded: current };
    if (ctx.cancellation.requested) return { silent: false, cancelled: true, loaded: current };
    await sleep(Math.min(interval / 2, left), ctx);
    if (ctx.cancellation.requested) return { silent: false, cancelled: true, loaded: current };
    current = { ...current, ...(await readState(ctx, current.sel, current.tolerate)) };
    if (fingerprint(current.state, v.run) !== first) return { silent: false, loaded: current };
  }
}

function sleep(ms: number, ctx: OpContext): Promise<void> {
  return new Promise((resolve) => {
    let off = () => {};
    const t = setTimeout(done, ms);
    off = ctx.cancellation.onCancel(done);
    function done() {
      clearTimeout(t);
      off();
      resolve();
    }
  });
}
