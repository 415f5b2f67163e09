import type { UnitRow } from '../workspace/report.js';

export interface ReconcileOptions {
  environment: string;
  parallelism?: number;
  /** --approve: units whose unsafe execution (drift repair, reapply) a person approves. */
  approve?: string[];
  /** --unit … --reapply --reason: execute these although their receipts are current. */
  reapply?: { units: string[]; reason: string };
  /** --plan: execute exactly the plan this token names, or refuse a stale one. */
  plan?: string;
  /** The rows the plan showed, when known (a PR comment): a stale plan names the units that changed. */
  planRows?: Pick<UnitRow, 'unit' | 'result' | 'executionKey'>[];
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
