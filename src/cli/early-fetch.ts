import { readFileSync, realpathSync, statSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { DEFAULT_CONFIG_FILES } from '../core/config/default-files.js';
import {
  DEFAULT_NETWORK_TIMEOUT_MS,
  DEFAULT_PREFIX,
  type EarlyFetchSpec,
  startEarlyStateFetch,
} from '../core/state/state-fetch.js';
import { DEFAULT_GRACE_MS } from '../core/util/cancel.js';
import { parseDuration } from '../core/util/duration.js';
import { isSafeName } from '../core/util/safe-name.js';

/**
 * The state fetch started from the command line before the rest of nyl is loaded
 * (core/state/state-fetch.ts): for the commands whose first round trip it is, when the words
 * name it plainly. Anything unusual (no environment, --local, a group, help, a git directory
 * given by the environment, a worktree) starts nothing, and the command fetches as it always
 * does; a word misread starts a fetch the command does not take, one fetch more and no harm.
 */

/** Commands whose first step is the fetch of one environment's state. */
const FETCHING = new Set(['status', 'plan', 'reconcile', 'verify']);
/** Settings that make git find another repository than the one above the working folder. */
const GIT_LOCATION = [
  'GIT_DIR',
  'GIT_WORK_TREE',
  'GIT_COMMON_DIR',
  'GIT_CEILING_DIRECTORIES',
  'GIT_DISCOVERY_ACROSS_FILESYSTEM',
];
const REMOTE_NAME = /^[A-Za-z0-9_][A-Za-z0-9_.\-/]*$/;

export function startEarlyFetch(argv: string[], cwd: string, env: NodeJS.ProcessEnv = process.env): void {
  try {
    const spec = earlyFetchSpec(argv, env);
    const gitDir = spec && gitDirAbove(cwd, env);
    if (spec && gitDir && !mayMoveState(dirname(gitDir), cwd, argv)) startEarlyStateFetch(cwd, gitDir, spec);
  } catch {
    // A head start, no more: whatever stops it leaves the command to fetch as it always does.
  }
}

/** The fetch a command line starts with, read from its words; undefined when they do not say plainly. */
export function earlyFetchSpec(argv: string[], env: NodeJS.ProcessEnv): EarlyFetchSpec | undefined {
  const [command = '', ...rest] = argv;
  if (!FETCHING.has(command)) return undefined;
  let environment: string | undefined;
  let remote = 'origin';
  let timeout = env.NYL_NETWORK_TIMEOUT || undefined;
  let grace: string | undefined;
  for (let i = 0; i < rest.length; i++) {
    const word = rest[i] as string;
    const eq = word.startsWith('--') ? word.indexOf('=') : -1;
    const flag = eq > 0 ? word.slice(0, eq) : word;
    const value = () => (eq > 0 ? word.slice(eq + 1) : rest[++i]);
    if (flag === '-e' || flag === '--environment') environment = value();
    else if (flag === '--remote') remote = value() ?? '';
    else if (flag === '--network-timeout') timeout = value();
    else if (flag === '--cancel-grace') grace = value();
    else if (['--local', '--group', '--help', '-h', '--'].includes(flag)) return undefined;
  }
  if (!environment || !isSafeName(environment) || !REMOTE_NAME.test(remote)) return undefined;
  const timeoutMs = timeout === undefined ? DEFAULT_NETWORK_TIMEOUT_MS : parseDuration(timeout);
  const graceMs = grace === undefined ? DEFAULT_GRACE_MS : parseDuration(grace);
  // A bad duration is the command's usage error to report: nothing starts before it.
  if (!timeoutMs || graceMs === undefined) return undefined;
  return { remote, prefix: `${DEFAULT_PREFIX}/${environment}`, timeoutMs, graceMs };
}

/**
 * The `.git` folder of the work tree `cwd` lies in, found as git finds it (the nearest `.git`
 * that is a git directory: HEAD, objects/ and refs/); undefined for anything else: a `.git` file
 * (a linked worktree, a submodule), a bare repository or git directory on the way up, no
 * repository, or a location the environment sets.
 */
export function gitDirAbove(cwd: string, env: NodeJS.ProcessEnv): string | undefined {
  if (GIT_LOCATION.some((k) => env[k] !== undefined)) return undefined;
  for (let dir = cwd; ; dir = dirname(dir)) {
    const dotGit = join(dir, '.git');
    const kind = fileKind(dotGit);
    if (kind === 'file') return undefined;
    if (kind === 'dir' && isGitDir(dotGit)) return realpathSync(dotGit);
    if (isGitDir(dir) || dirname(dir) === dir) return undefined;
  }
}

function fileKind(path: string): 'dir' | 'file' | undefined {
  try {
    return statSync(path).isDirectory() ? 'dir' : 'file';
  } catch {
    return undefined;
  }
}

const isGitDir = (dir: string) =>
  fileKind(join(dir, 'HEAD')) === 'file' &&
  fileKind(join(dir, 'objects')) === 'dir' &&
  fileKind(join(dir, 'refs')) === 'dir';

/**
 * Whether the configuration may keep the state under another prefix than the default one
 * (`coordinationRefPrefix`), read from the work tree as a guess (nyl reads the commit): then no
 * early fetch, which the command would not take. A folder given with --config is not read: the
 * same answer.
 */
export function mayMoveState(root: string, cwd: string, argv: string[]): boolean {
  const at = argv.findIndex((w) => w === '--config' || w.startsWith('--config='));
  const word = argv[at] ?? '';
  const given = at < 0 ? undefined : word.startsWith('--config=') ? word.slice(9) : (argv[at + 1] ?? '');
  const files = given === undefined ? DEFAULT_CONFIG_FILES.map((f) => join(root, f)) : [resolve(cwd, given)];
  for (const file of files) {
    const kind = fileKind(file);
    if (kind === 'dir') return true;
    if (kind === 'file' && readFileSync(file, 'utf8').includes('coordinationRefPrefix')) return true;
  }
  return false;
}
