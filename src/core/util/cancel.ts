/** A cancellation request carrying the signal received, forwarded to every running tool. */
export class Cancellation {
  private listeners = new Set<(signal: NodeJS.Signals) => void>();
  signal: NodeJS.Signals | undefined;

  constructor(readonly graceMs: number = 30_000) {}

  get requested(): boolean {
    return this.signal !== undefined;
  }

  cancel(signal: NodeJS.Signals): void {
    if (this.signal) return;
    this.signal = signal;
    for (const l of this.listeners) l(signal);
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
