import { sha256Key } from '../../util/canonical.js';

/** The short form of an execution key a kept plan row holds (a PR comment's hidden rows). */
export function keptKey(executionKey: string | undefined): string | undefined {
  return executionKey ? sha256Key(executionKey).slice(7, 15) : undefined;
}
