import type { ReviewedPlan } from '../plan/token.js';

export interface ReconcileOptions {
  environment: string;
  parallelism?: number;
  /** --approve: units whose unsafe execution (drift repair, reapply) a person approves. */
  approve?: string[];
  /** --unit … --reapply --reason: execute these although their receipts are current. */
  reapply?: { units: string[]; reason: string };
  /** --plan: execute exactly the plan this token names, or refuse a stale one. */
  plan?: string;
  /**
   * The plan as reviewed, when kept (a plan file, a PR comment): its rows name the units that
   * changed, its resource changes the resources.
   */
  reviewed?: ReviewedPlan;
  /** --allow-older-source --reason: apply a source older than the recorded one, on purpose. */
  allowOlderSource?: { reason: string };
  /** --failed: run the failed (and converging uncertain) units and their dependants, nothing else. */
  failed?: boolean;
  /** --from U --reason: run U and everything downstream of it again, current or not. */
  from?: { units: string[]; reason: string };
  /** --allow-config-change: a recovery run may run units whose configuration changed since they failed. */
  allowConfigChange?: boolean;
}

export const DEFAULT_PARALLELISM = 4;
