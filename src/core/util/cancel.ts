/** How long a cancelled command lets its work finish, by default (--cancel-grace). */
export const DEFAULT_GRACE_MS = 30_000;

/** A cancellation request carrying the signal received, forwarded to every running tool. */
export class Cancellation {
  private listeners = new Set<(signal: NodeJS.Signals) => void>();
  signal: NodeJS.Signals | undefined;
  /** When the cancel arrived (epoch ms): the grace window runs from here. */
  at: number | undefined;

  constructor(readonly graceMs: number = DEFAULT_GRACE_MS) {}

  get requested(): boolean {
    return this.signal !== undefined;
  }

  cancel(signal: NodeJS.Signals): void {
    if (this.signal) return;
    this.signal = signal;
    this.at = Date.now();
    for (const l of this.listeners) l(signal);
  }

  /** Milliseconds left of the grace window after a cancel (undefined before one). */
  remainingMs(now = Date.now()): number | undefined {
    return this.at === undefined ? undefined : Math.max(0, this.at + this.graceMs - now);
  }

  /** Runs `fn` on cancel (at once if already cancelled); returns the unsubscribe. */
  onCancel(fn: (signal: NodeJS.Signals) => void): () => void {
    if (this.signal) {
      fn(this.signal);
      return () => {};
    }
    this.listeners.add(fn);
    return () => this.listeners.delete(fn);
  }
}

/** Waits `ms`, or less when a cancel comes first (at once if one already came). */
export function sleepUnlessCancelled(ms: number, cancellation: Cancellation): Promise<void> {
  if (cancellation.requested) return Promise.resolve();
  return new Promise((resolve) => {
    const timer = setTimeout(done, ms);
    const off = cancellation.onCancel(done);
    function done() {
      clearTimeout(timer);
      off();
      resolve();
    }
  });
}
