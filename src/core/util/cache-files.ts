import { mkdirSync, readdirSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';

/**
 * Files of nyl's caches (the derived cache in a clone, the CLI's code cache per user): each written
 * whole or not at all, the newest few kept. A cache that cannot be written is only slower, so
 * nothing here throws. `NYL_CACHE=0` (or `off`) turns every cache off.
 */
export function cachesOff(env: NodeJS.ProcessEnv = process.env): boolean {
  return env.NYL_CACHE === '0' || env.NYL_CACHE === 'off';
}

/**
 * Writes `data` to `target` through a temporary file renamed over it; a part written (a full disk)
 * goes; `mode` before the umask, as `writeFileSync` takes it. Whether it was written.
 */
export function writeWhole(target: string, data: string | Uint8Array, mode = 0o666): boolean {
  const tmp = `${target}.${process.pid}.${Math.random().toString(36).slice(2)}.tmp`;
  try {
    try {
      writeFileSync(tmp, data, { mode });
    } catch (e) {
      // The folder is made once, by the first write that finds it missing.
      if ((e as NodeJS.ErrnoException).code !== 'ENOENT') throw e;
      mkdirSync(dirname(target), { recursive: true });
      writeFileSync(tmp, data, { mode });
    }
    renameSync(tmp, target);
    return true;
  } catch {
    try {
      rmSync(tmp, { force: true });
    } catch {
      // Nothing more to do: the next write tries again.
    }
    return false;
  }
}

/**
 * Keeps the newest `keep` files of `dir` named `prefix…` (temporary files a killed writer left
 * among them, so they go too).
 */
export function keepNewest(dir: string, prefix: string, keep: number): void {
  try {
    const mine = readdirSync(dir).filter((f) => f.startsWith(prefix));
    if (mine.length <= keep) return;
    const dated = mine.map((f) => ({ f, t: statSync(join(dir, f), { throwIfNoEntry: false })?.mtimeMs ?? 0 }));
    dated.sort((a, b) => b.t - a.t);
    for (const { f } of dated.slice(keep)) rmSync(join(dir, f), { force: true });
  } catch {
    // Pruned next time.
  }
}
