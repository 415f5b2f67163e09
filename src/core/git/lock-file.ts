import { isAbsolute, relative, resolve } from 'node:path';
import { Exit, NylError, problem } from '../util/errors.js';

/**
 * A lock file of git's that is there already, in this clone (a depth fetch's `shallow.lock`, a
 * ref's `.lock`): another git runs in the clone, or one was killed before it could remove it (a
 * runner killed mid-fetch, on a machine that keeps its workspace). git never removes it by
 * itself, and every later fetch fails on it: the operator's to remove, once no git runs.
 */
export const GIT_LOCKED = 'NYL-GIT-LOCKED';

/** The lock file git's words name as existing ("Unable to create '…/x.lock': File exists"), if it is under `gitDir`. */
export function lockLeftBehind(stderr: string, gitDir: string, root: string): string | undefined {
  const m = /Unable to create '([^']+\.lock)': File exists/.exec(stderr);
  if (!m) return undefined;
  const path = resolve(root, m[1] as string);
  const inside = relative(resolve(gitDir), path);
  return inside && !inside.startsWith('..') && !isAbsolute(inside) ? path : undefined;
}

export function gitLocked(lock: string, root: string, what: string): NylError {
  return new NylError(
    problem(GIT_LOCKED, `${what}: git's lock file ${lock} is there already`, {
      subject: lock,
      exit: Exit.failed,
      fix: `another git runs in ${root}, or one was killed there before it could remove the file: once none runs (\`pgrep -a git\`), remove it (\`rm ${lock}\`) and run the command again`,
    }),
  );
}
