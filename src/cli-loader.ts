import { mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { homedir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Script } from 'node:vm';

/**
 * `nyl` is started as a new process for every command, and parsing its bundle was a tenth of a
 * short command's time. This entry runs the CLI bundle (cli.cjs, CommonJS: Node 20 can cache
 * compiled code for a script, not for an ES module) with V8's code cache for it, kept per user
 * in `$XDG_CACHE_HOME/nyl/` (else `~/.cache/nyl/`). The file is named for the bundle's content
 * (its hash, set at build time), the Node version and the architecture; V8 checks it again and
 * refuses one that does not fit, which is then written anew. It is written once, when the first
 * command of a build exits, whole or not at all. `NYL_CACHE=0` turns it off. A cache that cannot be
 * read or written only makes nyl slower, never fail.
 */
declare const NYL_CLI_HASH: string;

const KEEP = 4;
const bundle = fileURLToPath(new URL('./cli.cjs', import.meta.url));
const cacheFile = codeCacheFile();
const cached = readCache(cacheFile);
// ASCII by build (scripts/build.mjs), so read as latin1: a one-byte string, no UTF-8 decoding.
// Wrapped as Node wraps a CommonJS module, on the bundle's first line (stack traces keep its lines),
// and strict as the ES modules it was built from.
const source = `(function (exports, require, module, __filename, __dirname) {'use strict';${readFileSync(bundle, 'latin1')}\n})`;
const script = new Script(source, { filename: bundle, cachedData: cached });
if (cacheFile && (!cached || script.cachedDataRejected)) process.once('exit', () => writeCache(cacheFile, script));
const cjs = { exports: {} };
script.runInThisContext()(cjs.exports, createRequire(bundle), cjs, bundle, dirname(bundle));

function codeCacheFile(): string | undefined {
  const env = process.env;
  if (env.NYL_CACHE === '0' || env.NYL_CACHE === 'off') return undefined;
  try {
    const base = env.XDG_CACHE_HOME || join(homedir(), '.cache');
    return join(base, 'nyl', `code-${NYL_CLI_HASH}-${process.version}-${process.arch}.bin`);
  } catch {
    return undefined;
  }
}

function readCache(file: string | undefined): Buffer | undefined {
  try {
    return file ? readFileSync(file) : undefined;
  } catch {
    return undefined;
  }
}

/** At exit, so that what this command compiled lazily is in it too. */
function writeCache(file: string, compiled: Script): void {
  const tmp = `${file}.${process.pid}.tmp`;
  try {
    mkdirSync(dirname(file), { recursive: true, mode: 0o700 });
    writeFileSync(tmp, compiled.createCachedData(), { mode: 0o600 });
    renameSync(tmp, file);
    prune(dirname(file));
  } catch {
    try {
      rmSync(tmp, { force: true });
    } catch {
      // Nothing more to do: the next command tries again.
    }
  }
}

/** Keeps the newest KEEP caches: other builds and Node versions used by the same person. */
function prune(dir: string): void {
  const caches = readdirSync(dir).filter((f) => f.startsWith('code-') && f.endsWith('.bin'));
  if (caches.length <= KEEP) return;
  const dated = caches.map((f) => ({ f, t: statSync(join(dir, f), { throwIfNoEntry: false })?.mtimeMs ?? 0 }));
  dated.sort((a, b) => b.t - a.t);
  for (const { f } of dated.slice(KEEP)) rmSync(join(dir, f), { force: true });
}
