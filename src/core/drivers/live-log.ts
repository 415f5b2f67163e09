import { closeSync, fstatSync, openSync, readSync } from 'node:fs';
import { masker } from '../util/mask.js';

/**
 * The output so far of each running unit, for the heartbeat: a run killed mid-unit still leaves
 * its last output on its run ref. Drivers name the unit a tool runs for (`liveUnit`); the latest
 * tool of a unit (init, then apply) is the one whose output shows. (Not an AsyncLocalStorage: on
 * Node 20 it hooks every promise of the process, a cost paid per unit of a long run.)
 */
const files = new Map<string, string>();

/** The bytes of a running unit's output a heartbeat carries. */
export const LIVE_TAIL_BYTES = 4096;

/** Marks `path` as the output file of `unit`'s running tool; the returned call ends it. */
export function watchLiveLog(unit: string | undefined, path: string): () => void {
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
