import { isoTime } from '../util/time.js';
import type { RunRecord, RunState, UnitResult } from './documents.js';

/**
 * Moves a run record to its next state, keeping each move with its time in `states` (written with
 * the record before the next step, so a run that dies leaves where it got to).
 */
export function moveTo(record: RunRecord, state: RunState, now: number, wave?: { index: number; units: string[] }) {
  const at = isoTime(now);
  const last = record.states?.at(-1);
  record.state = state;
  if (last && last.state === state && last.wave === wave?.index) return;
  record.states = [...(record.states ?? []), { state, at, ...(wave ? { wave: wave.index, units: wave.units } : {}) }];
}

/** A run's terminal state from its units' results: failed when one failed or is left uncertain. */
export function terminalState(results: Record<string, UnitResult>): RunState {
  return Object.values(results).some((r) => r.result === 'failed' || r.result === 'uncertain') ? 'failed' : 'succeeded';
}

/** Ends a record: its terminal state, the time, its units' results. */
export function endRecord(
  record: RunRecord,
  state: RunState,
  now: number,
  results?: Record<string, UnitResult>,
): RunRecord {
  moveTo(record, state, now);
  record.phase = 'finished';
  record.executing = [];
  record.finishedAt = isoTime(now);
  delete record.running;
  if (results) record.results = results;
  return record;
}
