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

/** Wraps a validator so that its value also passes the schema's own checks. */
const withChecks =
  (checks: Check[], f: Validator): Validator =>
  (v) => {
    const out = f(v);
    return out === NO || !checks.length || checksPass(checks, out) ? out : NO;
  };

/** Compiles one kind of schema (its def); undefined when it uses a feature this path does not know. */
type Compiler = (def: Def, checks: Check[], schema: unknown) => Validator | undefined;

/** A scalar of a JS type: strings, finite numbers (a custom `error` only words the message), booleans, anything. */
const scalar =
  (ok: (v: unknown) => boolean, keys: string[]): Compiler =>
  (def, checks) => {
    if (!onlyKeys(def, keys) || def.coerce) return undefined;
    return withChecks(checks, (v) => (ok(v) ? v : NO));
  };

/** Literals and enums: zod's own set of the allowed values. */
const values: Compiler = (def, checks, schema) => {
  if (!onlyKeys(def, ['type', 'checks', def.type === 'literal' ? 'values' : 'entries'])) return undefined;
  const allowed = (schema as { _zod: { values?: Set<unknown> } })._zod.values;
  if (!(allowed instanceof Set)) return undefined;
  return withChecks(checks, (v) => (allowed.has(v) ? v : NO));
};

/** Optional and nullable wrap one inner schema; an absent field is the object's business. */
const wrapped =
  (type: 'optional' | 'nullable'): Compiler =>
  (def, checks) => {
    if (!onlyKeys(def, ['type', 'checks', 'innerType']) || checks.length) return undefined;
    const inner = compile(def.innerType);
    if (!inner) return undefined;
    // A present undefined goes to zod; a null is a nullable's value.
    return type === 'optional' ? (v) => (v === undefined ? NO : inner(v)) : (v) => (v === null ? null : inner(v));
  };

const array: Compiler = (def, checks) => {
  if (!onlyKeys(def, ['type', 'checks', 'element'])) return undefined;
  const element = compile(def.element);
  if (!element) return undefined;
  return withChecks(checks, (v) => {
    if (!Array.isArray(v)) return NO;
    const out: unknown[] = new Array(v.length);
    for (let i = 0; i < v.length; i++) {
      const x = element(v[i]);
      if (x === NO) return NO;
      out[i] = x;
    }
    return out;
  });
};

/** A fixed-length tuple (no rest, no optional items): exactly its items, each its own. */
const tuple: Compiler = (def, checks) => {
  if (!onlyKeys(def, ['type', 'checks', 'items', 'rest']) || def.rest) return undefined;
  const defs = def.items as unknown[];
  if (defs.some((d) => defOf(d)?.type === 'optional')) return undefined;
  const items = defs.map(compile);
  if (items.some((i) => !i)) return undefined;
  return withChecks(checks, (v) => {
    if (!Array.isArray(v) || v.length !== items.length) return NO;
    const out: unknown[] = new Array(v.length);
    for (let i = 0; i < v.length; i++) {
      const x = (items[i] as Validator)(v[i]);
      if (x === NO) return NO;
      out[i] = x;
    }
    return out;
  });
};

/**
 * zod returns the first option that accepts the value. An option this path refuses is asked
 * of zod before a later one is taken (a refusal here is not always zod's).
 */
const union: Compiler = (def, checks) => {
  if (!onlyKeys(def, ['type', 'checks', 'options'])) return undefined;
  const options = def.options as { safeParse?: (v: unknown) => { success: boolean } }[];
  const compiledOptions = options.map(compile);
  if (!options.length || compiledOptions.some((o) => !o) || options.some((o) => !o.safeParse)) return undefined;
  return withChecks(checks, (v) => {
    for (let i = 0; i < options.length; i++) {
      const x = (compiledOptions[i] as Validator)(v);
      if (x !== NO) return x;
      if (options[i]?.safeParse?.(v).success) return NO;
    }
    return NO;
  });
};

