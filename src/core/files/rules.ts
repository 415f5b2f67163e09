import { posix } from 'node:path';

/**
 * What a unit's execution key covers of the repository, as its spec names it (docs/kinds.md):
 * - `module`: a Terraform/OpenTofu module folder, every file under it but the tools' own
 *   (`.terraform/`, state files), and every local module it calls, transitively;
 * - `path`: a file, or every file under a folder (a var file, a Command's `files` entry);
 * - `glob`: the files a pattern matches (`scripts/**\/*.sh`);
 * - `script`: the file a script line starts with, when the commit holds one there.
 */
export interface FileRule {
  kind: 'module' | 'path' | 'glob' | 'script';
  /** Relative to the repository root, normalised (`./a//b/` is `a/b`; the root is ''). */
  pattern: string;
  /** The spec field that names it, for messages: `spec.module`, `spec.files.1`. */
  field: string;
}

const GLOB = /[*?[\]{}]/;

export const isGlob = (p: string) => GLOB.test(p);

/** A path as the commit's trees name it: no `./`, no doubled or trailing `/`; undefined outside the repository. */
export function normalPath(p: string): string | undefined {
  if (p.startsWith('/') || p.startsWith('~')) return undefined;
  const n = posix.normalize(p).replace(/\/+$/, '');
  if (n === '..' || n.startsWith('../')) return undefined;
  return n === '.' ? '' : n;
}

/**
 * The folder a rule's files are all under, known before anything resolves: the part before the
 * first segment holding a pattern character or an expression (`envs/${{ each.key }}` → `envs`).
 */
export function staticPrefix(rule: FileRule): string {
  const parts = rule.pattern.split('/');
  const dynamic = parts.findIndex((p) => isGlob(p) || p.includes('$'));
  if (dynamic < 0) return rule.pattern;
  return parts.slice(0, dynamic).join('/');
}

/** Interpreters whose first argument is the script they run (`bash scripts/deploy.sh`). */
const INTERPRETERS = new Set(['bash', 'sh', 'zsh', 'dash', 'python', 'python3', 'node', 'ruby', 'perl', 'pwsh']);

/**
 * The repository paths a script's lines start with: a first word with a `/` in it
 * (`./scripts/migrate.sh args`, `tools/x`), or an interpreter's script (`bash deploy.sh`). A word
 * without a `/` is a command bash looks up on PATH, never a file of the repository; words holding
 * variables or output references are not known before the script runs (an item's `${{ each.* }}`
 * is: it is kept, to be filled in per instance). Continuation lines are arguments.
 */
export function scriptPaths(script: string): string[] {
  if (!script.includes('/') && !/\b(bash|sh|zsh|dash|python3?|node|ruby|perl|pwsh)\b/.test(script)) return [];
  const out: string[] = [];
  let continued = false;
  for (const raw of script.split('\n')) {
    const line = raw.trim();
    const wasContinued = continued;
    continued = line.endsWith('\\');
    if (wasContinued || !line || line.startsWith('#')) continue;
    // An expression is one word (`${{ each.key }}` as `${{each.key}}`): an item's paths are followed.
    const compact = line.replace(/\$\{\{\s*(.*?)\s*\}\}/g, (_, e: string) => `\${{${e}}}`);
    const words = compact.split(/\s+/).filter((w) => !/^[A-Za-z_][A-Za-z0-9_]*=/.test(w));
    let word = words[0];
    let viaInterpreter = false;
    if (word && INTERPRETERS.has(word)) {
      word = words.slice(1).find((w) => !w.startsWith('-'));
      viaInterpreter = true;
    }
    if (!word) continue;
    word = word.replace(/^(['"])(.*)\1$/, '$2').replace(/[;&|]+$/, '');
    const fixed = word.replace(/\$\{\{each\.[A-Za-z0-9_.-]+\}\}/g, 'x');
    if (/[$`*?[\]{}()<>;&|'"]/.test(fixed) || (!viaInterpreter && !word.includes('/'))) continue;
    const p = normalPath(word);
    if (p && !out.includes(p)) out.push(p);
  }
  return out;
}

/** Kinds whose key covers files of the repository (an OciImage's source digest is its identity). */
export const usesFiles = (kind: string) => kind === 'Command' || kind === 'Terraform' || kind === 'OpenTofu';

const SCRIPT_FIELDS = ['run', 'check', 'inspect', 'destroy'] as const;

/** Rules by spec object: a configuration's specs are read many times (selection, resolution, the checks). */
const ruleMemo = new WeakMap<object, { kind: string; rules: FileRule[] }>();

/** The rules of a unit's spec: what its key covers of the commit. OciImage: none (its source digest is its identity). */
export function rulesOf(kind: string, spec: Record<string, unknown>): FileRule[] {
  const hit = ruleMemo.get(spec);
  if (hit?.kind === kind) return hit.rules;
  const rules = computeRules(kind, spec);
  ruleMemo.set(spec, { kind, rules });
  return rules;
}

function computeRules(kind: string, spec: Record<string, unknown>): FileRule[] {
  if (kind === 'Terraform' || kind === 'OpenTofu') {
    const rules: FileRule[] = [];
    const module = typeof spec.module === 'string' ? normalPath(spec.module) : undefined;
    if (module !== undefined) rules.push({ kind: 'module', pattern: module, field: 'spec.module' });
    const varFiles = Array.isArray(spec.varFiles) ? spec.varFiles : [];
    varFiles.forEach((f, i) => {
      const p = typeof f === 'string' ? normalPath(f) : undefined;
      if (p !== undefined) rules.push({ kind: 'path', pattern: p, field: `spec.varFiles.${i}` });
    });
    return rules;
  }
  if (kind !== 'Command') return [];
  if (Array.isArray(spec.files))
    return spec.files.flatMap((f, i): FileRule[] => {
      const p = typeof f === 'string' ? normalPath(f) : undefined;
      if (p === undefined) return [];
      return [{ kind: isGlob(p) ? 'glob' : 'path', pattern: p, field: `spec.files.${i}` }];
    });
  const rules: FileRule[] = [];
  for (const field of SCRIPT_FIELDS) {
    const script = spec[field];
    if (typeof script !== 'string') continue;
    for (const p of scriptPaths(script))
      if (!rules.some((r) => r.pattern === p)) rules.push({ kind: 'script', pattern: p, field: `spec.${field}` });
  }
  return rules;
}
