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

type Done = { loaded: Loaded; problems: Problem[] };
type HeldJob = { job: GithubJob; state: JobState };

/**
 * Reads the environment until its lease can be gone on with, for at most --wait-lease; without
 * it, a held lease is NYL-LEASE-HELD at once. A poll lists the lease and run refs alone (one
 * request, `poll.ts`); the environment is read again only once they changed. Polls come
 * 0.48 a second on average, at most, densest when the holder's past says it is likely to finish
 * (`schedule.ts`, `expect.ts`). Returns the state to go on with and the
 * NYL-CLOCK-SKEW warnings met on the way.
 */
export async function waitForLease(ctx: OpContext, loaded: Loaded, opts: LeaseWaitOptions = {}): Promise<Done> {
  const w = new LeaseWait(ctx, loaded, opts);
  try {
    for (;;) {
      const done = await w.step();
      if (done) return done;
    }
  } finally {
    w.close();
  }
}

/** One wait for a lease: what was read last, what was learnt of the holder, the polls. */
class LeaseWait {
  private readonly env: string;
  private readonly accept: (v: LeaseVerdict) => boolean;
  private readonly refusal: (v: LeaseVerdict) => NylError;
  private readonly until: number;
  private poller: LeasePoller | undefined;
  private schedule: PollSchedule | undefined;
  /** Runs seen renewing after their deadline had passed by this clock: alive, whatever the times say. */
  private readonly alive = new Set<string>();
  private readonly problems: Problem[] = [];
  private readonly jobs = new Map<string, { at: number; state: JobState }>();
  private told = false;

  constructor(
    private readonly ctx: OpContext,
    private current: Loaded,
    private readonly opts: LeaseWaitOptions,
  ) {
    this.env = current.sel.environment;
    this.accept = opts.accept ?? ((v: LeaseVerdict) => v.kind !== 'held');
    this.refusal =
      opts.refusal ??
      ((v: LeaseVerdict) => new NylError(leaseHeldProblem(this.env, v as Extract<LeaseVerdict, { kind: 'held' }>)));
    this.until = ctx.now() + (ctx.opts.waitLeaseMs ?? 0);
  }

  close(): void {
    this.poller?.close();
  }

  /** One look at the lease: go on (returned), wait and look again (undefined), or refuse (thrown). */
  async step(): Promise<Done | undefined> {
    const seen = leaseVerdict(this.current.state, this.ctx.now());
    const job = await this.jobOf(seen);
    // A completed GitHub job can no longer write: an importer breaks its lease and takes over.
    if (job?.state.kind === 'completed' && this.opts.takeover) return this.breakCompleted(seen, job);
    // A job still running holds its lease whatever its deadline says.
    const running = job?.state.kind === 'running' && seen.kind === 'expired';
    const v =
      seen.kind === 'expired' && (this.alive.has(seen.run) || running) ? asHeld(this.current.state, seen) : seen;
    if (v.kind === 'expired' && this.opts.takeover && this.accept(v)) return this.confirmExpired(v);
    if (this.accept(v)) return { loaded: this.current, problems: this.problems };
    if (this.ctx.now() >= this.until || this.ctx.cancellation.requested) throw this.refused(v, job);
    await this.sleepUntilChange(v);
    return undefined;
  }

  private async reread(): Promise<void> {
    this.current = { ...this.current, ...(await readState(this.ctx, this.current.sel, this.current.tolerate)) };
  }

  /** What the Actions API says of the holder's job (asked at most every JOB_ASK_MS). */
  private async jobOf(v: LeaseVerdict): Promise<HeldJob | undefined> {
    const job = holderJob(this.current.state, v);
    if (!job || (v.kind !== 'held' && v.kind !== 'expired')) return undefined;
    const known = this.jobs.get(v.run);
    if (known && this.ctx.now() - known.at < JOB_ASK_MS) return { job, state: known.state };
    const state = await this.ctx.jobLookup(job).catch((e: unknown): JobState => ({ kind: 'unknown', why: String(e) }));
    this.jobs.set(v.run, { at: this.ctx.now(), state });
    return { job, state };
  }

