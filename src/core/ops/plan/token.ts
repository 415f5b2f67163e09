import type { KeptChanges } from '../../changes/model.js';
import type { UnitRow } from '../workspace/report.js';

/**
 * Plan tokens. `v2.<desired>.<observed>.<rows>`: the recorded tips (12 hex digits each) and a digest
 * of the unit-level rows. `v3.<desired>.<observed>.<rows>.<changes>`: the same, and a digest of the
 * resource changes of the units planned at the resource level (Terraform, OpenTofu). When some of
 * the units that could be were not (their plan failed), `<changes>` is `<digest>-<mask>`: the hex
 * bit mask of those left out, bit i the i-th of the plannable units by name (the rows, which the
 * token's unit part pins, make that list the same at reconcile time).
 */

const short = (oid: string | undefined) => (oid ?? 'none').slice(0, 12);

/** The unit-level token. */
export function unitToken(tips: { desired?: string; observed?: string }, rowsDigest: string): string {
  return `v2.${short(tips.desired)}.${short(tips.observed)}.${rowsDigest}`;
}

/**
 * A unit-level token with the digest of the resource changes its plan showed, and which of the
 * plannable units (`plannable`, any order) that digest leaves out.
 */
export function withChanges(token: string, changesDigest: string, plannable: string[], covered: Set<string>): string {
  const sorted = [...plannable].sort();
  let mask = 0n;
  for (const [i, u] of sorted.entries()) if (!covered.has(u)) mask |= 1n << BigInt(i);
  return `v3${token.slice(2)}.${changesDigest}${mask ? `-${mask.toString(16)}` : ''}`;
}

/** The unit-level part of a token (v3 → v2), and its resource part when it has one. */
export function tokenParts(token: string): { unit: string; changes?: string; uncovered?: bigint } {
  const parts = token.split('.');
  if (parts[0] !== 'v3' || parts.length !== 5) return { unit: token };
  const m = /^([0-9a-f]+)(?:-([0-9a-f]+))?$/.exec(parts[4] as string);
  const unit = ['v2', ...parts.slice(1, 4)].join('.');
  if (!m) return { unit, changes: parts[4] };
  return { unit, changes: m[1], ...(m[2] ? { uncovered: BigInt(`0x${m[2]}`) } : {}) };
}

/** The units a v3 token's digest covers, of the plannable ones (any order). */
export function coveredUnits(token: string, plannable: string[]): string[] {
  const { uncovered = 0n } = tokenParts(token);
  return [...plannable].sort().filter((_, i) => !(uncovered & (1n << BigInt(i))));
}

/** A plan as it was reviewed: its token and, when kept (a plan file, a PR comment), its rows and resource changes. */
export interface ReviewedPlan {
  token: string;
  rows?: Pick<UnitRow, 'unit' | 'result' | 'executionKey'>[];
  /** Each unit planned at the resource level, and what its plan changed. */
  changes?: Record<string, KeptChanges>;
}
