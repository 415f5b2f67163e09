import type { ExitCode, Problem } from '../util/errors.js';

export interface UnitRow {
  unit: string;
  kind: string;
  result: string;
  detail: string;
  durationMs?: number;
  executionKey?: string;
  run?: string;
}

/** What reconcile, plan and recover return; faces render it as a table or JSON. */
export interface RunReport {
  operation: string;
  environment: string;
  run?: string;
  source: string;
  desired?: string;
  observed?: string;
  rows: UnitRow[];
  problems: Problem[];
  exit: ExitCode;
  /** Extra key/value lines after the table (lists, plan token, ...). */
  extra?: [string, string][];
  /** Table header when it is not `UNIT KIND RESULT DETAIL`. */
  header?: string[];
  /** The environment's waves and dependency edges (for graphs). */
  graph?: { waves: string[][]; edges: [string, string][] };
}

export interface StatusRow {
  unit: string;
  kind: string;
  state: string;
  receipt: string;
  lastRun: string;
  detail: string;
}

export interface StatusReport {
  operation: 'status';
  environment: string;
  source: string;
  desired?: string;
  observed?: string;
  lease?: { state: string; run: string; holder: string; deadline: string };
  rows: StatusRow[];
  problems: Problem[];
  exit: ExitCode;
}

/** Operations that are not runs (recover, lease break): `<operation> <env>: <outcome>` then facts. */
export interface OpReport {
  operation: string;
  environment: string;
  outcome: string;
  facts: [string, string][];
  problems: Problem[];
  exit: ExitCode;
}
