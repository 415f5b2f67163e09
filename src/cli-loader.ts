import { closeSync, constants, fstatSync, mkdirSync, openSync, readFileSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import { homedir } from 'node:os';
import { dirname, isAbsolute, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { setFlagsFromString } from 'node:v8';
import { Script } from 'node:vm';
import { cachesOff, keepNewest, writeWhole } from './core/util/cache-files.js';

/**
 * `nyl` is started as a new process for every command, and compiling its bundle was a sixth of a
 * short command's CPU. This entry runs the CLI bundle (cli.cjs, CommonJS: Node 20 can cache compiled
 * code for a script, not for an ES module) with V8's code cache for it, kept per user in
 * `$XDG_CACHE_HOME/nyl/` (else `~/.cache/nyl/`). The file is named for the bundle's content (the
 * hash the build writes on its first line, and its size), the Node version and the architecture.
 * It is written once, when the first command of a build exits, whole (a temporary file renamed
 * over it) or not at all. V8 checks its header and, asked to here, its checksum: a file that does
 * not fit or was damaged is refused, and written anew. Only a regular file or folder of this user's
 * that no one else may write is used. `NYL_CACHE=0` turns it off. A cache that cannot be read or
 * written only makes nyl slower, never fail.
 */
const KEEP = 4;
/** The bundle's first line, written by scripts/build.mjs. */
const HASH_LINE = /^\/\*nyl-cli ([0-9a-f]{16})\*\/\n/;

const bundle = fileURLToPath(new URL('./cli.cjs', import.meta.url));
// ASCII by build (scripts/build.mjs), so read as latin1: a one-byte string, no UTF-8 decoding.
const text = readFileSync(bundle, 'latin1');
const hash = HASH_LINE.exec(text)?.[1];
const cacheFile = hash ? codeCacheFile(hash, text.length) : undefined;
const cached = readCache(cacheFile);
// Without it V8 trusts a cache whose header fits: a damaged body would crash every command. Set
// whether or not there is a cache: V8 refuses a cache written under other flags.
setFlagsFromString('--verify-snapshot-checksum');
// Wrapped as Node wraps a CommonJS module, on the bundle's first line (stack traces keep its lines),
// and strict as the ES modules it was built from.
const source = `(function (exports, require, module, __filename, __dirname) {'use strict';${text}\n})`;
const script = new Script(source, { filename: bundle, cachedData: cached });
if (cacheFile && (!cached || script.cachedDataRejected)) process.once('exit', () => writeCache(cacheFile, script));
// The build the derived cache keys its entries by (src/core/git/derived-cache.ts).
(globalThis as Record<symbol, unknown>)[Symbol.for('nyl.build')] = hash;
const cjs = { exports: {} };
script.runInThisContext()(cjs.exports, createRequire(bundle), cjs, bundle, dirname(bundle));

function codeCacheFile(bundleHash: string, length: number): string | undefined {
  const env = process.env;
  if (cachesOff(env)) return undefined;
  try {
    // A relative base would put the cache in whatever folder nyl runs in (XDG says: ignore it).
    const base = env.XDG_CACHE_HOME && isAbsolute(env.XDG_CACHE_HOME) ? env.XDG_CACHE_HOME : join(homedir(), '.cache');
    if (!isAbsolute(base)) return undefined;
    const name = `code-${bundleHash}-${length}-${process.version}-${process.arch}.bin`;
    return join(base, 'nyl', name);
  } catch {
    return undefined;
  }
}

/** This user's, written by no one else: V8 runs what the cache holds. */
function ownedAlone(st: { uid: number; mode: number }): boolean {
  return (process.getuid === undefined || st.uid === process.getuid()) && (st.mode & 0o022) === 0;
}

function readCache(file: string | undefined): Buffer | undefined {
  if (!file) return undefined;
  let fd: number | undefined;
  try {
    if (!ownedAlone(statSync(dirname(file)))) return undefined;
    // Opened without blocking and checked before reading: a FIFO or a device would hang nyl.
    fd = openSync(file, constants.O_RDONLY | constants.O_NONBLOCK);
    const st = fstatSync(fd);
    if (!st.isFile() || st.size === 0 || !ownedAlone(st)) return undefined;
    return readFileSync(fd);
  } catch {
    return undefined;
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
}

/** At exit, so that what this command compiled lazily is in it too. */
function writeCache(file: string, compiled: Script): void {
  try {
    mkdirSync(dirname(file), { recursive: true, mode: 0o700 });
    if (!ownedAlone(statSync(dirname(file)))) return;
  } catch {
    return;
  }
  if (writeWhole(file, compiled.createCachedData(), 0o600)) keepNewest(dirname(file), 'code-', KEEP);
}
