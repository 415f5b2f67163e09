import type { UnitConfig } from '../config/load.js';
import { type Reference, wholeReference } from '../config/references.js';
import { isSafeName, type UnitDoc } from '../config/schema.js';
import type { Outputs } from './desired.js';

/**
 * Mapped units (`forEach`): a unit of the configuration — a group — stands for one instance per
 * item, `group#key`, each an ordinary unit of the selection with its own desired document, receipt,
 * uid, condition and log. The items are listed in the configuration, or are the JSON list one
 * upstream output holds; then the expansion is what that output is now (recorded, or just produced
 * in this run), and is rebuilt when it changes. Waves are ordered on the groups, so an expansion
 * that changes mid-run never moves a unit to another wave.
 */

export const SEPARATOR = '#';

export const instanceName = (group: string, key: string) => `${group}${SEPARATOR}${key}`;

/** The group of an instance name (`shards#eu` → `shards`), or undefined for a plain name. */
export function groupOfName(name: string): string | undefined {
  const i = name.indexOf(SEPARATOR);
  return i > 0 ? name.slice(0, i) : undefined;
}

export interface Item {
  key: string;
  value: unknown;
}

/** Where a group's items come from: its list, or the reference whose value is a JSON list. */
export type ForEachSource = { list: unknown[] } | { from: Reference };

/** What a group expanded to: its instances, or why it has none that can be trusted. */
export interface Group {
  source: ForEachSource;
  instances: string[];
  /** Items unknown (no recorded output yet) or unusable: the group is one unit that cannot resolve. */
  unresolved?: string;
}

/**
 * The items of a list. A string (or number, boolean) item is its own key; an object item's key is
 * its `key` field if it has one, else its index. Keys are unique and usable in a unit name.
 */
export function itemsOf(list: unknown): { items: Item[] } | { error: string; index?: number } {
  if (!Array.isArray(list)) return { error: `is not a list (${typeOf(list)})` };
  const items: Item[] = [];
  const seen = new Map<string, number>();
  for (const [i, v] of list.entries()) {
    let key: string;
    if (typeof v === 'string' || typeof v === 'number' || typeof v === 'boolean') key = String(v);
    else if (v && typeof v === 'object' && !Array.isArray(v)) {
      const k = (v as Record<string, unknown>).key;
      if (k !== undefined && typeof k !== 'string' && typeof k !== 'number')
        return { error: `item ${i}: its key must be a string or a number, not ${typeOf(k)}`, index: i };
      key = k === undefined ? String(i) : String(k);
    } else return { error: `item ${i} is ${typeOf(v)}: items are strings or objects`, index: i };
    if (!isSafeName(key))
      return {
        error: `item ${i}: key ${JSON.stringify(key)} cannot be part of a unit name (letters, digits, ".", "_" and "-", starting with a letter or digit)`,
        index: i,
      };
    const before = seen.get(key);
    if (before !== undefined)
      return { error: `item ${i}: key ${JSON.stringify(key)} repeats item ${before}`, index: i };
    seen.set(key, i);
    items.push({ key, value: v });
  }
  return { items };
}

function typeOf(v: unknown): string {
  return v === null ? 'null' : Array.isArray(v) ? 'a list' : typeof v === 'object' ? 'an object' : `a ${typeof v}`;
}

/** The text an item path stands for: `key`, `value` (JSON unless a string), `value.<field>`. */
export function eachValue(item: Item, path: string): string | undefined {
  const text = (v: unknown) => (v === undefined ? undefined : typeof v === 'string' ? v : JSON.stringify(v));
  if (path === 'key') return item.key;
  if (path === 'value') return text(item.value);
  const field = path.slice('value.'.length);
  const v = item.value;
  if (!v || typeof v !== 'object' || Array.isArray(v)) return undefined;
  return Object.hasOwn(v, field) ? text((v as Record<string, unknown>)[field]) : undefined;
}

/** The first item path a spec uses that this item has no value for. */
function missingPath(item: Item, paths: string[]): string | undefined {
  return paths.find((p) => eachValue(item, p) === undefined);
}

/** A unit document's forEach, parsed: its source, or what is wrong with it (a field path to point at). */
export function parseForEach(
  doc: UnitDoc,
  each: string[],
): { source?: ForEachSource; problems: { message: string; path: (string | number)[] }[] } {
  const fe = doc.forEach;
  if (fe === undefined)
    return {
      problems: each.length
        ? [{ message: `\${{ each.${each[0]} }} is only defined in a unit with forEach`, path: ['spec'] }]
        : [],
    };
  if (typeof fe === 'string') {
    const from = wholeReference(fe);
    if (!from)
      return {
        problems: [{ message: `forEach ${JSON.stringify(fe)} is not one output reference`, path: ['forEach'] }],
      };
    return { source: { from }, problems: [] };
  }
  const r = itemsOf(fe);
  if ('error' in r) return { problems: [{ message: `forEach ${r.error}`, path: ['forEach', r.index ?? 0] }] };
  const problems = r.items.flatMap((item, i) => {
    const p = missingPath(item, each);
    return p
      ? [{ message: `forEach item ${i} (${item.key}) has no ${p} for \${{ each.${p} }}`, path: ['forEach', i] }]
      : [];
  });
  return { source: { list: fe }, problems };
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
