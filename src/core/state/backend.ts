import type { GitRepo, RefUpdate } from '../git/repo.js';

/**
 * Where refs live and how they change. Local: the repository's own refs, one
 * `update-ref --stdin` transaction per write. Remote: fetch once, one atomic push per write.
 * Either way objects are built in the local repository first.
 */
export interface RefBackend {
  readonly mode: 'local' | 'remote';
  /**
   * Reads the tips of every ref under `prefix/` (for the remote: after one fetch). The remote's
   * refs come without their history (depth 1) into a clone that has none of them yet: the tips
   * are the state, and a fresh runner's fetch stays the same size however long the history.
   */
  list(prefix: string): Promise<Map<string, string>>;
  /**
   * Starts the read `list(prefix)` makes, so that it runs while the caller works; the next `list`
   * of the same prefix takes its answer (or its error). The local backend reads in no time.
   */
  prefetch?(prefix: string): void;
  /**
   * Applies all updates or none; false when an expected old value did not hold (a lost race).
   * `intent` says what the write is, for the message when its outcome cannot be known.
   */
  update(updates: RefUpdate[], intent?: WriteIntent): Promise<boolean>;
  /**
   * Brings commits (and, with `since`, their history back to that time) into the local
   * repository; false when they could not be fetched. The local backend has nothing to fetch.
   */
  fetchCommits?(shas: string[], opts?: { depth?: number; since?: number }): Promise<boolean>;
  /**
   * Makes the last `depth` commits of each ref's history (its tip counted) readable in the local
   * repository, for history views (`nyl runs`): after `list`, a state ref's parents may be missing
   * (a shallow boundary: `readCommit` of a parent is undefined). Fetches only what is missing and
   * moves the local copies of these refs to the remote's current tips; a deeper history already
   * fetched may be cut back to `depth`. False when it could not be fetched (a ref the remote does
   * not have, no answer). The local backend has all history: true, nothing to do.
   */
  fetchHistory(refs: string[], depth: number): Promise<boolean>;
}

/** A write, in the operator's terms: what it is and what each possible outcome means. */
export interface WriteIntent {
  environment: string;
  what: string;
  ifLanded: string;
  ifNot: string;
}

export class LocalBackend implements RefBackend {
  readonly mode = 'local' as const;
  constructor(private readonly repo: GitRepo) {}
  list(prefix: string): Promise<Map<string, string>> {
    return this.repo.listRefs(prefix);
  }
  update(updates: RefUpdate[]): Promise<boolean> {
    return this.repo.updateRefs(updates);
  }
  async fetchHistory(_refs: string[], _depth: number): Promise<boolean> {
    return true;
  }
}
