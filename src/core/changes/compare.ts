import { sha256Key } from '../util/canonical.js';
import { keptChanges } from './counts.js';
import type { KeptChanges, PlannedChanges } from './model.js';

/** 12 hex digits over the units' kept changes, by unit name: the resource part of a plan token. */
export function changesDigest(units: Map<string, PlannedChanges>): string {
  const list = [...units.entries()]
    .sort(([a], [b]) => (a < b ? -1 : 1))
    .map(([unit, p]) => {
      const k = keptChanges(p);
      return [unit, [...k.resources].sort(byFirst), [...k.outputs].sort(byFirst)];
    });
  return sha256Key(list).slice(7, 19);
}

const byFirst = (a: string[], b: string[]) => ((a[0] as string) < (b[0] as string) ? -1 : 1);

/**
 * How a plan made now differs from the reviewed one, resource by resource: `terraform_data.a
 * (update, was create)`, `… (planned values differ)`, `… (delete, not in the reviewed plan)`,
 * `… (reviewed create, no longer planned)`; outputs the same. Empty when they are the same.
 */
export function differences(reviewed: KeptChanges, now: PlannedChanges): string[] {
  const out: string[] = [];
  const kept = keptChanges(now);
  const before = new Map(reviewed.resources.map(([a, action, digest]) => [a, { action, digest }]));
  const after = new Map(kept.resources.map(([a, action, digest]) => [a, { action, digest }]));
  for (const [a, n] of after) {
    const b = before.get(a);
    if (!b) out.push(`${a} (${n.action}, not in the reviewed plan)`);
    else if (b.action !== n.action) out.push(`${a} (${n.action}, was ${b.action})`);
    else if (b.digest !== n.digest) out.push(`${a} (${n.action}: planned values differ)`);
  }
  for (const [a, b] of before) if (!after.has(a)) out.push(`${a} (reviewed ${b.action}, no longer planned)`);
  const outsBefore = new Map(reviewed.outputs);
  const outsAfter = new Map(kept.outputs);
  for (const [name, action] of outsAfter)
    if (outsBefore.get(name) !== action)
      out.push(
        `output ${name} (${action}${outsBefore.has(name) ? `, was ${outsBefore.get(name)}` : ', not in the reviewed plan'})`,
      );
  for (const [name, action] of outsBefore)
    if (!outsAfter.has(name)) out.push(`output ${name} (reviewed ${action}, no longer planned)`);
  return out;
}
