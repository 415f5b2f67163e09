import type { GitRepo, RefUpdate } from '../git/repo.js';

/**
 * Where refs live and how they change. Local: the repository's own refs, one
 * `update-ref --stdin` transaction per write. Remote (next): fetch once, one atomic push per write.
 * Either way objects are built in the local repository first.
 */
export interface RefBackend {
  readonly mode: 'local' | 'remote';
  /** Reads the tips of every ref under `prefix/` (for the remote: after one fetch). */
  list(prefix: string): Promise<Map<string, string>>;
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
}
