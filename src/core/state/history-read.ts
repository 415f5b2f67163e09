import type { GitRepo } from '../git/repo.js';
import type { RefBackend } from './backend.js';
import { FILES, type RunRecord } from './documents.js';
import { parseDocument } from './schemas.js';

/** One run of the history ref: its commit, its final record, the files beside it (logs). */
export interface HistoryItem {
  commit: string;
  record: RunRecord;
  files: Map<string, string>;
}

/** The history ref to walk: its name (to deepen it by) and the tip the state was read at. */
export interface HistoryRef {
  ref: string;
  tip: string | undefined;
}

/**
 * Walks the history ref from its tip along first parents, newest first, reading one commit at a
 * time: `status` and `reconcile` never do this (they fetched the history ref's tip alone, depth 1).
 * Where the local repository's history ends (a shallow boundary), it deepens the ref through the
 * backend: first to `want` commits, then twice as deep as the walk has got each time, so
 * `--limit 20` fetches 20 commits, not the history. A commit whose run.json cannot be read is
 * skipped and counted, never guessed at.
 */
export async function* walkHistory(
  repo: GitRepo,
  backend: RefBackend,
  history: HistoryRef,
  want: number,
): AsyncGenerator<HistoryItem, { unreadable: number; truncated: boolean }> {
  let cur = history.tip;
  let seen = 0;
  let unreadable = 0;
  let depth = Math.max(want, 1);
  while (cur) {
    let c = await repo.readCommit(cur);
    if (!c) {
      // The tip counts: `seen` commits are here, this one is the next. A remote whose ref moved
      // since it was read spends some of the depth on newer commits: the next miss goes deeper.
      depth = Math.max(depth, seen + 1);
      if (await backend.fetchHistory([history.ref], depth)) c = await repo.readCommit(cur);
      depth *= 2;
    }
    if (!c) return { unreadable, truncated: true };
    seen++;
    const files = await repo.readTreeRecursive(c.tree);
    const record = await runRecordIn(repo, files);
    if (record) yield { commit: c.oid, record, files };
    else unreadable++;
    cur = c.parents[0];
  }
  return { unreadable, truncated: false };
}

/** The run.json of a commit's files, when it is a readable run record. */
async function runRecordIn(repo: GitRepo, files: Map<string, string>): Promise<RunRecord | undefined> {
  const oid = files.get(FILES.run);
  const o = oid ? await repo.readObject(oid) : undefined;
  const parsed = o?.type === 'blob' ? parseDocument('run', o.body) : undefined;
  return parsed?.ok ? (parsed.doc as RunRecord) : undefined;
}

/** The record of an ended ref (a superseded or refused run not yet in history). */
export async function readEndedRecord(repo: GitRepo, tip: string): Promise<RunRecord | undefined> {
  const c = await repo.readCommit(tip);
  return c ? runRecordIn(repo, await repo.readTreeRecursive(c.tree)) : undefined;
}

/**
 * The reconciles among the last `limit` runs of the history that executed one of `tokens` (a
 * `--plan` token), newest first; with `since`, the walk stops at the first run started before it.
 */
export async function plannedReconciles(
  repo: GitRepo,
  backend: RefBackend,
  history: HistoryRef,
  tokens: readonly string[],
  opts: { limit: number; since?: number },
): Promise<RunRecord[]> {
  const out: RunRecord[] = [];
  const walk = walkHistory(repo, backend, history, opts.limit);
  for (let i = 0; i < opts.limit; i++) {
    const next = await walk.next();
    if (next.done) break;
    const r = next.value.record;
    if (opts.since !== undefined && Date.parse(r.startedAt) < opts.since) break;
    if (r.operation === 'reconcile' && r.plan !== undefined && tokens.includes(r.plan)) out.push(r);
  }
  return out;
}
