import type { $ZodType } from 'zod/v4/core';

/**
 * Validation of well-formed documents without zod's per-value machinery: the zod schema is
 * compiled once into plain functions for the kinds of schema configuration and state documents use
 * (strict and loose objects, strings, numbers, booleans, literals, enums, optional and nullable
 * values, arrays, unions, records). A value gets what zod would give it (the same output, keys in
 * zod's order) or undefined, and then
 * zod itself validates it, so every problem is zod's: this path only has to be right for values
 * that are valid. The checks are zod's own (patterns, lengths, refinements), run as zod runs them.
 */

/** Returns the value zod's parse would, or NO when the value must go to zod. */
type Validator = (v: unknown) => unknown;
const NO: unique symbol = Symbol('ask zod');

interface CheckDef {
  check?: string;
  when?: (payload: Payload) => boolean;
  abort?: boolean;
}
interface Payload {
  value: unknown;
  issues: unknown[];
}
interface Check {
  _zod: { def: CheckDef; check: (payload: Payload) => unknown };
}
interface Def {
  type: string;
  checks?: Check[];
  [key: string]: unknown;
}

const defOf = (schema: unknown): Def | undefined => (schema as { _zod?: { def?: Def } })?._zod?.def;

/** Runs zod's checks the way zod does; false when one finds an issue, changes the value, or is async. */
function checksPass(checks: Check[], value: unknown): boolean {
  const payload: Payload = { value, issues: [] };
  for (const c of checks) {
    const def = c._zod.def;
    if (def.when && !def.when(payload)) continue;
    const r = c._zod.check(payload);
    if (r instanceof Promise || payload.issues.length || payload.value !== value) return false;
  }
  return true;
}

/** The def's own keys beyond these mean a feature this compiler does not know (coercion, say). */
function onlyKeys(def: Def, allowed: string[]): boolean {
  return Object.keys(def).every((k) => allowed.includes(k) || def[k] === undefined);
}

