import { eachValue } from '../config/for-each.js';
import type { UnitConfig } from '../config/model.js';
import { eachInput, type Reference, substitute } from '../config/references.js';
import { rulesOf, usesFiles } from '../files/rules.js';
import { changedPaths, type FileIds, type FileProblem, type SourceFiles } from '../files/source-files.js';
import { sha256Key } from '../util/canonical.js';
import { parseDuration } from '../util/duration.js';
import type { Outputs } from './outputs.js';

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
  /**
   * The files the unit uses, by path, with their object ids in the source commit (files/rules.ts):
   * part of the key, so a change to any of them executes the unit. Absent for a kind that uses
   * none (OciImage) and from documents of a nyl before file keys.
   */
  files?: FileIds;
}

export class MissingOutputError extends Error {
  constructor(
    readonly unit: string,
    readonly ref: string,
    readonly key: string,
  ) {
    super(`${unit}: ${ref} has no output ${key}`);
  }
}

/** The files a unit names cannot be found in the source commit (an instance's paths, known only once resolved). */
export class UnitFilesError extends Error {
  constructor(
    readonly unit: string,
    readonly problems: FileProblem[],
  ) {
    super(`${unit}: ${problems.map((p) => `${p.field}: ${p.message}`).join('; ')}`);
  }
}

/**
 * Resolves a unit against upstream outputs. The key covers kind, name, spec, the resolved input
 * values and, given the source commit's files, the identities of the files the unit uses; never
 * the process environment (secrets stay out of it) nor timeout.
 */
export function resolveUnit(
  u: UnitConfig,
  uid: string,
  outputsOf: (unit: string) => Outputs | undefined,
  sources?: SourceFiles,
): DesiredUnit {
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
  const files = sources && usesFiles(u.doc.kind) ? filesOf(u, spec, eachOf, sources) : undefined;
  const doc = { kind: u.doc.kind, name: u.doc.name, spec, inputs, ...(files ? { files } : {}) };
  return {
    schema: 'nyl.desired-unit/v1',
    ...doc,
    uid,
    executionKey: executionKeyOf(doc),
    needs: u.deps,
    timeout: u.doc.timeout ?? '30m',
  };
}

/**
 * The identities of the files a unit's resolved spec names. A Command's spec keeps its expressions
 * (they reach bash as variables), so its paths take its item's values here (`./${{ each.key }}.sh`).
 */
function filesOf(
  u: UnitConfig,
  spec: Record<string, unknown>,
  each: (path: string) => string | undefined,
  sources: SourceFiles,
): FileIds {
  const named = u.doc.kind === 'Command' && u.instance ? withItem(spec, each) : spec;
  const { files, problems } = sources.identity(rulesOf(u.doc.kind, named));
  if (problems.length) throw new UnitFilesError(u.doc.name, problems);
  return files;
}

/** A Command spec's scripts and files with `${{ each.* }}` replaced by the item's values (output references kept). */
function withItem(spec: Record<string, unknown>, each: (path: string) => string | undefined): Record<string, unknown> {
  const fill = (v: unknown) => (typeof v === 'string' ? substitute(v, (r) => r.text, each) : v);
  const out: Record<string, unknown> = { ...spec };
  for (const k of ['run', 'check', 'inspect', 'destroy']) if (k in out) out[k] = fill(out[k]);
  if (Array.isArray(out.files)) out.files = out.files.map(fill);
  return out;
}

type KeyedDocument = Pick<DesiredUnit, 'kind' | 'name' | 'spec' | 'inputs' | 'files'>;

/** A desired document's execution key: its files count once it uses any (a unit that uses none keeps the key it had). */
export function executionKeyOf(d: KeyedDocument): string {
  const files = d.files && Object.keys(d.files).length ? d.files : undefined;
  return sha256Key({ kind: d.kind, name: d.name, spec: d.spec, inputs: d.inputs, ...(files ? { files } : {}) });
}

const legacyKeys = new WeakMap<DesiredUnit, string>();

/** The key a nyl before file keys gave the same document. */
function legacyKeyOf(d: DesiredUnit): string {
  let k = legacyKeys.get(d);
  if (k === undefined) {
    k = sha256Key({ kind: d.kind, name: d.name, spec: d.spec, inputs: d.inputs });
    legacyKeys.set(d, k);
  }
  return k;
}

/**
 * How a recorded key (a receipt's, a checkpoint's, a failure's) stands to a desired document:
 * `same`; `adopt` when a nyl before file keys recorded it (no identities with it) for a document
 * otherwise equal, so that upgrading never executes anything again (the identities are recorded
 * instead); else `different`.
 */
export function keyMatch(d: DesiredUnit, key: string, files: FileIds | undefined): 'same' | 'adopt' | 'different' {
  if (key === d.executionKey) return 'same';
  const keyed = d.files && Object.keys(d.files).length > 0;
  if (files === undefined && keyed && key === legacyKeyOf(d)) return 'adopt';
  return 'different';
}

/**
 * What changed since a receipt, when it recorded its files: the paths whose identity differs, and
 * whether the rest of the document (spec, inputs) changed too.
 */
export function changeSince(
  d: DesiredUnit,
  receipt: { executionKey: string; files?: FileIds },
): { files: string[]; document: boolean } | undefined {
  if (!receipt.files || !d.files) return undefined;
  const files = changedPaths(receipt.files, d.files);
  if (!files.length) return undefined;
  return { files, document: executionKeyOf({ ...d, files: receipt.files }) !== receipt.executionKey };
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

/** `{ files }` to spread into a receipt or checkpoint, when there are identities to record. */
export function withFiles(files: FileIds | undefined): { files?: FileIds } {
  return files ? { files } : {};
}
