import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';

export interface OciLayoutOptions {
  /** Stored as `org.opencontainers.image.ref.name` on the index entry: the `<tag>` in `oci:<dir>:<tag>`. */
  tag: string;
  /** Contents of `hello.txt` in the single layer. */
  content: string;
  /** Written to the image config (and the index entry); defaults to linux/amd64. */
  platform?: { os: string; architecture: string };
}

export interface OciLayout {
  dir: string;
  /** Digest of the image manifest, `sha256:<hex>`: what a registry reports after a digest-preserving copy. */
  digest: string;
}

export const OCI_MANIFEST = 'application/vnd.oci.image.manifest.v1+json';
export const OCI_CONFIG = 'application/vnd.oci.image.config.v1+json';
export const OCI_LAYER_GZIP = 'application/vnd.oci.image.layer.v1.tar+gzip';
export const OCI_INDEX = 'application/vnd.oci.image.index.v1+json';

interface Descriptor {
  mediaType: string;
  digest: string;
  size: number;
  annotations?: Record<string, string>;
  platform?: { os: string; architecture: string };
}

function sha256(data: Buffer): string {
  return `sha256:${createHash('sha256').update(data).digest('hex')}`;
}

/** Writes `data` under `blobs/sha256/` and returns its descriptor. */
function writeBlob(dir: string, mediaType: string, data: Buffer): Descriptor {
  const digest = sha256(data);
  writeFileSync(join(dir, 'blobs', 'sha256', digest.slice('sha256:'.length)), data);
  return { mediaType, digest, size: data.length };
}

/** Writes `value` as zero-padded octal into a `width`-byte ustar numeric field (NUL-terminated). */
function octal(header: Buffer, offset: number, width: number, value: number): void {
  header.write(`${value.toString(8).padStart(width - 1, '0')}\0`, offset, width, 'ascii');
}

/** A POSIX ustar archive with one regular file (mode 0644, uid/gid 0, mtime 0) and the end-of-archive marker. */
export function ustar(name: string, data: Buffer): Buffer {
  if (Buffer.byteLength(name) > 100) throw new Error(`ustar: name longer than 100 bytes: ${name}`);
  const header = Buffer.alloc(512);
  header.write(name, 0, 100, 'utf8'); // name
  octal(header, 100, 8, 0o644); // mode
  octal(header, 108, 8, 0); // uid
  octal(header, 116, 8, 0); // gid
  octal(header, 124, 12, data.length); // size
  octal(header, 136, 12, 0); // mtime
  header.fill(' ', 148, 156); // chksum counts as spaces while summing
  header.write('0', 156, 1, 'ascii'); // typeflag: regular file
  header.write('ustar\0', 257, 6, 'ascii'); // magic
  header.write('00', 263, 2, 'ascii'); // version
  header.write('root', 265, 32, 'ascii'); // uname
  header.write('root', 297, 32, 'ascii'); // gname
  let sum = 0;
  for (const byte of header) sum += byte;
  header.write(`${sum.toString(8).padStart(6, '0')}\0 `, 148, 8, 'ascii');
  const padding = Buffer.alloc((512 - (data.length % 512)) % 512);
  return Buffer.concat([header, data, padding, Buffer.alloc(1024)]);
}

function json(value: unknown): Buffer {
  return Buffer.from(JSON.stringify(value));
}

/**
 * Builds a single-platform OCI image layout on disk with Node alone (no docker, no skopeo), for
 * `skopeo copy oci:<dir>:<tag> …`. The image has one layer: a gzip'd POSIX ustar tar holding
 * `hello.txt` with `content`. Everything is deterministic (fixed mtimes, uid/gid 0), so the same
 * `content` and platform always give the same manifest digest and different `content` gives a
 * different one.
 *
 * Calling it again on the same `dir` with another `tag` adds that image to the layout's
 * `index.json` (an existing entry for the same tag is replaced).
 */
export function makeOciLayout(dir: string, opts: OciLayoutOptions): OciLayout {
  const platform = opts.platform ?? { os: 'linux', architecture: 'amd64' };
  mkdirSync(join(dir, 'blobs', 'sha256'), { recursive: true });

  const tar = ustar('hello.txt', Buffer.from(opts.content, 'utf8'));
  // gzip from zlib has a zero mtime in its header, so equal input gives equal bytes.
  const layer = writeBlob(dir, OCI_LAYER_GZIP, gzipSync(tar));
  const config = writeBlob(
    dir,
    OCI_CONFIG,
    json({
      architecture: platform.architecture,
      os: platform.os,
      rootfs: { type: 'layers', diff_ids: [sha256(tar)] },
      config: {},
    }),
  );
  const manifest = writeBlob(
    dir,
    OCI_MANIFEST,
    json({ schemaVersion: 2, mediaType: OCI_MANIFEST, config, layers: [layer] }),
  );

  writeFileSync(join(dir, 'oci-layout'), json({ imageLayoutVersion: '1.0.0' }));
  const indexPath = join(dir, 'index.json');
  const existing = existsSync(indexPath)
    ? ((JSON.parse(readFileSync(indexPath, 'utf8')) as { manifests?: Descriptor[] }).manifests ?? [])
    : [];
  const manifests = existing.filter((d) => d.annotations?.['org.opencontainers.image.ref.name'] !== opts.tag);
  manifests.push({ ...manifest, platform, annotations: { 'org.opencontainers.image.ref.name': opts.tag } });
  writeFileSync(indexPath, json({ schemaVersion: 2, mediaType: OCI_INDEX, manifests }));

  return { dir, digest: manifest.digest };
}