/** Records with plain string keys: zod copies the own keys, in order, each value validated. */
const record: Compiler = (def, checks) => {
  if (!onlyKeys(def, ['type', 'checks', 'keyType', 'valueType'])) return undefined;
  const key = defOf(def.keyType);
  if (key?.type !== 'string' || key.checks?.length || key.coerce) return undefined;
  const value = compile(def.valueType);
  if (!value) return undefined;
  return withChecks(checks, (v) => {
    if (!isPlainObject(v)) return NO;
    const out: Record<string, unknown> = {};
    for (const k of Reflect.ownKeys(v as object)) {
      if (typeof k !== 'string' || k === '__proto__' || !Object.prototype.propertyIsEnumerable.call(v, k)) return NO;
      const x = value((v as Record<string, unknown>)[k]);
      if (x === NO) return NO;
      out[k] = x;
    }
    return out;
  });
};

interface Field {
  key: string;
  optional: boolean;
  validate: Validator;
}

/** An object's fields, compiled; undefined when one cannot be (or shadows a key of Object.prototype). */
function fieldsOf(shape: Record<string, unknown>): Field[] | undefined {
  const fields: Field[] = [];
  for (const key of Object.keys(shape)) {
    const field = defOf(shape[key]);
    const validate = compile(shape[key]);
    // zod asks `key in input`: a key Object.prototype has would be present when absent.
    if (!validate || !field || key in Object.prototype) return undefined;
    fields.push({ key, optional: field.type === 'optional', validate });
  }
  return fields;
}

/** The shape's fields of an input, validated, in the shape's order; NO when one is missing or invalid. */
function shapeOf(
  fields: Field[],
  input: Record<string, unknown>,
): { out: Record<string, unknown>; present: number } | typeof NO {
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
  return { out, present };
}

/**
 * Strict objects (catchall never: an unknown key is zod's to report) and loose ones (catchall
 * unknown: unknown keys kept, after the shape's, in the input's order).
 */
const object: Compiler = (def, checks) => {
  if (!onlyKeys(def, ['type', 'checks', 'shape', 'catchall'])) return undefined;
  const catchall = defOf(def.catchall);
  const loose = catchall?.type === 'unknown' && !catchall.checks?.length;
  if (catchall?.type !== 'never' && !loose) return undefined;
  const fields = fieldsOf(def.shape as Record<string, unknown>);
  if (!fields) return undefined;
  const known = new Set(fields.map((f) => f.key));
  return withChecks(checks, (v) => {
    if (!isPlainObject(v)) return NO;
    const input = v as Record<string, unknown>;
    const shaped = shapeOf(fields, input);
    if (shaped === NO) return NO;
    const keys = Object.keys(input);
    if (Reflect.ownKeys(input).length !== keys.length) return NO;
    if (!loose) return shaped.present === keys.length ? shaped.out : NO;
    for (const k of keys) {
      if (known.has(k)) continue;
      if (k === '__proto__') return NO;
      shaped.out[k] = input[k];
    }
    return shaped.out;
  });
};

const COMPILERS: Record<string, Compiler> = {
  string: scalar((v) => typeof v === 'string', ['type', 'checks', 'coerce']),
  number: scalar((v) => typeof v === 'number' && Number.isFinite(v), ['type', 'checks', 'coerce', 'error']),
  boolean: scalar((v) => typeof v === 'boolean', ['type', 'checks', 'coerce']),
  unknown: scalar(() => true, ['type', 'checks']),
  literal: values,
  enum: values,
  tuple,
  optional: wrapped('optional'),
  nullable: wrapped('nullable'),
  array,
  union,
  record,
  object,
};

function compile(schema: unknown): Validator | undefined {
  const def = defOf(schema);
  if (!def || !Object.hasOwn(COMPILERS, def.type)) return undefined;
  return COMPILERS[def.type]?.(def, def.checks ?? [], schema);
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
