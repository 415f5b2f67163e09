import { realpathSync } from 'node:fs';
import { type GitResult, runGit } from '../git/exec.js';
import { hasRefsUnder } from '../git/shallow.js';
import { endGently } from '../proc/children.js';
import { Cancellation } from '../util/cancel.js';

/**
 * The fetch of an environment's state refs: the first round trip of every command against a
 * remote, its git arguments made here wherever it starts. The remote backend makes it; the CLI
 * may start it before Node has loaded the rest of nyl (startEarlyStateFetch), so that the round
 * trip overlaps loading the bundle, reading the configuration and opening the repository. The
 * backend takes that fetch over only when it would have made exactly this one (the same git
 * directory, remote, ref prefix and bound); otherwise it was one fetch more into the same
 * tracking refs, and nothing else.
 */

/** The bound of one call to the remote unless --network-timeout or NYL_NETWORK_TIMEOUT says otherwise. */
export const DEFAULT_NETWORK_TIMEOUT_MS = 60_000;

/** The default namespace of the state refs: `refs/nyl/<environment>/…`. */
export const DEFAULT_PREFIX = 'refs/nyl';

/** Where fetched state refs are kept locally: `refs/nyl-remotes/<remote>/<ref without refs/>`. */
export function trackingRef(remote: string, ref: string): string {
  return `refs/nyl-remotes/${remote.replace(/[^A-Za-z0-9_.-]/g, '_')}/${ref.replace(/^refs\//, '')}`;
}

/** `-c` settings that make git itself give up on a stalled HTTP transfer within a call's bound. */
export function networkArgs(timeoutMs: number): string[] {
  const lowSpeedSecs = Math.max(1, Math.min(20, Math.floor(timeoutMs / 2000)));
  return ['-c', 'http.lowSpeedLimit=1000', '-c', `http.lowSpeedTime=${lowSpeedSecs}`];
}

/**
 * Every fetch keeps what it receives as a pack (git unpacks fewer than 100 objects into loose
 * files otherwise) and leaves gc to nyl (GitRepo.objectsAdded).
 */
export const FETCH = [
  '-c',
  'fetch.unpackLimit=1',
  'fetch',
  '--quiet',
  '--no-tags',
  '--no-write-fetch-head',
  '--no-auto-gc',
];

/**
 * The refspec part of the fetch of `prefix`'s refs into their tracking refs: tips only when this
 * clone holds none of them yet (a fresh runner), so that the fetch does not grow with history; a
 * clone that has them fetches what changed since (a depth fetch would ask the server again even
 * when nothing changed, one more round trip).
 */
export function listingFetch(commonDir: string, remote: string, prefix: string): string[] {
  const track = trackingRef(remote, prefix);
  const fresh = hasRefsUnder(commonDir, [track, prefix]) === false;
  return ['--prune', ...(fresh ? ['--depth=1'] : []), remote, `+${prefix}/*:${track}/*`];
}

/** How long a network call goes on after a cancel, of the command's grace window. */
export function networkGraceMs(graceMs = 2_000): number {
  return Math.min(2_000, graceMs / 3);
}

export interface EarlyFetchSpec {
  remote: string;
  prefix: string;
  timeoutMs: number;
  /** The command's cancel grace window (--cancel-grace, DEFAULT_GRACE_MS). */
  graceMs: number;
}

/** What an early fetch ended with, and its refspec part (listingFetch, as decided before it ran). */
export interface EarlyFetch {
  result: GitResult;
  listing: string[];
}

interface Pending {
  gitDir: string;
  key: string;
  listing: string[];
  result: Promise<GitResult | undefined>;
  cancel: Cancellation;
  /** Its process group (children.ts keeps it while it runs). */
  pid?: number;
}
let early: Pending | undefined;

const keyOf = (s: EarlyFetchSpec) => JSON.stringify([s.remote, s.prefix, s.timeoutMs, s.graceMs]);

function sameDir(a: string, b: string): boolean {
  try {
    return realpathSync(a) === realpathSync(b);
  } catch {
    return false;
  }
}

/** Starts the state fetch of `spec` in the repository whose git directory is `gitDir` (from `cwd`, inside it). */
export function startEarlyStateFetch(cwd: string, gitDir: string, spec: EarlyFetchSpec): void {
  const listing = listingFetch(gitDir, spec.remote, spec.prefix);
  const cancel = new Cancellation();
  const pending: Pending = { gitDir, key: keyOf(spec), listing, cancel, result: Promise.resolve(undefined) };
  pending.result = runGit([...networkArgs(spec.timeoutMs), ...FETCH, ...listing], {
    cwd,
    timeoutMs: spec.timeoutMs,
    cancellation: cancel,
    cancelGraceMs: networkGraceMs(spec.graceMs),
    endGently: true,
    started: (pid) => {
      pending.pid = pid;
    },
  }).catch(() => undefined);
  early = pending;
}

/**
 * The early fetch, taken over (once) when it is the one `spec` asks for in the repository at
 * `commonDir`, once it ended; a cancel of the command reaches it meanwhile. Undefined when there
 * is none, when git could not be started, or when it is another one (stopEarlyStateFetch ends
 * that one before the caller fetches).
 */
export async function takeEarlyStateFetch(
  commonDir: string,
  spec: EarlyFetchSpec,
  cancellation?: Cancellation,
): Promise<EarlyFetch | undefined> {
  const e = early;
  if (!e || e.key !== keyOf(spec) || !sameDir(e.gitDir, commonDir)) return undefined;
  early = undefined;
  const off = cancellation?.onCancel((signal) => e.cancel.cancel(signal));
  try {
    const result = await e.result;
    return result && { result, listing: e.listing };
  } finally {
    off?.();
  }
}

/**
 * Ends an early fetch nobody took (the command fetches something else first) the way
 * children.ts ends every fetch on the way out (endGently: SIGTERM, on which git removes its lock
 * files, a second to go, then SIGKILL), and waits for it: two fetches at once would meet on
 * git's locks. True when there was one.
 */
export async function stopEarlyStateFetch(): Promise<boolean> {
  const e = early;
  if (!e) return false;
  early = undefined;
  if (e.pid !== undefined) await endGently(1_000, [e.pid]);
  await e.result;
  return true;
}
