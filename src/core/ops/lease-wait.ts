import { DEFAULT_HEARTBEAT_MS } from '../state/heartbeat.js';
import { asHeld, clockSkewProblems, type LeaseVerdict, leaseVerdict, skewProblem } from '../state/lease.js';
import type { EnvState } from '../state/read.js';
import { Backoff } from '../util/backoff.js';
import { NylError, type Problem } from '../util/errors.js';
import { isoTime, withOffset } from '../util/time.js';
import { leaseHeldProblem } from './lease-problems.js';
import { type Loaded, type OpContext, readState } from './workspace.js';

export interface LeaseWaitOptions {
  /** Verdicts this operation may go on with (default: anything but held). */
  accept?: (v: LeaseVerdict) => boolean;
  refusal?: (v: LeaseVerdict) => NylError;
  /** Before going on with an expired lease (a takeover), confirm that its holder is silent. */
  confirmExpired?: boolean;
}

/**
 * Reads the environment until its lease can be gone on with, for at most --wait-lease; without
 * it, a held lease is NYL-LEASE-HELD at once. Each poll is one fetch of the environment's refs,
 * backing off from 250 ms to 5 s. Returns the state to go on with and the NYL-CLOCK-SKEW warnings
 * met on the way.
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
  const backoff = new Backoff();
  /** Runs seen renewing after their deadline had passed by this clock: alive, whatever the times say. */
  const alive = new Set<string>();
  const problems: Problem[] = [];
  let current = loaded;
  let told = false;
  for (;;) {
    const seen = leaseVerdict(current.state, ctx.now());
    const v = seen.kind === 'expired' && alive.has(seen.run) ? asHeld(current.state, seen) : seen;
    if (v.kind === 'expired' && opts.confirmExpired && accept(v)) {
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
      throw new NylError([...e.problems, ...problems, ...clockSkewProblems(current.state, ctx.now())]);
    }
    if (!told && v.kind === 'held') {
      ctx.onEvent({ type: 'note', text: `waiting for the lease of ${env} (run ${v.run})` });
      told = true;
    }
    await backoff.wait({ until, now: ctx.now, cancellation: ctx.cancellation });
    current = { ...current, ...(await readState(ctx, current.sel, current.tolerate)) };
  }
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
