import { spawnSync } from 'node:child_process';
import { statfsSync } from 'node:fs';
import { Exit, NylError, problem } from '../util/errors.js';

/**
 * A write the file system under the repository refused (full, over quota, read-only, failing,
 * not ours to write): the operator's to fix, not a bug of nyl's. A write is one pack and one ref
 * transaction, so a refused one recorded nothing: the state is what the write before it left.
 * Callers that know more (a run that stopped with its lease held) say so (ops/runs/storage-stop.ts).
 */
export const STATE_WRITE_FAILED = 'NYL-STATE-WRITE-FAILED';

const REASONS: Record<string, string> = {
  ENOSPC: 'no space left on device',
  EDQUOT: 'disk quota exceeded',
  EFBIG: 'file too large',
  EROFS: 'read-only file system',
  EIO: 'input/output error',
  EACCES: 'permission denied',
  EPERM: 'operation not permitted',
  EMFILE: 'too many open files',
  ENFILE: 'too many open files in the system',
  EWRITE: 'a write was refused',
};

/** What git prints (strerror) for the same conditions. */
const GIT_SAYS: [RegExp, string][] = [
  [/No space left on device/i, 'ENOSPC'],
  [/Disk quota exceeded/i, 'EDQUOT'],
  [/File too large/i, 'EFBIG'],
  [/Read-only file system/i, 'EROFS'],
  [/Input\/output error/i, 'EIO'],
  [/Permission denied/i, 'EACCES'],
  [/Operation not permitted/i, 'EPERM'],
  [/Too many open files/i, 'EMFILE'],
];

/** The storage condition behind an error of Node's file system calls, or undefined for any other error. */
export function storageCode(e: unknown): string | undefined {
  const code = (e as NodeJS.ErrnoException | undefined)?.code;
  return code && code in REASONS ? code : undefined;
}

