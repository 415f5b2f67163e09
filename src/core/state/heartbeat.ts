import { parseDuration } from '../util/duration.js';

/**
 * How often a run that holds a lease renews it, whatever it is doing (default 30 s;
 * NYL_HEARTBEAT_INTERVAL). The lease records it: a run that finds a deadline passed takes over
 * only after it has seen the lease unchanged for two intervals on its own monotonic clock, so a
 * wrong wall clock on either side never takes a live lease.
 */
export const DEFAULT_HEARTBEAT_MS = 30_000;

export function heartbeatInterval(env: NodeJS.ProcessEnv = process.env): number {
  const ms = env.NYL_HEARTBEAT_INTERVAL ? parseDuration(env.NYL_HEARTBEAT_INTERVAL) : undefined;
  return ms && ms > 0 ? ms : DEFAULT_HEARTBEAT_MS;
}

/** The renewal margin: a heartbeat moves the deadline only when it is this close (test knob kept). */
export const RENEW_MARGIN_MS = Number(process.env.NYL_TEST_RENEW_MARGIN_MS) || 5 * 60_000;
