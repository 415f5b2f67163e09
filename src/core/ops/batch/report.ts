import type { ExitCode, Problem } from '../../util/errors.js';
import type { OpReport, RunReport } from '../workspace/report.js';

/** One environment of a batch, as `plan --group` and `reconcile --group` answer it. */
export interface BatchEntryReport {
  environment: string;
  /** The environment's own plan token (plan), or the one it was reconciled with (reconcile). */
  token?: string;
  /**
   * planned (plan); ran (this request reconciled it); recorded (done before: not run again); refused
   * (not done: the same token tries again); not run (the batch stopped first); current (nothing to do anywhere).
   */
  state: 'planned' | 'ran' | 'recorded' | 'refused' | 'not run' | 'current';
  /** Reconcile: false when the result is the batch's record of an earlier request (or of a run that landed). */
  created?: boolean;
  run?: string;
  /** success, failed, refused, uncertain, superseded (the exit code in words), or the plan's summary line. */
  result: string;
  exit: ExitCode;
  at?: string;
  detail?: string;
  /** The environment's own report when it was planned or reconciled by this request. */
  report?: RunReport | OpReport;
}

/** What a batch over an EnvironmentGroup answers; faces render it (src/cli/batch.ts). */
export interface BatchReport {
  batch: true;
  operation: 'plan' | 'reconcile';
  group: string;
  /** planned, nothing to do, done, incomplete, stopped, busy. */
  outcome: string;
  /** The batch token: `b1.<id>.<fingerprints>`. */
  token: string;
  /** The ref holding the batch record (reconcile, once recorded). */
  ref?: string;
  source: string;
  failed: boolean;
  environments: BatchEntryReport[];
  problems: Problem[];
  exit: ExitCode;
}

export function isBatchReport(r: unknown): r is BatchReport {
  return typeof r === 'object' && r !== null && (r as { batch?: unknown }).batch === true;
}
