import type { PlannedChanges } from '../changes/model.js';
import type { DesiredUnit } from '../resolve/desired.js';
import type { Cancellation } from '../util/cancel.js';

export type RecoveryPolicy = 'converge' | 'inspect' | 'manual';

export interface ExecuteContext {
  environment: string;
  run: string;
  unit: DesiredUnit;
  /** Repository root: where tools run. */
  cwd: string;
  timeoutMs: number;
  cancellation: Cancellation;
  /** Masks secrets in text that will be stored. */
  mask: (text: string) => string;
  /** The run keeps state in this repository's refs (--local): commands in messages carry --local. */
  local?: boolean;
  /** The receipt being verified (verify only). */
  receipt?: { executionKey: string; outputs: Record<string, string>; artifacts: Record<string, string> };
  /** A plan this run made of the unit (Driver.plan with `out`): execute applies exactly it. */
  saved?: SavedPlan;
}

/** A plan kept in a file to be applied, and what it changes. */
export interface SavedPlan {
  file: string;
  changes: PlannedChanges;
  /** The plan's own log (init, plan, show): the unit's log starts with it. */
  log?: string;
  /** How long the plan took: the unit's timeout covers its plan and its apply. */
  durationMs?: number;
}

/** How a plan is made: kept in `out` to be applied, or speculative (dropped). Neither takes the state lock. */
export interface PlanOptions {
  out?: string;
}

export type PlanResult =
  | { status: 'planned'; changes: PlannedChanges; log: string; durationMs: number }
  | {
      status: 'failed';
      reason: string;
      log: string;
      durationMs: number;
      cancelled?: boolean;
      /** False: running it again cannot help until a person acts (a lock that outlives its holder). */
      retryable?: boolean;
      exitCode?: number;
    };

export type ExecuteResult =
  | {
      status: 'succeeded';
      outputs: Record<string, string>;
      artifacts: Record<string, string>;
      log: string;
      durationMs: number;
      /** What it applied, for kinds that plan (Terraform, OpenTofu). */
      changes?: PlannedChanges;
    }
  | { status: 'failed'; reason: string; exitCode?: number; retryable: boolean; log: string; durationMs: number }
  | { status: 'uncertain'; reason: string; log: string; durationMs: number };

export type InspectResult =
  | { status: 'applied'; outputs: Record<string, string>; artifacts: Record<string, string>; log: string }
  | { status: 'not-applied'; log: string }
  | { status: 'unknown'; reason: string; log: string };

/** What every unit kind implements; the engine treats all kinds alike. Drivers never touch git. */
export interface Driver {
  readonly kind: string;
  policy(unit: DesiredUnit): RecoveryPolicy;
  execute(ctx: ExecuteContext): Promise<ExecuteResult>;
  /**
   * Kinds whose tool plans (Terraform, OpenTofu): the changes an execute would make. With `out`
   * the plan is kept there for `execute` to apply (ExecuteContext.saved); without, it is
   * speculative. A plan takes no state lock: it never stops an apply.
   */
  plan?(ctx: ExecuteContext, opts: PlanOptions): Promise<PlanResult>;
  /** For the inspect policy: were the effects of the desired document applied? */
  inspect?(ctx: ExecuteContext): Promise<InspectResult>;
  /** For `nyl verify`: does what the receipt describes still hold? Undefined: this unit cannot tell. */
  verify?(ctx: ExecuteContext): Promise<VerifyResult | undefined>;
  /** For `nyl teardown`: removes the unit's effects. Undefined: the unit has nothing to run. */
  destroy?(ctx: ExecuteContext): Promise<ExecuteResult | undefined>;
}

export interface VerifyResult {
  state: 'in-sync' | 'drifted' | 'unknown';
  detail: string;
  health?: { state: string; detail: string };
  attestations?: Record<string, string>;
  /** Kinds that plan: what the plan would change to put it back (the resources that drifted). */
  changes?: PlannedChanges;
}
