import type { UnitConfig } from '../config/load.js';
import { eachInput, type Reference, substitute } from '../config/references.js';
import { sha256Key } from '../util/canonical.js';
import { parseDuration } from '../util/duration.js';
import { eachValue } from './for-each.js';

export const DEFAULT_TIMEOUT_MS = 30 * 60_000;

/** The fully resolved unit of one run; its execution key is what decides whether to execute. */
export interface DesiredUnit {
  schema: 'nyl.desired-unit/v1';
  name: string;
  kind: string;
  uid: string;
  executionKey: string;
  spec: Record<string, unknown>;
  /** Resolved output references by expression (`units.db.outputs.url`). */
  inputs: Record<string, string>;
  needs: string[];
  timeout: string;
}

export type Outputs = Record<string, string>;

export class MissingOutputError extends Error {
  constructor(
    readonly unit: string,
    readonly ref: string,
    readonly key: string,
  ) {
    super(`${unit}: ${ref} has no output ${key}`);
  }
}

/**
 * Resolves a unit against upstream outputs. The key covers kind, name, spec and the
 * resolved input values; never the process environment (secrets stay out of it) nor timeout.
 */
export function resolveUnit(u: UnitConfig, uid: string, outputsOf: (unit: string) => Outputs | undefined): DesiredUnit {
  const inputs: Record<string, string> = {};
  for (const r of u.refs) {
    const outs = outputsOf(r.unit);
    const v = outs?.[r.key];
    if (v === undefined) throw new MissingOutputError(u.doc.name, r.unit, r.key);
    inputs[`units.${r.unit}.outputs.${r.key}`] = v;
  }
  // An instance's item: `each.key`, `each.value…` are inputs like outputs (variables in scripts).
  const item = u.instance?.item;
  const eachOf = (path: string) => (item ? eachValue(item, path) : undefined);
  for (const p of u.each ?? []) {
    const v = eachOf(p);
    if (v !== undefined) inputs[eachInput(p)] = v;
  }
  // Command scripts keep their references (they reach bash as variables, never as code); every
  // other kind's spec is data, so references there are replaced by their values.
  const raw = u.doc.spec as Record<string, unknown>;
  const spec =
    u.doc.kind === 'Command'
      ? raw
      : (substituteDeep(raw, (r) => inputs[`units.${r.unit}.outputs.${r.key}`] ?? r.text, eachOf) as Record<
          string,
          unknown
        >);
  const executionKey = sha256Key({ kind: u.doc.kind, name: u.doc.name, spec, inputs });
  return {
    schema: 'nyl.desired-unit/v1',
    name: u.doc.name,
    kind: u.doc.kind,
    uid,
    executionKey,
    spec,
    inputs,
    needs: u.deps,
    timeout: u.doc.timeout ?? '30m',
  };
}

function substituteDeep(
  v: unknown,
  value: (r: Reference) => string,
  each: (path: string) => string | undefined,
): unknown {
  if (typeof v === 'string') return substitute(v, value, each);
  if (Array.isArray(v)) return v.map((x) => substituteDeep(x, value, each));
  if (v && typeof v === 'object')
    return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, substituteDeep(x, value, each)]));
  return v;
}

export function timeoutMs(d: DesiredUnit): number {
  return parseDuration(d.timeout) ?? DEFAULT_TIMEOUT_MS;
}
