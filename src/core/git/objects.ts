import { createHash } from 'node:crypto';
import { deflateSync } from 'node:zlib';

/** Git objects built in-process: their ids are computed here, git only stores them. */
export type HashAlgo = 'sha1' | 'sha256';
export type ObjectType = 'blob' | 'tree' | 'commit';

export interface GitObject {
  type: ObjectType;
  oid: string;
  body: Buffer;
}

export function makeObject(algo: HashAlgo, type: ObjectType, body: Buffer): GitObject {
  const h = createHash(algo);
  h.update(`${type} ${body.length}\0`);
  h.update(body);
  return { type, oid: h.digest('hex'), body };
}

export interface TreeEntry {
  /** Nyl writes files (100644) and trees (40000); reading, it also meets 100755, 120000 (symlink), 160000 (submodule). */
  mode: '100644' | '40000' | '100755' | '120000' | '160000';
  name: string;
  oid: string;
}

const ASCII = /^[\x00-\x7f]*$/;

/**
 * Tree entries sort by their names' bytes, as if directory names ended in '/'. ASCII names (all
 * of nyl's) compare as strings, which is the same order; others by their UTF-8 bytes. The tree is
 * written into one buffer (a first reconcile's run tree has a directory per unit).
 */
export function serializeTree(entries: TreeEntry[]): Buffer {
  const keyed = entries.map((e) => ({ e, key: e.mode === '40000' ? `${e.name}/` : e.name }));
  if (keyed.every((k) => ASCII.test(k.key))) keyed.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
  else keyed.sort((a, b) => Buffer.compare(Buffer.from(a.key), Buffer.from(b.key)));
  let size = 0;
  for (const { e } of keyed) size += e.mode.length + 2 + Buffer.byteLength(e.name) + e.oid.length / 2;
  const out = Buffer.allocUnsafe(size);
  let at = 0;
  for (const { e } of keyed) {
    at += out.write(`${e.mode} ${e.name}\0`, at);
    at += out.write(e.oid, at, 'hex');
  }
  // A malformed id would leave allocUnsafe's old bytes in the tree.
  if (at !== size)
    throw new Error(`a tree entry names a malformed object id (${entries.map((e) => e.oid).join(', ')})`);
  return out;
}

export function parseTree(algo: HashAlgo, body: Buffer): TreeEntry[] {
  const out: TreeEntry[] = [];
  let i = 0;
  const hashLen = algo === 'sha256' ? 32 : 20;
  while (i < body.length) {
    const sp = body.indexOf(0x20, i);
    const nul = body.indexOf(0, sp);
    const mode = body.toString('latin1', i, sp);
    const name = body.toString('utf8', sp + 1, nul);
    const oid = body.toString('hex', nul + 1, nul + 1 + hashLen);
    out.push({ mode: mode as TreeEntry['mode'], name, oid });
    i = nul + 1 + hashLen;
  }
  return out;
}

export interface Signature {
  name: string;
  email: string;
}

export interface CommitSpec {
  tree: string;
  parents: string[];
  author: Signature;
  message: string;
  /** Milliseconds; defaults to now. */
  time?: number;
}

export function serializeCommit(c: CommitSpec): Buffer {
  const secs = Math.floor((c.time ?? Date.now()) / 1000);
  const who = `${clean(c.author.name)} <${clean(c.author.email)}> ${secs} +0000`;
  const lines = [`tree ${c.tree}`, ...c.parents.map((p) => `parent ${p}`), `author ${who}`, `committer ${who}`];
  const msg = c.message.endsWith('\n') ? c.message : `${c.message}\n`;
  return Buffer.from(`${lines.join('\n')}\n\n${msg}`);
}

function clean(s: string): string {
  return s.replace(/[<>\n]/g, '').trim() || 'unknown';
}

export interface ParsedCommit {
  tree: string;
  parents: string[];
  message: string;
  author: string;
  time: number;
}

export function parseCommit(body: Buffer): ParsedCommit {
  const text = body.toString('utf8');
  const sep = text.indexOf('\n\n');
  const head = sep < 0 ? text : text.slice(0, sep);
  const message = sep < 0 ? '' : text.slice(sep + 2);
  let tree = '';
  const parents: string[] = [];
  let author = '';
  let time = 0;
  for (const line of head.split('\n')) {
    if (line.startsWith('tree ')) tree = line.slice(5);
    else if (line.startsWith('parent ')) parents.push(line.slice(7));
    else if (line.startsWith('committer ')) {
      const m = /^committer (.*) (\d+) [+-]\d{4}$/.exec(line);
      if (m) {
        author = m[1] as string;
        time = Number(m[2]) * 1000;
      }
    }
  }
  return { tree, parents, message, author, time };
}