/** git's words for a write of its own that failed, where it does not say why (a lock file it "couldn't write"). */
const GIT_WRITE_FAILED = /couldn't write '|unable to write (file|loose object|new index)|failed to write/i;
/** ssh's and HTTP's refusals of a login ("Permission denied (publickey)"): credentials, not files. */
const LOGIN_REFUSED = /Permission denied \(|HTTP 40[13]|Authentication failed/i;
/** Under this much free space, a write that failed for no stated reason is taken for a full disk. */
const NEARLY_FULL = 1024 * 1024;

/** Whether processes started from here have a file size limit (`ulimit -f`): asked of a shell, on a failure only. */
function fileSizeLimited(): boolean {
  const r = spawnSync('sh', ['-c', 'ulimit -f'], { encoding: 'utf8', timeout: 5_000 });
  return r.status === 0 && /^\d+\s*$/.test(r.stdout);
}

/** Whether the file system under `gitDir` has (nearly) no space left. */
function nearlyFull(gitDir: string | undefined): boolean {
  try {
    const fs = gitDir ? statfsSync(gitDir) : undefined;
    return !!fs && fs.bavail * fs.bsize < NEARLY_FULL;
  } catch {
    return false;
  }
}

/**
 * The storage condition a failed local git command (update-ref, index-pack) names, or undefined.
 * git does not always say why a write failed (a ref's lock file it "couldn't write"): then the
 * file system under `gitDir` is asked. A git killed by SIGXFSZ wrote past `ulimit -f`.
 */
export function storageCodeInGit(stderr: string, gitDir?: string, signal?: NodeJS.Signals): string | undefined {
  if (signal === 'SIGXFSZ') return 'EFBIG';
  const lines = stderr.split('\n').filter((l) => !LOGIN_REFUSED.test(l));
  const said = GIT_SAYS.find(([re]) => lines.some((l) => re.test(l)))?.[1];
  if (said || !lines.some((l) => GIT_WRITE_FAILED.test(l))) return said;
  return nearlyFull(gitDir) ? 'ENOSPC' : 'EWRITE';
}

/**
 * The storage condition of this clone a failed fetch names: not the server's (its `remote:`
 * lines, or an ssh server's words that name no path here), nor a refused login, nor the network
 * ("write error: Connection reset"). A line must name a path under `gitDir`, or the disk under it
 * be full.
 */
export function storageCodeInFetch(stderr: string, gitDir?: string, signal?: NodeJS.Signals): string | undefined {
  if (signal === 'SIGXFSZ') return 'EFBIG';
  const local = stderr.split('\n').filter((l) => l.trim() && !l.startsWith('remote:') && !LOGIN_REFUSED.test(l));
  const here = gitDir ? local.filter((l) => l.includes(gitDir)) : [];
  const named = GIT_SAYS.find(([re]) => here.some((l) => re.test(l)))?.[1];
  if (named) return named;
  // A tracking ref's lock file it "couldn't write", without a reason: this clone's write all the same.
  if (here.some((l) => GIT_WRITE_FAILED.test(l))) return nearlyFull(gitDir) ? 'ENOSPC' : 'EWRITE';
  const said = GIT_SAYS.find(([re]) => local.some((l) => re.test(l)))?.[1];
  // No network error reads "Disk quota exceeded", "File too large" or "Input/output error".
  if (said === 'EDQUOT' || said === 'EFBIG' || said === 'EIO') return said;
  if (said === 'ENOSPC' && nearlyFull(gitDir)) return said;
  // An index-pack killed without a word (SIGXFSZ past `ulimit -f`) leaves this line alone: the limit is asked.
  const only = local.filter((l) => /^(fatal|error):/.test(l));
  if (only.length && only.every((l) => /invalid index-pack output|index-pack died/.test(l)) && fileSizeLimited())
    return 'EFBIG';
  return undefined;
}

/** A push the server could not store (its disk full, its repository read-only): "unpacker error", or its words. */
export function remoteStorageTrouble(reason: string, said: string[]): boolean {
  return (
    /unpacker error|unpack failed|unpack-objects abnormal exit/i.test(reason) ||
    said.some((l) => GIT_SAYS.some(([re]) => re.test(l)) || /unable to (write|create)/i.test(l))
  );
}

/** The error of a push the server of `remote` could not store: nothing of it was applied. */
export function remoteStorageFailure(remote: string, message: string): NylError {
  return new NylError(
    problem(STATE_WRITE_FAILED, message, {
      subject: remote,
      exit: Exit.failed,
      fix: `free space on the server that holds remote ${remote}, or make its repository writable, then run the command again`,
    }),
  );
}

/** True for the error `storageFailure` makes. */
export function isStorageFailure(e: unknown): e is NylError {
  return e instanceof NylError && e.problems.some((p) => p.code === STATE_WRITE_FAILED);
}

/** `code` (ENOSPC, …) as the operator reads it. */
function storageReason(code: string): string {
  return code === 'EWRITE' ? (REASONS[code] as string) : `${REASONS[code] ?? code} (${code})`;
}

/** The error of a write under `gitDir` refused with `code`: nothing of it was recorded. */
export function storageFailure(gitDir: string, code: string, what = 'the state'): NylError {
  return new NylError(
    problem(
      STATE_WRITE_FAILED,
      `could not write ${what} to ${gitDir}: ${storageReason(code)}; nothing of it was recorded`,
      {
        subject: gitDir,
        exit: Exit.failed,
        fix: `${remedy(code, gitDir)}, then run the command again`,
      },
    ),
  );
}

/** What the operator does about `code` under `gitDir`. */
function remedy(code: string, gitDir: string): string {
  switch (code) {
    case 'ENOSPC':
    case 'EDQUOT':
      return `free space on the file system that holds ${gitDir} (\`df -h ${gitDir}\`)`;
    case 'EFBIG':
      return 'raise the file size limit of the shell that runs nyl (`ulimit -f unlimited`)';
    case 'EROFS':
    case 'EACCES':
    case 'EPERM':
      return `make ${gitDir} writable by the user that runs nyl`;
    case 'EMFILE':
    case 'ENFILE':
      return 'raise the open files limit (`ulimit -n`)';
    case 'EWRITE':
      return `check the space, permissions and health of the file system that holds ${gitDir} (\`df -h ${gitDir}\`)`;
    default:
      return `check the disk that holds ${gitDir} (\`dmesg\`)`;
  }
}
