import { hrtime } from 'node:process';

/**
 * RFC 3339 UTC time with nanosecond digits, as seed 000 prints times. JavaScript clocks give
 * milliseconds: a time computed from one (a deadline, a stamp from the operation's clock) ends in
 * zeros, so the same instant is always written the same way; `isoTime()` of now takes the digits
 * below the millisecond from the monotonic clock.
 */
export function isoTime(ms?: number): string {
  const sub = ms === undefined ? (hrtime.bigint() % 1_000_000n).toString().padStart(6, '0') : '000000';
  return new Date(ms ?? Date.now()).toISOString().replace(/\.(\d{3})Z$/, `.$1${sub}Z`);
}

/** The same time written with an explicit offset, `…+00:00`, as NYL-LEASE-HELD shows deadlines. */
export function withOffset(iso: string): string {
  return iso.replace(/Z$/, '+00:00');
}
