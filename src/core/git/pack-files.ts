import { createHash, randomBytes } from 'node:crypto';
import { closeSync, fsyncSync, mkdirSync, openSync, renameSync, rmSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import * as zlib from 'node:zlib';
import type { BuiltPack, HashAlgo, PackEntry } from './objects.js';

/**
 * Packs written into a repository by nyl itself: the pack, then its version 2 index, each written
 * to a temporary file, synced, and renamed into objects/pack (the index last: git finds a pack by
 * its index, so a pack is never seen half written). It is what `git index-pack --stdin` does with
 * a pack nyl built, without a process per write: every object id, offset and CRC-32 is known here
 * already. git reads such a pack like its own (test/pack-files.test.ts: `verify-pack`, `fsck`).
 *
 * Where git must place packs itself (an object directory named by GIT_OBJECT_DIRECTORY, a shared
 * repository whose files get group permissions, a Node without zlib.crc32, a pack past 2 GiB),
 * `packDirOf` answers undefined (or `writePackFiles` false) and the caller runs index-pack.
 */

/** zlib.crc32 (Node 20.15+, 22.2+); undefined on older Nodes. */
export const crc32: ((data: Buffer, value?: number) => number) | undefined = (
  zlib as { crc32?: (data: Buffer, value?: number) => number }
).crc32;

const TWO_GIB = 2 ** 31;

/**
 * The objects/pack folder nyl may write packs into, or undefined when git must (see above).
 * `sharedRepository`: core.sharedRepository as git resolves it (any config file, `-c`, the
 * environment), '' when unset.
 */
export function packDirOf(
  commonDir: string,
  sharedRepository: string,
  env: NodeJS.ProcessEnv = process.env,
): string | undefined {
  if (!crc32 || env.GIT_OBJECT_DIRECTORY) return undefined;
  // Shared, it changes the files' permissions (group readable, or a mode of its own); `umask` and
  // false (in any of git's spellings) are the default.
  if (sharedRepository !== '' && !/^(umask|false|no|off|0)$/i.test(sharedRepository)) return undefined;
  return join(commonDir, 'objects', 'pack');
}

/** A version 2 pack index: fan-out, sorted ids, CRC-32s, offsets (large ones in a table of their own), checksums. */
export function packIndex(algo: HashAlgo, entries: PackEntry[], packHash: Buffer): Buffer {
  const hashLen = algo === 'sha256' ? 32 : 20;
  // Lower-case hex sorts as the bytes it spells.
  const sorted = [...entries].sort((a, b) => (a.oid < b.oid ? -1 : a.oid > b.oid ? 1 : 0));
  const n = sorted.length;
  const large = sorted.filter((e) => e.offset >= TWO_GIB).length;
  const idsAt = 8 + 256 * 4;
  const crcAt = idsAt + n * hashLen;
  const offAt = crcAt + n * 4;
  const largeAt = offAt + n * 4;
  const tailAt = largeAt + large * 8;
  const idx = Buffer.alloc(tailAt + 2 * hashLen);
  idx.writeUInt32BE(0xff744f63, 0);
  idx.writeUInt32BE(2, 4);
  const fanout = new Uint32Array(256);
  let nextLarge = 0;
  for (const [i, e] of sorted.entries()) {
    if (i > 0 && (sorted[i - 1] as PackEntry).oid === e.oid) throw new Error(`object ${e.oid} is twice in one pack`);
    (fanout[Number.parseInt(e.oid.slice(0, 2), 16)] as number)++;
    idx.write(e.oid, idsAt + i * hashLen, 'hex');
    idx.writeUInt32BE(e.crc >>> 0, crcAt + i * 4);
    if (e.offset < TWO_GIB) idx.writeUInt32BE(e.offset, offAt + i * 4);
    else {
      idx.writeUInt32BE((0x80000000 | nextLarge) >>> 0, offAt + i * 4);
      idx.writeBigUInt64BE(BigInt(e.offset), largeAt + nextLarge * 8);
      nextLarge++;
    }
  }
  // Fan-out entry b: how many ids start with a byte up to b.
  let below = 0;
  for (let b = 0; b < 256; b++) {
    below += fanout[b] as number;
    idx.writeUInt32BE(below, 8 + b * 4);
  }
  packHash.copy(idx, tailAt);
  createHash(algo)
    .update(idx.subarray(0, tailAt + hashLen))
    .digest()
    .copy(idx, tailAt + hashLen);
  return idx;
}

/** Writes `built` and its index as pack-<checksum>.{pack,idx} in `packDir`; false when it is too large for us. */
export function writePackFiles(packDir: string, algo: HashAlgo, built: BuiltPack): boolean {
  if (built.pack.length >= TWO_GIB) return false;
  const idx = packIndex(algo, built.entries, built.hash);
  const name = `pack-${built.hash.toString('hex')}`;
  mkdirSync(packDir, { recursive: true });
  const tmp = randomBytes(6).toString('hex');
  const tmpPack = join(packDir, `tmp_pack_${tmp}`);
  const tmpIdx = join(packDir, `tmp_idx_${tmp}`);
  try {
    writeSynced(tmpPack, built.pack);
    writeSynced(tmpIdx, idx);
    renameSync(tmpPack, join(packDir, `${name}.pack`));
    renameSync(tmpIdx, join(packDir, `${name}.idx`));
    syncFolder(packDir);
  } catch (e) {
    rmSync(tmpPack, { force: true });
    rmSync(tmpIdx, { force: true });
    throw e;
  }
  return true;
}

/** The renames on disk before a ref names the objects (git 2.39 does not sync the folder: a power cut could lose them). */
function syncFolder(dir: string): void {
  const fd = openSync(dir, 'r');
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}

/** A new read-only file (as git makes its packs), its content on disk before it is renamed into place. */
function writeSynced(path: string, data: Buffer): void {
  const fd = openSync(path, 'wx', 0o444);
  try {
    let at = 0;
    while (at < data.length) at += writeSync(fd, data, at, data.length - at);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}
