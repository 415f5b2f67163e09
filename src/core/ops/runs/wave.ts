import { liveTail } from '../../drivers/live-log.js';
import { type DesiredUnit, timeoutMs } from '../../resolve/desired.js';
import { GRACE_MS } from '../../state/lease.js';
import { moveTo } from '../../state/run-record.js';
import { mapPool } from '../../util/pool.js';
import { isoTime } from '../../util/time.js';
import { desiredBody } from '../transition/documents.js';
import type { OpContext } from '../workspace/workspace.js';
import type { RunWriter } from './writer.js';

/** Marks a unit running while `fn` runs (an attempt, a destroy): the heartbeat reports it. */
export type Track = <T>(fn: () => Promise<T>) => Promise<T>;

/** What a wave does with each of its units: run it, or say it never started. */
export interface WaveUnits {
  run: (d: DesiredUnit, track: Track) => Promise<void>;
  /** A cancel came, or the heartbeat found the lease lost, before it started. */
  skip: (d: DesiredUnit) => void;
}

/**
 * One wave of a run (reconcile's waves, teardown's in reverse): the run record moves to it and its
 * units' documents are recorded on the run ref by one write (the first takes the lease) before
 * any starts; then they run, `parallelism` at a time, each checkpointed by the writes after it,
 * the heartbeat carrying the ones running. A unit still waiting for a slot when a cancel comes,
 * or when the heartbeat finds the lease lost, never starts.
 */
export async function runWave(
  ctx: OpContext,
  writer: RunWriter,
  wave: { index: number; docs: DesiredUnit[]; parallelism: number },
  units: WaveUnits,
): Promise<void> {
  const names = wave.docs.map((d) => d.name);
  moveTo(writer.record, 'executing', ctx.now(), { index: wave.index, units: names });
  Object.assign(writer.record, { phase: 'wave', wave: wave.index, executing: names });
  await writer.session.announce(
    wave.docs.map((d) => [d.name, desiredBody(d)]),
    () => writer.write(Math.max(...wave.docs.map(timeoutMs)) + GRACE_MS),
  );
  const running = new Map<string, number>();
  const track =
    (name: string): Track =>
    (fn) => {
      running.set(name, ctx.now());
      return fn().finally(() => running.delete(name));
    };
  writer.session.progress = () => progressOf(running, ctx.now());
  await mapPool(wave.docs, wave.parallelism, async (d) => {
    if (ctx.cancellation.requested || writer.session.heartbeatFailure !== undefined) return units.skip(d);
    await units.run(d, track(d.name));
  });
  await writer.session.settleHeartbeat();
  writer.session.progress = undefined;
  writer.record.executing = [];
}

/** The units running now, for the heartbeat: since when, how long, and their output so far. */
function progressOf(running: Map<string, number>, now: number) {
  const out: Record<string, { startedAt: string; elapsedMs: number }> = {};
  const tails = new Map<string, string>();
  for (const [unit, since] of running) {
    out[unit] = { startedAt: isoTime(since), elapsedMs: now - since };
    const tail = liveTail(unit);
    if (tail !== undefined) tails.set(unit, tail);
  }
  return { running: out, tails };
}
