import { recordedChanges } from '../../changes/counts.js';
import type { TreeFiles } from '../../git/repo.js';
import type { RunRecord, UnitResult } from '../../state/documents.js';
import type { HistoryEntry } from '../../state/history.js';
import { endRecord, terminalState } from '../../state/run-record.js';
import type { UnitRow } from '../workspace/report.js';

/** Failure text kept in history: enough to read, never a whole log (the log tail is beside it). */
const REASON_BYTES = 2000;

/** Each unit's result as a run's history keeps it, from the rows it reported. */
export function resultsOf(rows: UnitRow[], exitCodes = new Map<string, number>()): Record<string, UnitResult> {
  const out: Record<string, UnitResult> = {};
  for (const r of rows) {
    const said = r.result === 'failed' || r.result === 'uncertain' || r.gate !== undefined;
    out[r.unit] = {
      result: r.result,
      kind: r.kind,
      ...(r.durationMs !== undefined ? { durationMs: r.durationMs } : {}),
      ...(said && r.detail ? { reason: r.detail.slice(0, REASON_BYTES) } : {}),
      ...(exitCodes.has(r.unit) ? { exitCode: exitCodes.get(r.unit) } : {}),
      ...(r.changes ? { changes: recordedChanges(r.changes) } : {}),
    };
  }
  return out;
}

/**
 * A run's own history entry as it lands: its record ended (succeeded, or failed when a unit failed
 * or was left uncertain), its results, and the logs it wrote to its run ref.
 */
export function ownEntry(
  record: RunRecord,
  rows: UnitRow[],
  runFiles: TreeFiles,
  now: number,
  more: { imported?: string[]; exitCodes?: Map<string, number> } = {},
): HistoryEntry {
  const results = resultsOf(rows, more.exitCodes);
  const imported = more.imported ?? [];
  const ended = endRecord({ ...record, states: [...(record.states ?? [])] }, terminalState(results), now, results);
  if (imported.length) ended.imported = imported;
  const files: TreeFiles = new Map();
  for (const [path, content] of runFiles) if (/^units\/.+\/log\.txt$/.test(path)) files.set(path, content);
  return { record: ended, files };
}