function compile(schema: unknown): Validator | undefined {
  const def = defOf(schema);
  if (!def) return undefined;
  const checks = def.checks ?? [];
  const withChecks =
    (f: Validator): Validator =>
    (v) => {
      const out = f(v);
      return out === NO || !checks.length || checksPass(checks, out) ? out : NO;
    };
  switch (def.type) {
    case 'string':
      if (!onlyKeys(def, ['type', 'checks', 'coerce']) || def.coerce) return undefined;
      return withChecks((v) => (typeof v === 'string' ? v : NO));
    case 'number':
      // zod's number takes finite numbers only (int, min and max are its checks); a custom `error`
      // only words the message, and an invalid value goes to zod anyway.
      if (!onlyKeys(def, ['type', 'checks', 'coerce', 'error']) || def.coerce) return undefined;
      return withChecks((v) => (typeof v === 'number' && Number.isFinite(v) ? v : NO));
    case 'boolean':
      if (!onlyKeys(def, ['type', 'checks', 'coerce']) || def.coerce) return undefined;
      return withChecks((v) => (typeof v === 'boolean' ? v : NO));
    case 'unknown':
      if (!onlyKeys(def, ['type', 'checks'])) return undefined;
      return withChecks((v) => v);
    case 'literal':
    case 'enum': {
      // zod's own set of the allowed values.
      if (!onlyKeys(def, ['type', 'checks', def.type === 'literal' ? 'values' : 'entries'])) return undefined;
      const values = (schema as { _zod: { values?: Set<unknown> } })._zod.values;
      if (!(values instanceof Set)) return undefined;
      return withChecks((v) => (values.has(v) ? v : NO));
    }
    case 'optional': {
      // Absent fields are the object's business; a present undefined goes to zod.
      if (!onlyKeys(def, ['type', 'checks', 'innerType']) || checks.length) return undefined;
      const inner = compile(def.innerType);
      return inner && ((v) => (v === undefined ? NO : inner(v)));
    }
    case 'array': {
      if (!onlyKeys(def, ['type', 'checks', 'element'])) return undefined;
      const element = compile(def.element);
      if (!element) return undefined;
      return withChecks((v) => {
        if (!Array.isArray(v)) return NO;
        const out: unknown[] = new Array(v.length);
        for (let i = 0; i < v.length; i++) {
          const x = element(v[i]);
          if (x === NO) return NO;
          out[i] = x;
        }
        return out;
      });
    }
    case 'union': {
      // zod returns the first option that accepts the value. An option this path refuses is asked
      // of zod before a later one is taken (a refusal here is not always zod's).
      if (!onlyKeys(def, ['type', 'checks', 'options'])) return undefined;
      const options = def.options as { safeParse?: (v: unknown) => { success: boolean } }[];
      const compiledOptions = options.map(compile);
      if (!options.length || compiledOptions.some((o) => !o) || options.some((o) => !o.safeParse)) return undefined;
      return withChecks((v) => {
        for (let i = 0; i < options.length; i++) {
          const x = (compiledOptions[i] as Validator)(v);
          if (x !== NO) return x;
          if (options[i]?.safeParse?.(v).success) return NO;
        }
        return NO;
      });
    }
    case 'record': {
      // Records with plain string keys: zod copies the own keys, in order, each value validated.
      if (!onlyKeys(def, ['type', 'checks', 'keyType', 'valueType'])) return undefined;
      const key = defOf(def.keyType);
      if (key?.type !== 'string' || key.checks?.length || key.coerce) return undefined;
      const value = compile(def.valueType);
      if (!value) return undefined;
      return withChecks((v) => {
        if (!isPlainObject(v)) return NO;
        const out: Record<string, unknown> = {};
        for (const k of Reflect.ownKeys(v as object)) {
          if (typeof k !== 'string' || k === '__proto__' || !Object.prototype.propertyIsEnumerable.call(v, k))
            return NO;
          const x = value((v as Record<string, unknown>)[k]);
          if (x === NO) return NO;
          out[k] = x;
        }
        return out;
      });
    }
    case 'object': {
      // Strict objects (catchall never: an unknown key is zod's to report) and loose ones
      // (catchall unknown: unknown keys kept, after the shape's, in the input's order).
      if (!onlyKeys(def, ['type', 'checks', 'shape', 'catchall'])) return undefined;
      const catchall = defOf(def.catchall);
      const loose = catchall?.type === 'unknown' && !catchall.checks?.length;
      if (catchall?.type !== 'never' && !loose) return undefined;
      const shape = def.shape as Record<string, unknown>;
      const fields: { key: string; optional: boolean; validate: Validator }[] = [];
      for (const key of Object.keys(shape)) {
        const field = defOf(shape[key]);
        const validate = compile(shape[key]);
        // zod asks `key in input`: a key Object.prototype has would be present when absent.
        if (!validate || !field || key in Object.prototype) return undefined;
        fields.push({ key, optional: field.type === 'optional', validate });
      }
      const known = new Set(fields.map((f) => f.key));
      return withChecks((v) => {
        if (!isPlainObject(v)) return NO;
        const input = v as Record<string, unknown>;
        let present = 0;
        const out: Record<string, unknown> = {};
        for (const f of fields) {
          if (!Object.hasOwn(input, f.key)) {
            if (!f.optional) return NO;
            continue;
          }
          present++;
          const x = f.validate(input[f.key]);
          if (x === NO) return NO;
          out[f.key] = x;
        }
        const keys = Object.keys(input);
        if (Reflect.ownKeys(input).length !== keys.length) return NO;
        if (!loose) return present === keys.length ? out : NO;
        for (const k of keys) {
          if (known.has(k)) continue;
          if (k === '__proto__') return NO;
          out[k] = input[k];
        }
        return out;
      });
    }
    case 'nullable': {
      if (!onlyKeys(def, ['type', 'checks', 'innerType']) || checks.length) return undefined;
      const inner = compile(def.innerType);
      return inner && ((v) => (v === null ? null : inner(v)));
    }
    default:
      return undefined;
  }
}

function isPlainObject(v: unknown): boolean {
  if (typeof v !== 'object' || v === null || Array.isArray(v)) return false;
  const proto = Object.getPrototypeOf(v);
  return proto === Object.prototype || proto === null;
}

const compiled = new WeakMap<object, Validator | null>();

/**
 * What `schema.safeParse(value)` gives as data, when this path knows the schema and the value is
 * valid; undefined otherwise (then ask zod).
 */
export function validFast(schema: $ZodType, value: unknown): { data: unknown } | undefined {
  let validate = compiled.get(schema);
  if (validate === undefined) {
    validate = compile(schema) ?? null;
    compiled.set(schema, validate);
  }
  if (!validate) return undefined;
  const data = validate(value);
  return data === NO ? undefined : { data };
}
