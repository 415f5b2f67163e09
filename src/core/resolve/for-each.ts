import { type ForEachSource, type Item, instanceName, itemsOf, missingPath } from '../config/for-each.js';
import type { UnitConfig } from '../config/model.js';
import type { UnitDoc } from '../config/schema.js';
import type { Outputs } from './outputs.js';

/**
 * Mapped units (`forEach`): a unit of the configuration — a group — stands for one instance per
 * item, `group#key`, each an ordinary unit of the selection with its own desired document, receipt,
 * uid, condition and log. The items are listed in the configuration, or are the JSON list one
 * upstream output holds; then the expansion is what that output is now (recorded, or just produced
 * in this run), and is rebuilt when it changes. Waves are ordered on the groups, so an expansion
 * that changes mid-run never moves a unit to another wave.
 */

/** What a group expanded to: its instances, or why it has none that can be trusted. */
export interface Group {
  source: ForEachSource;
  instances: string[];
  /** Items unknown (no recorded output yet) or unusable: the group is one unit that cannot resolve. */
  unresolved?: string;
}

/** One instance: the group's configuration under its own name, with its item. */
function instanceOf(g: UnitConfig, item: Item): UnitConfig {
  const name = instanceName(g.doc.name, item.key);
  const missing = missingPath(item, g.each ?? []);
  return {
    ...g,
    doc: { ...g.doc, name } as UnitDoc,
    instance: { group: g.doc.name, item },
    ...(missing ? { unresolved: `item ${item.key} has no ${missing} for \${{ each.${missing} }}` } : {}),
  };
}

/** A group's items now: from its list, or from the producer's output (outputs known so far). */
function expandGroup(g: UnitConfig, outputsOf: (unit: string) => Outputs | undefined): Group & { units: UnitConfig[] } {
  const source = g.forEach as ForEachSource;
  let list: unknown;
  if ('list' in source) list = source.list;
  else {
    const { unit, key } = source.from;
    const text = outputsOf(unit)?.[key];
    const unresolved = (why: string): Group & { units: UnitConfig[] } => ({
      source,
      instances: [g.doc.name],
      unresolved: why,
      units: [{ ...g, unresolved: why }],
    });
    if (text === undefined) return unresolved(`its items are known once ${unit} has an output ${key}`);
    try {
      list = JSON.parse(text);
    } catch {
      return unresolved(`forEach: units.${unit}.outputs.${key} is not JSON: ${JSON.stringify(text.slice(0, 60))}`);
    }
    const r = itemsOf(list);
    if ('error' in r) return unresolved(`forEach: units.${unit}.outputs.${key} ${r.error}`);
  }
  const items = (itemsOf(list) as { items: Item[] }).items;
  const units = items.map((i) => instanceOf(g, i));
  return { source, instances: units.map((u) => u.doc.name), units };
}

/** Group-level configuration and waves, kept on the selection to expand again. */
export interface Mapping {
  config: Map<string, UnitConfig>;
  waves: string[][];
  groups: Map<string, Group>;
}

/**
 * Expands every group of `m` into `units` and `waves` (both rewritten in place, so every holder
 * of the selection sees the new expansion). A unit that needs a group depends on all its instances.
 */
export function expand(
  m: Mapping,
  units: Map<string, UnitConfig>,
  waves: string[][],
  outputsOf: (unit: string) => Outputs | undefined,
): void {
  const members = new Map<string, UnitConfig[]>();
  m.groups.clear();
  for (const [name, u] of m.config) {
    if (!u.forEach) continue;
    const { units: list, ...group } = expandGroup(u, outputsOf);
    m.groups.set(name, group);
    members.set(name, list);
  }
  const depsOf = (deps: string[]) => deps.flatMap((d) => m.groups.get(d)?.instances ?? [d]);
  units.clear();
  for (const [name, u] of m.config)
    for (const x of members.get(name) ?? [u]) units.set(x.doc.name, { ...x, deps: depsOf(x.deps) });
  waves.length = 0;
  for (const w of m.waves) waves.push(w.flatMap((n) => m.groups.get(n)?.instances ?? [n]).sort());
}

/** Whether a name is a group that expanded to instances (not itself a unit of the selection). */
export function isGroup(m: Mapping | undefined, name: string): boolean {
  return m?.groups.has(name) === true && !m.groups.get(name)?.unresolved;
}
