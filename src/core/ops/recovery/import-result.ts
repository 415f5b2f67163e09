import type { BreakInfo, ObservedUnit } from '../../state/documents.js';
import type { RunRefState } from '../../state/read.js';
import type { Problem } from '../../util/errors.js';
import type { UnitRow } from '../workspace/report.js';

/** What taking over from dead runs changes, before anything executes. */
export interface ImportResult {
  /** Observed documents after the import (changed ones only); null: a teardown run destroyed the unit, its state goes. */
  observed: Map<string, ObservedUnit | null>;
  rows: Map<string, UnitRow>;
  imported: string[];
  /** Units the import marked uncertain. */
  recovered: string[];
  /** Log tails (blob ids on the dead run's ref) of imported executions, kept on observed. */
  logs: Map<string, string>;
  /** Dead run refs consumed: deleted once the transition lands, or retired to evidence (see consumedRefs). */
  consumed: RunRefState[];
  /** The break(s) this import records: one object, or a list when a taking-over run died too. */
  leaseBroken?: BreakInfo | BreakInfo[];
  problems: Problem[];
}