  private async breakCompleted(seen: LeaseVerdict, job: HeldJob): Promise<undefined> {
    const s = job.state as Extract<JobState, { kind: 'completed' }>;
    const reason = `GitHub job ${s.url} completed (${s.conclusion})`;
    this.ctx.onEvent({ type: 'note', text: `the lease of ${this.env} is held by ${reason}: breaking it` });
    await writeBreak(this.ctx, this.current.state, seen, reason);
    await this.reread();
    return undefined;
  }

  /** An expired lease an importer may take over, once its holder is found silent; a holder that renews is alive. */
  private async confirmExpired(v: Extract<LeaseVerdict, { kind: 'expired' }>): Promise<Done | undefined> {
    const watched = await watchForSilence(this.ctx, this.current, v);
    this.current = watched.loaded;
    if (watched.silent) return { loaded: this.current, problems: this.problems };
    // Cancelled while watching: nothing was seen either way.
    if (watched.cancelled)
      throw new NylError([...this.refusal(asHeld(this.current.state, v)).problems, ...this.problems]);
    const again = leaseVerdict(this.current.state, this.ctx.now());
    if (again.kind === 'expired' && again.run === v.run) {
      this.alive.add(v.run);
      this.problems.push(
        skewProblem(
          this.env,
          `run ${v.run} renewed its lease although its deadline ${withOffset(v.deadline)} had passed by this machine's clock (${withOffset(isoTime(this.ctx.now()))})`,
        ),
      );
    }
    return undefined;
  }

  /** The refusal, with what the API said of the holder's job, in the operator's terms. */
  private refused(v: LeaseVerdict, job: HeldJob | undefined): NylError {
    const e = this.refusal(v);
    const first = e.problems[0];
    if (job && first && (first.code === 'NYL-LEASE-HELD' || first.code === 'NYL-RUN-UNIMPORTED'))
      e.problems[0] = {
        ...first,
        message: `${first.message}\n${jobNote(job.job, job.state)}${
          job.state.kind === 'completed'
            ? `: the next \`nyl reconcile -e ${this.env}\` or \`nyl recover -e ${this.env}\` breaks its lease and imports it`
            : ''
        }`,
      };
    return new NylError([...e.problems, ...this.problems, ...clockSkewProblems(this.current.state, this.ctx.now())]);
  }

  /** Polls the lease and run refs on the schedule; the environment is read again once they moved. */
  private async sleepUntilChange(v: LeaseVerdict): Promise<void> {
    const { ctx } = this;
    if (!this.told && v.kind === 'held') {
      ctx.onEvent({ type: 'note', text: `waiting for the lease of ${this.env} (run ${v.run})` });
      this.told = true;
    }
    this.poller ??= await LeasePoller.open(ctx, this.current.sel.prefix, this.env);
    this.schedule ??= new PollSchedule(ctx.now());
    const { poller, schedule } = this;
    schedule.expectRelease(v.kind === 'held' ? expectedRelease(this.current.state, v.run) : undefined);
    backoffStats.waits++;
    const woken = await poller.sleep(
      Math.min(schedule.next(ctx.now(), poller.cost), Math.max(0, this.until - ctx.now())),
    );
    if (ctx.cancellation.requested) return;
    schedule.polled(ctx.now(), woken ? 1 : poller.cost);
    const tips = woken ? undefined : await poller.poll();
    if (tips && sameLeaseTips(this.current.state, tips)) return;
    // The read after a poll that saw the lease move is a request too: it is paid from the same
    // budget (every write of the holder renews its lease, so each one costs the waiter a read).
    if (tips) schedule.polled(ctx.now(), 1);
    await this.reread();
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
