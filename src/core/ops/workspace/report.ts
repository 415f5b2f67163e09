import type { Counts, ResourceAction, UnitChanges } from '../../changes/model.js';
import { Exit, type ExitCode, type Problem, worstExit } from '../../util/errors.js';

export interface UnitRow {
  unit: string;
  kind: string;
  result: string;
  detail: string;
  durationMs?: number;
  executionKey?: string;
  run?: string;
  /** plan: the identities of the files its document names (path: object id in the source commit). */
  files?: Record<string, string>;
  /** plan: the files whose identity changed since its receipt, when that is why it executes. */
  filesChanged?: string[];
  /** Kinds that plan (Terraform, OpenTofu): the resource changes its plan makes (plan) or made (a run). */
  changes?: UnitChanges;
  /** Why such a unit shows no resource changes: its inputs wait for a unit that executes first, its plan failed. */
  changesNote?: string;
  /** Awaiting approval only because its plan deletes or replaces resources: the unit-level plan executes it. */
  gate?: 'destructive';
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
  /** Extra key/value lines after the table (plan token, ...): typed values, in print order. */
  extra?: [string, unknown][];
  /** Table header when it is not `UNIT KIND RESULT DETAIL`. */
  header?: string[];
  /** The environment's waves and dependency edges (for graphs). */
  graph?: { waves: string[][]; edges: [string, string][] };
  /** reconcile: the environment's `url` resolved from the observed state it landed (or found). */
  url?: string;
  /** reconcile: why the environment's `url` gave no URL (an output missing or sensitive). */
  urlMissing?: string;
  /** reconcile: the Environment's `production` (for a GitHub deployment; not in --json). */
  production?: boolean;
}

export interface StatusRow {
  unit: string;
  kind: string;
  state: string;
  receipt: string;
  lastRun: string;
  detail: string;
  /** A drifted Terraform/OpenTofu unit: the resources its last verify found drifted, and how. */
  drift?: { counts: Counts; resources: { address: string; action: ResourceAction }[] };
}

export interface StatusReport {
  operation: 'status';
  environment: string;
  source: string;
  desired?: string;
  observed?: string;
  lease?: { state: string; run: string; holder: string; deadline: string };
  /** The promotion gate, when the environment has one: where each environment before it stands. */
  promotion?: { environment: string; source?: string; ready: boolean; missing: string[] }[];
  rows: StatusRow[];
  problems: Problem[];
  exit: ExitCode;
  /** The environment's `url` resolved from the recorded state. */
  url?: string;
  /** Why the environment's `url` gave no URL (an output missing or sensitive). */
  urlMissing?: string;
}

/** Operations that are not runs (recover, lease break): `<operation> <env>: <outcome>` then facts. */
export interface OpReport {
  operation: string;
  environment: string;
  outcome: string;
  /** Typed values, in the order they print (`key: value`; non-strings as canonical JSON). */
  facts: [string, unknown][];
  /** Printed instead of the facts as text: documents as stored (state show). */
  document?: unknown;
  /** Printed instead of the outcome line as text: a table (environments). */
  table?: { header: string[]; rows: string[][] };
  problems: Problem[];
  exit: ExitCode;
}

/**
 * The exit code of a run from its rows and problems (DESIGN §6): failed 1, uncertain 4, and 2
 * for the results that wait on a person in this operation.
 */
export function exitFor(rows: UnitRow[], problems: Problem[], waitingOnAPerson: string[]): ExitCode {
  const exits: ExitCode[] = problems.map((p) => p.exit);
  for (const r of rows) {
    if (r.result === 'failed') exits.push(Exit.failed);
    if (r.result === 'uncertain') exits.push(Exit.uncertain);
    if (waitingOnAPerson.includes(r.result)) exits.push(Exit.refused);
  }
  return worstExit(exits);
}
