import type { Cancellation } from './cancel.js';

/**
 * Retries and polls wait from 250 ms, doubling up to 5 s, each delay jittered by ±20% so that
 * runners racing for one environment do not ask in step. Every wait is counted (the `--json`
 * stats report them).
 */
export const backoffStats = { waits: 0 };

export class Backoff {
  private delay: number;
  constructor(
    private readonly minMs = 250,
    private readonly maxMs = 5_000,
    private readonly jitter = 0.2,
  ) {
    this.delay = minMs;
  }

  /** The next delay (ms), then doubles the base for the one after. */
  next(): number {
    const d = this.delay * (1 - this.jitter + Math.random() * 2 * this.jitter);
    this.delay = Math.min(this.delay * 2, this.maxMs);
    return Math.round(d);
  }

  reset(): void {
    this.delay = this.minMs;
  }

  /** Waits the next delay, no later than `until` (epoch ms) and no longer once cancelled. */
  async wait(opts: { until?: number; now?: () => number; cancellation?: Cancellation } = {}): Promise<void> {
    const now = opts.now ?? Date.now;
    const ms = Math.max(0, Math.min(this.next(), (opts.until ?? Number.POSITIVE_INFINITY) - now()));
    backoffStats.waits++;
    if (!ms || opts.cancellation?.requested) return;
    await new Promise<void>((resolve) => {
      let off: (() => void) | undefined;
      const t = setTimeout(done, ms);
      off = opts.cancellation?.onCancel(done);
      function done() {
        clearTimeout(t);
        off?.();
        resolve();
      }
    });
  }
}
