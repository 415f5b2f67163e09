import { type Dirent, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

/**
 * Shallow history, read from the files git keeps, without a process. State refs are fetched
 * depth 1 (their tips are the state), so a clone is shallow at nyl's own state commits as soon as
 * it has read an environment: that must not make it look like a shallow *source* checkout.
 */

/** The commits `<common dir>/shallow` lists: boundaries whose parents this clone does not have. */
export function shallowCommits(commonDir: string): string[] {
  let text: string;
  try {
    text = readFileSync(join(commonDir, 'shallow'), 'utf8');
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw e;
  }
  return text.split('\n').filter((l) => /^[0-9a-f]{40}([0-9a-f]{24})?$/.test(l));
}

/** What a state ref's commit tree is made of (docs/git-storage.md): nothing a source tree holds alone. */
const STATE_ENTRIES = new Set(['lease.json', 'run.json', 'environment.json', 'units', 'logs']);

/**
 * Whether a commit is one of nyl's state commits (lease, run, evidence, desired, observed): a
 * `nyl: ` subject and a root tree of state documents only. A source commit is neither.
 */
export function looksLikeStateCommit(message: string, rootNames: string[]): boolean {
  return message.startsWith('nyl: ') && rootNames.length > 0 && rootNames.every((n) => STATE_ENTRIES.has(n));
}

/**
 * Whether any local ref lies under one of `prefixes` (`refs/nyl/dev`), read from the loose ref
 * files and packed-refs. Undefined when the refs are not kept in files (reftable): unknown.
 */
export function hasRefsUnder(commonDir: string, prefixes: string[]): boolean | undefined {
  if (existsDir(join(commonDir, 'reftable'))) return undefined;
  for (const p of prefixes) if (hasFile(join(commonDir, p))) return true;
  let packed: string;
  try {
    packed = readFileSync(join(commonDir, 'packed-refs'), 'utf8');
  } catch {
    return false;
  }
  return prefixes.some((p) => packed.includes(` ${p}/`));
}

function existsDir(path: string): boolean {
  try {
    readdirSync(path);
    return true;
  } catch {
    return false;
  }
}

/** A file anywhere below `dir` (git may leave empty directories behind after deleting refs). */
function hasFile(dir: string): boolean {
  let entries: Dirent[];
  try {
    entries = readdirSync(dir, { withFileTypes: true });
  } catch {
    return false;
  }
  for (const e of entries) {
    if (e.isFile() && !e.name.endsWith('.lock')) return true;
    if (e.isDirectory() && hasFile(join(dir, e.name))) return true;
  }
  return false;
}
