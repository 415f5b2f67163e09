import { masker } from '../util/mask.js';

/** A line longer than this is echoed in masked pieces rather than waited for. */
const LONGEST_LINE = 64 * 1024;

/**
 * Copies a tool's output to the terminal as it grows (nyl exec), masked: only whole lines are
 * written, so a secret is never split between two writes and missed by the masker; what is left
 * at the end is written masked too.
 */
export class MaskedEcho {
  private pending = '';
  constructor(private readonly write: (text: string) => void = (t) => void process.stdout.write(t)) {}

  push(chunk: Buffer | string): void {
    this.pending += chunk.toString();
    const cut = this.pending.lastIndexOf('\n');
    if (cut >= 0) {
      this.write(masker.mask(this.pending.slice(0, cut + 1)));
      this.pending = this.pending.slice(cut + 1);
    } else if (this.pending.length > LONGEST_LINE) {
      this.write(masker.maskPiece(this.pending));
      this.pending = '';
    }
  }

  end(): void {
    if (this.pending) this.write(masker.mask(this.pending));
    this.pending = '';
  }
}
