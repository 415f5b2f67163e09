/**
 * When a waiter under --wait-lease asks the remote again. A release can come at any moment, and
 * a poll spaced Δ after the one before finds it Δ/2 late on average, so polls are spent evenly
 * (a token bucket: over a wait of T seconds, at most `rate`·T requests, polls and the reads they
 * lead to) unless the holder's past
 * says when it is likely to finish: then polls are saved up before that window and spent densely
 * inside it. Every delay is jittered, so waiters started together drift apart.
 */

/** A likely release, on this machine's clock: around `at`, give or take `spreadMs`. */
export interface Expectation {
  at: number;
  spreadMs: number;
}

export interface ScheduleOptions {
  /** Polls per second on average, at most (a token bucket: one token per poll). */
  rate?: number;
  /** Polls that can be saved up for a likely window. */
  capacity?: number;
  /** Polls in the bucket when the wait starts. */
  initial?: number;
  /** Closest two polls come, inside a likely window. */
  minMs?: number;
  /** Gap between polls while saving up for a window ahead. */
  savingMs?: number;
  /** Each delay is multiplied by 1 ± this, at random. */
  jitter?: number;
  random?: () => number;
}

export class PollSchedule {
  private readonly rate: number;
  private readonly capacity: number;
  private readonly minMs: number;
  private readonly savingMs: number;
  private readonly jitter: number;
  private readonly random: () => number;
  private tokens: number;
  private at: number;
  private expect: Expectation | undefined;

  constructor(now: number, opts: ScheduleOptions = {}) {
    this.rate = (opts.rate ?? 0.48) / 1000;
    this.capacity = opts.capacity ?? 8;
    this.minMs = opts.minMs ?? 250;
    this.savingMs = opts.savingMs ?? 3_000;
    this.jitter = opts.jitter ?? 0.2;
    this.random = opts.random ?? Math.random;
    this.at = now;
    // None to start with: over any wait of T seconds, at most rate·T requests (the reads included).
    this.tokens = opts.initial ?? 0;
  }

  /** What the holder's record says of its release now (undefined: nothing to go by). */
  expectRelease(e: Expectation | undefined): void {
    this.expect = e;
  }

  private refill(now: number): void {
    this.tokens = Math.min(this.capacity, this.tokens + Math.max(0, now - this.at) * this.rate);
    this.at = Math.max(this.at, now);
  }

  /** Milliseconds from `now` to the next poll, which will cost `requests` of the budget. */
  next(now: number, requests = 1): number {
    this.refill(now);
    const even = 1 / this.rate;
    let want = even;
    /** A part of the delay that is not jittered: the wait for a window ahead. */
    let until = 0;
    const e = this.expect;
    if (e && now < e.at + e.spreadMs) {
      const start = e.at - e.spreadMs;
      const end = e.at + e.spreadMs;
      // What is left of the window in slots, one for each poll that can be spent until its end
      // (saved and earned meanwhile); each poll at the end of its slot: a poll as the window
      // opens finds a release from before it only, the least likely.
      const from = Math.max(now, start);
      const polls = this.tokens + (end - now) * this.rate;
      const slot = Math.max(this.minMs, (end - from) / Math.max(1, polls));
      if (now >= start) want = Math.min(even, slot);
      else {
        // Ahead of it: save polls for it, with a poll a while meanwhile (the holder may end
        // early; evenly once the bucket is full), but none in the last two such gaps before it.
        const gap = this.tokens >= this.capacity - 1 ? even : this.savingMs;
        if (from - now + slot < 2 * gap) {
          until = from - now;
          want = slot;
        } else want = gap;
      }
    }
    want = until + want * (1 - this.jitter + 2 * this.jitter * this.random());
    // Never sooner than the bucket allows: the average holds whatever the expectation said.
    const ready = this.tokens >= requests ? 0 : (requests - this.tokens) / this.rate;
    return Math.round(Math.max(want, ready));
  }

  /** A poll was sent at `now`, costing `requests` of the budget (2 for a listing in two requests). */
  polled(now: number, requests = 1): void {
    this.refill(now);
    this.tokens -= requests;
  }
}
