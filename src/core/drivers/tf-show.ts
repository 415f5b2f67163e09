import type { OutputChange, PlannedChanges, ResourceAction, ResourceChange } from '../changes/model.js';
import { canonicalJson, sha256Key } from '../util/canonical.js';

/**
 * The changes of a saved plan from `show -json PLANFILE`: addresses, actions, the names of the
 * attributes that change, and a digest of the planned values. The JSON holds every value in clear
 * (sensitive ones and the variables too): it is read here and dropped, never kept or logged.
 */

// biome-ignore lint/suspicious/noExplicitAny: the tools' JSON plan representation
type Json = any;

const UNKNOWN = '(known after apply)';
const SENSITIVE = '(sensitive)';

/** The tools' action lists as one action; a no-op is none. */
function actionOf(actions: string[]): ResourceAction | undefined {
  const a = actions.join(',');
  if (a === 'delete,create' || a === 'create,delete') return 'replace';
  if (['create', 'update', 'delete', 'read', 'forget'].includes(a)) return a as ResourceAction;
  return undefined;
}

/** A planned value with what is unknown and what is sensitive replaced by a word: the same plan, the same value. */
export function normalised(value: Json, unknown: Json, sensitive: Json): Json {
  if (sensitive === true) return SENSITIVE;
  if (unknown === true) return UNKNOWN;
  if (Array.isArray(value) || Array.isArray(unknown)) {
    const n = Math.max(value?.length ?? 0, Array.isArray(unknown) ? unknown.length : 0);
    return Array.from({ length: n }, (_, i) => normalised(value?.[i], unknown?.[i], sensitive?.[i]));
  }
  if (isObject(value) || isObject(unknown)) {
    const keys = [...new Set([...Object.keys(value ?? {}), ...Object.keys(isObject(unknown) ? unknown : {})])];
    return Object.fromEntries(keys.sort().map((k) => [k, normalised(value?.[k], unknown?.[k], sensitive?.[k])]));
  }
  return value ?? null;
}

const isObject = (v: Json) => typeof v === 'object' && v !== null && !Array.isArray(v);

/** Top-level attributes whose value (or sensitivity) changes, or that become unknown. */
function changedAttributes(c: Json): string[] {
  const before = isObject(c.before) ? c.before : {};
  const after = isObject(c.after) ? c.after : {};
  const unknown = isObject(c.after_unknown) ? c.after_unknown : {};
  const keys = new Set([...Object.keys(before), ...Object.keys(after), ...Object.keys(unknown)]);
  const differs = (k: string) =>
    unknown[k] === true ||
    canonicalJson(before[k] ?? null) !== canonicalJson(after[k] ?? null) ||
    canonicalJson(c.before_sensitive?.[k] ?? false) !== canonicalJson(c.after_sensitive?.[k] ?? false);
  return [...keys].filter(differs).sort();
}

function resourceChange(rc: Json, mask: (s: string) => string): ResourceChange | undefined {
  const c = rc.change ?? {};
  const action = actionOf(c.actions ?? []);
  if (!action) return undefined;
  const values = normalised(c.after, c.after_unknown, c.after_sensitive);
  // Known secrets are masked before the digest: a digest of a secret is not kept anywhere.
  const digest = sha256Key(mask(canonicalJson({ action, values }))).slice(7, 19);
  const attributes = action === 'update' || action === 'replace' ? changedAttributes(c) : [];
  const tainted =
    action === 'replace' && rc.action_reason === 'replace_because_tainted' ? { tainted: true as const } : {};
  // A deposed object (left by an interrupted create-before-destroy) shares its resource's address.
  const address = `${rc.address}${rc.deposed ? ` (deposed object ${rc.deposed})` : ''}`;
  // Names are masked too: an address can hold a value (for_each keys), and both sides of a review compare masked ones.
  return {
    address: mask(address),
    action,
    ...(attributes.length ? { attributes: attributes.map(mask) } : {}),
    ...tainted,
    digest,
  };
}

function outputChange(name: string, c: Json): OutputChange | undefined {
  const a = (c?.actions ?? []).join(',');
  if (a === 'create' || a === 'update' || a === 'delete') return { name, action: a };
  return undefined;
}

/** Parses `show -json` of a plan; throws on what is not one. */
export function planChanges(json: string, mask: (s: string) => string): PlannedChanges {
  const plan = JSON.parse(json) as Json;
  if (!isObject(plan) || !('format_version' in plan)) throw new Error('not a JSON plan (no format_version)');
  const resources = ((plan.resource_changes ?? []) as Json[])
    .map((rc) => resourceChange(rc, mask))
    .filter((r): r is ResourceChange => r !== undefined);
  const outputs = Object.entries((plan.output_changes ?? {}) as Record<string, Json>)
    .map(([name, c]) => outputChange(mask(name), c))
    .filter((o): o is OutputChange => o !== undefined);
  return { resources, outputs };
}
