import type { EnvState } from '../../state/read.js';
import type { Expectation } from './schedule.js';

/** From a run's last unit finishing to its lease released: the landing write. */
const LANDING_MS = 300;
/** Receipts older than this far from their run's start say nothing about this run. */
const LONGEST_MS = 6 * 3600_000;

/** The creation time of a UUIDv7 run id (its first 48 bits), or undefined for another id. */
export function runIdTime(id: string): number | undefined {
  const hex = id.replace(/-/g, '');
  if (!/^[0-9a-f]{32}$/i.test(hex) || hex[12] !== '7') return undefined;
  return Number.parseInt(hex.slice(0, 12), 16);
}

/**
 * When the holding reconcile is likely to release its lease: its executing units finished, the
 * last time they ran, this long after their run started (a receipt's run id holds that run's
 * start, its `at` the unit's end: both from one clock). The same deploy usually takes about as
 * long again; a unit never run before, or another operation, gives nothing to go by.
 */
export function expectedRelease(state: EnvState, run: string): Expectation | undefined {
  const record = state.runs.get(run)?.record;
  if (record?.operation !== 'reconcile' || !record.executing.length) return undefined;
  const start = runIdTime(run) ?? Date.parse(record.startedAt);
  let took = 0;
  for (const unit of record.executing) {
    const r = state.observed.get(unit)?.receipt;
    const from = r ? runIdTime(r.run) : undefined;
    const to = r ? Date.parse(r.at) : Number.NaN;
    if (from === undefined || !(to >= from) || to - from > LONGEST_MS) return undefined;
    took = Math.max(took, to - from);
  }
  if (!Number.isFinite(start)) return undefined;
  return { at: start + took + LANDING_MS, spreadMs: 500 + took / 4 };
}