/**
 * `data` as a pack entry's zlib stream. A pack is kept as it is written (pack-files.ts), pushes
 * and fetches send it on, and a repack that reuses objects (plain `gc`) keeps it: so objects are
 * compressed, fast (level 1) and with a small window and hash (documents are a few KiB), since a
 * default zlib context (~300 KiB outside the heap) per object was most of a large write's peak
 * memory. Tiny objects gain nothing and are stored, and so are small trees: mostly object ids,
 * zlib makes them no shorter (the small trees of a first reconcile came out 6% longer), and a
 * first reconcile writes two per unit.
 */
function compressed(type: ObjectType, data: Buffer): Buffer[] {
  if (data.length < 64 || (type === 'tree' && data.length < 1024)) return stored(data);
  return [deflateSync(data, { level: 1, windowBits: 12, memLevel: 2, chunkSize: 1024 })];
}

/** `data` as a zlib stream of stored (uncompressed) deflate blocks. */
function stored(data: Buffer): Buffer[] {
  const out: Buffer[] = [Buffer.from([0x78, 0x01])];
  const MAX = 0xffff;
  let at = 0;
  do {
    const n = Math.min(MAX, data.length - at);
    const head = Buffer.alloc(5);
    head[0] = at + n >= data.length ? 1 : 0;
    head.writeUInt16LE(n, 1);
    head.writeUInt16LE(~n & 0xffff, 3);
    out.push(head, data.subarray(at, at + n));
    at += n;
  } while (at < data.length);
  let a = 1;
  let b = 0;
  for (let i = 0; i < data.length; i++) {
    a = (a + (data[i] as number)) % 65521;
    b = (b + a) % 65521;
  }
  const sum = Buffer.alloc(4);
  sum.writeUInt32BE(((b << 16) | a) >>> 0);
  out.push(sum);
  return out;
}

/** The data of an object's pack entry (its zlib stream), as buildPack writes it. */
export function packEntryData(o: GitObject): Buffer[] {
  return compressed(o.type, o.body);
}

const PACK_TYPE: Record<ObjectType, number> = { commit: 1, tree: 2, blob: 3 };

/** Where each object's entry starts in a pack and the CRC-32 of its bytes: what a pack index holds. */
export interface PackEntry {
  oid: string;
  offset: number;
  crc: number;
}

export interface BuiltPack {
  /** The whole pack, its trailing checksum included. */
  pack: Buffer;
  /** The pack's checksum (its name under objects/pack). */
  hash: Buffer;
  entries: PackEntry[];
}

/** The entry header: type and inflated size, 7 bits a byte after the first 4. */
function entryHeader(o: GitObject): Buffer {
  let size = o.body.length;
  const bytes: number[] = [];
  let byte = (PACK_TYPE[o.type] << 4) | (size & 0x0f);
  size >>>= 4;
  while (size > 0) {
    bytes.push(byte | 0x80);
    byte = size & 0x7f;
    size >>>= 7;
  }
  bytes.push(byte);
  return Buffer.from(bytes);
}

/**
 * A version 2 pack of whole (undeltified) objects; `data` gives an entry's data made earlier
 * (packEntryData). With `crc`, each entry's CRC-32 is computed once it is copied (for an index
 * written in-process, pack-files.ts); without it, entries carry crc 0 (index-pack makes its own).
 */
export function buildPack(
  algo: HashAlgo,
  objects: GitObject[],
  data: (o: GitObject) => Buffer[] = packEntryData,
  crc?: (b: Buffer, prev: number) => number,
): BuiltPack {
  const header = Buffer.alloc(12);
  header.write('PACK', 0, 'latin1');
  header.writeUInt32BE(2, 4);
  header.writeUInt32BE(objects.length, 8);
  const items = objects.map((o) => [entryHeader(o), ...data(o)]);
  // One allocation for the pack and its trailer (a large write's pack is megabytes).
  const hashLen = algo === 'sha256' ? 32 : 20;
  let size = header.length;
  for (const parts of items) for (const p of parts) size += p.length;
  const pack = Buffer.allocUnsafe(size + hashLen);
  let at = header.copy(pack, 0);
  const entries: PackEntry[] = [];
  for (const [i, parts] of items.entries()) {
    const offset = at;
    for (const p of parts) at += p.copy(pack, at);
    // Over the entry as it lies in the pack, in one call: zlib.crc32 answers 0, not the value it
    // was given, for a part backed by an empty ArrayBuffer (an empty body's stored block).
    entries.push({ oid: (objects[i] as GitObject).oid, offset, crc: crc ? crc(pack.subarray(offset, at), 0) : 0 });
  }
  const hash = createHash(algo).update(pack.subarray(0, size)).digest();
  hash.copy(pack, size);
  return { pack, hash, entries };
}
