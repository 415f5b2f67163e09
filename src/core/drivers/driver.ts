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
}

export type ExecuteResult =
  | {
      status: 'succeeded';
      outputs: Record<string, string>;
      artifacts: Record<string, string>;
      log: string;
      durationMs: number;
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
}
