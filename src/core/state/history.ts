import type { Signature } from '../git/objects.js';
import type { GitRepo, ObjectBatch, RefUpdate, TreeFiles } from '../git/repo.js';
import { prettyJson } from '../util/canonical.js';
import { isoTime } from '../util/time.js';
import { FILES, type RunRecord, type UnitResult } from './documents.js';
import type { EnvState, RunRefState } from './read.js';

/**
 * Run history (DESIGN §8, seed 003): every run that ended leaves one commit on
 * `<prefix>/<env>/history`, newest first along first parents. Its tree is the run's final record
 * (`run.json`: every state with its time, each unit's result, who, what imported it) and the log
 * tail of each unit it ran (`units/<unit>/log.txt`, and `units/<unit>/tail.txt`: what a unit killed
 * mid-run had written by the last heartbeat). The commits land in the same write as the
 * transition (or the import) that ends the run, so history never says more than the state refs.
 * Runs that end without taking the lease (superseded, refused) first get a ref of their own under
 * `<prefix>/<env>/ended/<run>` (created, never moved: no race with anyone); the next write under
 * the lease folds them into history and deletes those refs.
 */
export interface HistoryEntry {
  record: RunRecord;
  /** Files besides run.json: log tails, by path (blob contents or ids). */
  files: TreeFiles;
  /** The last commit of the run's own ref, kept as the entry's second parent (see appendHistory). */
  runTip?: string;
}

/** A history entry's commit message: what ran, how it ended, and its results counted. */
export function historySubject(r: RunRecord): string {
  const counts = countResults(r.results ?? {});
  const n = Object.entries(counts).map(([k, v]) => `${v} ${k}`);
  return `nyl: run ${r.run} ${r.operation} ${r.environment} ${r.state}${n.length ? ` (${n.join(', ')})` : ''}`;
}

export function countResults(results: Record<string, UnitResult>): Record<string, number> {
  const out: Record<string, number> = {};
  for (const u of Object.values(results)) out[u.result] = (out[u.result] ?? 0) + 1;
  return out;
}

/**
 * The commits that append `entries` (oldest first) and `ended` ref commits to the history ref, on
 * top of `tip`; undefined when there is nothing to append. Ended refs' trees are reused as they are.
 * An entry's second parent is the ref the run kept while it ran (its claim, waves and heartbeats;
 * an ended ref's one commit), so that deleting that ref leaves none of the objects written for it
 * unreachable, and `git log <entry>^2` shows the run's moves. History itself is read along first
 * parents; the first entry of a history has no parent, and so no second one either.
 */
export async function appendHistory(
  repo: GitRepo,
  batch: ObjectBatch,
  opts: {
    ref: string;
    tip: string | undefined;
    entries: HistoryEntry[];
    ended: { tip: string }[];
    author: Signature;
  },
): Promise<RefUpdate | undefined> {
  let parent = opts.tip;
  for (const e of opts.ended) {
    const c = await repo.readCommit(e.tip);
    if (!c) continue;
    parent = batch.commit({ tree: c.tree, parents: withRun(parent, e.tip), author: opts.author, message: c.message });
  }
  for (const e of opts.entries) {
    const files: TreeFiles = new Map(e.files);
    files.set(FILES.run, Buffer.from(prettyJson(e.record)));
    const tree = batch.tree(files);
    parent = batch.commit({
      tree,
      parents: withRun(parent, e.runTip),
      author: opts.author,
      message: historySubject(e.record),
    });
  }
  if (parent === opts.tip) return undefined;
  return { ref: opts.ref, old: opts.tip, new: parent };
}

/** A history commit's parents: the entry before it, then the run's own ref when there is one before. */
export function withRun(previous: string | undefined, runTip: string | undefined): string[] {
  if (!previous) return [];
  return runTip ? [previous, runTip] : [previous];
}

/**
 * A dead or cancelled run ref, as its history keeps it once imported: its state (`lost` unless it
 * ended itself), each unit's checkpointed result, the units it was running uncertain, its logs.
 */
export function importedEntry(run: RunRefState, by: string, now: number): HistoryEntry {
  const r = run.record;
  const results: Record<string, UnitResult> = { ...(r.results ?? {}) };
  for (const [unit, c] of run.checkpoints)
    results[unit] = {
      result: c.result,
      kind: c.kind,
      durationMs: c.durationMs,
      ...(c.exitCode !== undefined ? { exitCode: c.exitCode } : {}),
      ...(c.reason ? { reason: c.reason } : {}),
    };
  for (const unit of r.executing)
    if (!run.checkpoints.has(unit))
      results[unit] = { result: 'uncertain', reason: 'it was running when the run stopped (no checkpoint)' };
  const ended = r.phase === 'finished' && r.state !== 'claimed' && r.state !== 'executing';
  const at = isoTime(now);
  const record: RunRecord = {
    ...r,
    state: ended ? r.state : 'lost',
    phase: 'finished',
    executing: [],
    results,
    importedBy: by,
    finishedAt: r.finishedAt ?? at,
    states: ended ? r.states : [...(r.states ?? []), { state: 'lost', at }],
  };
  delete record.running;
  const files: TreeFiles = new Map();
  for (const [unit, oid] of run.logs) files.set(FILES.runLog(unit), { oid });
  for (const [unit, oid] of run.tails) if (!run.logs.has(unit)) files.set(FILES.runTail(unit), { oid });
  return { record, files, runTip: run.tip };
}

/** The refs of runs that ended without the lease, to fold into history (oldest first, bounded). */
export function endedToFold(state: EnvState, max = 50): { id: string; ref: string; tip: string }[] {
  return [...state.tips.ended]
    .sort(([a], [b]) => (a < b ? -1 : 1))
    .slice(0, max)
    .map(([id, tip]) => ({ id, ref: state.refs.ended(id), tip }));
}
