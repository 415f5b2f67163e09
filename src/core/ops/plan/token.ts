import type { KeptChanges } from '../../changes/model.js';
import type { UnitRow } from '../workspace/report.js';

/**
 * Plan tokens. `v2.<desired>.<observed>.<rows>`: the recorded tips (12 hex digits each) and a digest
 * of the unit-level rows. `v3.<desired>.<observed>.<rows>.<changes>`: the same, and a digest of the
 * resource changes of the units planned at the resource level (Terraform, OpenTofu).
 */

const short = (oid: string | undefined) => (oid ?? 'none').slice(0, 12);

/** The unit-level token. */
export function unitToken(tips: { desired?: string; observed?: string }, rowsDigest: string): string {
  return `v2.${short(tips.desired)}.${short(tips.observed)}.${rowsDigest}`;
}

/** A unit-level token with the digest of the resource changes its plan showed. */
export function withChanges(token: string, changesDigest: string): string {
  return `v3${token.slice(2)}.${changesDigest}`;
}

/** The unit-level part of a token (v3 → v2), and its resource part when it has one. */
export function tokenParts(token: string): { unit: string; changes?: string } {
  const parts = token.split('.');
  if (parts[0] !== 'v3' || parts.length !== 5) return { unit: token };
  return { unit: ['v2', ...parts.slice(1, 4)].join('.'), changes: parts[4] };
}

/** A plan as it was reviewed: its token and, when kept (a plan file, a PR comment), its rows and resource changes. */
export interface ReviewedPlan {
  token: string;
  rows?: Pick<UnitRow, 'unit' | 'result' | 'executionKey'>[];
  /** Each unit planned at the resource level, and what its plan changed. */
  changes?: Record<string, KeptChanges>;
}
