import type { UnitRow } from '../report.js';

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
}

export const DEFAULT_PARALLELISM = 4;
