import type { Selection } from '../../resolve/select.js';
import type { EnvState } from '../../state/read.js';
import type { Evaluation } from '../evaluate/evaluate.js';
import type { ImportResult } from '../recovery/import-result.js';
import type { RunWriter } from '../runs/writer.js';
import type { OpContext } from '../workspace/workspace.js';
import type { PrePlanned } from './reviewed-changes.js';
import type { Scope } from './scope.js';
import type { Outcome } from './task.js';

/** A unit this run executes, and why. */
export type Execution = Extract<Evaluation, { action: 'execute' }>;

/** What the execute phase works with: one run, its scope, its writer. */
export interface RunInput {
  ctx: OpContext;
  sel: Selection;
  /** The state after the import of dead runs. */
  state: EnvState;
  imp?: ImportResult;
  scope: Scope;
  writer: RunWriter;
  source: string;
  parallelism: number;
  /** The reviewed plan's Terraform/OpenTofu plans, made and checked before the run (reviewed-changes.ts). */
  prePlanned: Map<string, PrePlanned>;
}

/** What the waves did: each unit's outcome, why the executed ones ran, the log tails to keep. */
export interface Executed {
  outcomes: Map<string, Outcome>;
  executions: Map<string, Execution>;
  outputs: Map<string, Record<string, string>>;
  /** Log tails kept on observed: imported executions' (blobs on the dead run's ref), and this run's. */
  logs: Map<string, string | { oid: string }>;
}
