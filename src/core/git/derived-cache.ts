import { createHash } from 'node:crypto';
import { readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { cachesOff, keepNewest, writeWhole } from '../util/cache-files.js';

/**
 * What nyl derives from git objects — parsed and validated documents, tree listings — kept between
 * commands in `<git dir>/nyl/cache/`, so that a second command in the same clone does not parse
 * and validate the same objects again. Objects never change: an entry keyed by their ids stays
 * right for as long as the same nyl reads it, and every key includes the build (a new nyl misses).
 * An entry is written whole (a temporary file renamed over it) and read whole or not at all:
 * anything that cannot be read is a miss, never an error. At most KEEP entries of a kind stay.
 * `NYL_CACHE=0` turns it off.
 */
export class DerivedCache {
  private static readonly KEEP = 8;
  private build?: string;

  constructor(private readonly dir: string | undefined) {}

  static at(commonDir: string): DerivedCache {
    return new DerivedCache(cachesOff() ? undefined : join(commonDir, 'nyl', 'cache'));
  }

  private file(kind: string, key: string): string {
    this.build ??= buildId();
    const h = createHash('sha256').update(`${this.build}\0${kind}\0${key}`).digest('hex').slice(0, 32);
    return join(this.dir as string, `${kind}-${h}.json`);
  }

  get<T>(kind: string, key: string): T | undefined {
    if (!this.dir) return undefined;
    try {
      const entry = JSON.parse(readFileSync(this.file(kind, key), 'utf8')) as { key?: string; value?: T };
      return entry.key === key ? entry.value : undefined;
    } catch {
      return undefined;
    }
  }

  set(kind: string, key: string, value: unknown): void {
    if (!this.dir) return;
    if (writeWhole(this.file(kind, key), JSON.stringify({ key, value })))
      keepNewest(this.dir, `${kind}-`, DerivedCache.KEEP);
  }
}

/**
 * Which nyl this is: the CLI bundle's hash where its entry (cli-loader.ts) said it, and the running
 * script and this module, as files (a rebuild changes both).
 */
function buildId(): string {
  const parts: string[] = [String((globalThis as Record<symbol, unknown>)[Symbol.for('nyl.build')] ?? '')];
  for (const path of [process.argv[1], safePath(import.meta.url)]) {
    const st = path ? statSync(path, { throwIfNoEntry: false }) : undefined;
    parts.push(`${path}:${st?.size ?? ''}:${st?.mtimeMs ?? ''}`);
  }
  return parts.join('|');
}

function safePath(url: string): string | undefined {
  try {
    return fileURLToPath(url);
  } catch {
    return undefined;
  }
}

/** Whether a value survives JSON as it is (no NaN, ±Infinity, -0 or __proto__ key): only then is it cached. */
export function jsonExact(v: unknown): boolean {
  if (typeof v === 'number') return Number.isFinite(v) && !Object.is(v, -0);
  if (v === null || typeof v === 'string' || typeof v === 'boolean') return true;
  if (Array.isArray(v)) return v.every(jsonExact);
  if (typeof v === 'object') {
    for (const k of Object.keys(v as object))
      if (k === '__proto__' || !jsonExact((v as Record<string, unknown>)[k])) return false;
    return Object.getPrototypeOf(v) === Object.prototype;
  }
  return false;
}
