import { AsyncLocalStorage } from 'node:async_hooks';
import { closeSync, fstatSync, openSync, readSync } from 'node:fs';
import { masker } from '../util/mask.js';

/**
 * The output so far of each running unit, for the heartbeat: a run killed mid-unit still leaves
 * its last output on its run ref. The unit is known from the async context its execution runs in
 * (`asUnit`), so drivers need not pass it down to every tool they start; the latest tool of a unit
 * (init, then apply) is the one whose output shows.
 */
const current = new AsyncLocalStorage<string>();
const files = new Map<string, string>();

/** The bytes of a running unit's output a heartbeat carries. */
export const LIVE_TAIL_BYTES = 4096;

export function asUnit<T>(unit: string, fn: () => Promise<T>): Promise<T> {
  return current.run(unit, fn);
}

/** Marks `path` as the output file of the unit running in this context; the returned call ends it. */
export function watchLiveLog(path: string): () => void {
  const unit = current.getStore();
  if (unit === undefined) return () => undefined;
  files.set(unit, path);
  return () => {
    if (files.get(unit) === path) files.delete(unit);
  };
}

/** The last bytes a running unit's tools wrote, masked; undefined when none is running. */
export function liveTail(unit: string, bytes = LIVE_TAIL_BYTES): string | undefined {
  const path = files.get(unit);
  if (!path) return undefined;
  let fd: number | undefined;
  try {
    fd = openSync(path, 'r');
    const size = fstatSync(fd).size;
    const n = Math.min(size, bytes);
    const buf = Buffer.alloc(n);
    readSync(fd, buf, 0, n, size - n);
    const text = buf.toString('utf8');
    return size > n ? masker.maskPiece(text) : masker.mask(text);
  } catch {
    return undefined;
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
}
