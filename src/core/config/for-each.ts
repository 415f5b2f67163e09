import { type Reference, wholeReference } from './references.js';
import { isSafeName, type UnitDoc } from './schema.js';

/**
 * A mapped unit's `forEach` as configured (resolve/for-each.ts expands it): where its items come
 * from, each item's key, an instance's name, and the values `${{ each.* }}` takes from an item.
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
export function missingPath(item: Item, paths: string[]): string | undefined {
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
