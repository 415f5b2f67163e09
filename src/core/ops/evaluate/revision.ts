import type { UnitConfig } from '../../config/model.js';
import type { Selection } from '../../resolve/select.js';
import { sha256Key } from '../../util/canonical.js';

/** `$NAME` and `${NAME}` in a script: the environment variables it reads. */
const VARIABLE = /\$\{?([A-Za-z_][A-Za-z0-9_]*)/g;

function strings(v: unknown, out: string[] = []): string[] {
  if (typeof v === 'string') out.push(v);
  else if (Array.isArray(v)) for (const x of v) strings(x, out);
  else if (v && typeof v === 'object') for (const x of Object.values(v)) strings(x, out);
  return out;
}

/** The names (never the values) of the environment variables a unit's tool gets from nyl's environment. */
function variableNames(u: UnitConfig, env: NodeJS.ProcessEnv): string[] {
  const names = new Set<string>();
  if (u.doc.kind === 'Command')
    for (const s of strings(u.doc.spec)) for (const m of s.matchAll(VARIABLE)) names.add(m[1] as string);
  // OpenTofu and Terraform read TF_VAR_*, TF_WORKSPACE, TF_CLI_ARGS… from the environment.
  else if (u.doc.kind === 'OpenTofu' || u.doc.kind === 'Terraform')
    for (const k of Object.keys(env)) if (k.startsWith('TF_')) names.add(k);
  return [...names].filter((n) => env[n] !== undefined).sort();
}

/**
 * A unit's configuration revision (seed 004): its launch settings — kind, spec as configured,
 * timeout, dependencies, a configured list's item — and the names of the environment variables it reads that are set. No
 * value enters it, so a rotated secret keeps the revision while a changed setting does not.
 */
export function unitRevision(u: UnitConfig, env: NodeJS.ProcessEnv = process.env): string {
  return sha256Key({
    kind: u.doc.kind,
    name: u.doc.name,
    spec: u.doc.spec,
    timeout: u.doc.timeout ?? null,
    needs: u.deps,
    // An instance's item is configuration when the list is written in it (not when an output made it).
    item: u.instance && u.forEach && 'list' in u.forEach ? (u.instance.item.value ?? null) : null,
    variables: variableNames(u, env),
  }).slice(0, 19);
}

/** The revision of a selection of units: one digest over theirs, in name order. */
export function selectionRevision(sel: Selection, units: Iterable<string>): string {
  const list = [...units].sort().map((n) => {
    const u = sel.units.get(n);
    return [n, u ? unitRevision(u) : ''];
  });
  return sha256Key(list).slice(7, 19);
}
