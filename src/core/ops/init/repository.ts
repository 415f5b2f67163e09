import { runGit } from '../../git/exec.js';
import { Exit, NylError, problem } from '../../util/errors.js';

/** Where `nyl init` writes (the work tree's top) and the branch its workflows deploy from. */
export interface InitRepository {
  root: string;
  /** The branch pull requests go into and pushes deploy from. */
  branch: string;
  /** The branch checked out (undefined: HEAD is detached). */
  current?: string;
}

const git = async (args: string[], cwd: string) => {
  const r = await runGit(args, { cwd });
  return { ok: r.code === 0, out: r.stdout.toString('utf8').trim(), err: r.stderr.trim() };
};

/**
 * The repository around `cwd`. The branch: `--branch`, else the one origin's HEAD names (a clone
 * knows its default branch), else the one checked out; a detached HEAD names none.
 */
export async function initRepository(cwd: string, branch: string | undefined): Promise<InitRepository> {
  const top = await git(['rev-parse', '--show-toplevel'], cwd);
  if (!top.ok || !top.out)
    throw new NylError(
      problem('NYL-NOT-A-REPOSITORY', `${cwd} is not inside the work tree of a git repository`, {
        fix: 'run `nyl init` in a clone of your repository, or make one first: `git init -b main`',
      }),
    );
  const [head, originHead] = await Promise.all([
    git(['symbolic-ref', '-q', '--short', 'HEAD'], top.out),
    git(['symbolic-ref', '-q', '--short', 'refs/remotes/origin/HEAD'], top.out),
  ]);
  const current = head.ok && head.out ? head.out : undefined;
  if (!current && branch === undefined)
    throw new NylError(
      problem('NYL-INIT-BRANCH', 'HEAD is detached: no branch to name in the workflows (pushes to it deploy)', {
        exit: Exit.failed,
        fix: 'check out the branch deploys come from (`git switch main`) and run `nyl init` again, or pass --branch NAME',
      }),
    );
  const fromOrigin = originHead.ok && originHead.out.startsWith('origin/') ? originHead.out.slice(7) : undefined;
  return { root: top.out, branch: branch ?? fromOrigin ?? (current as string), ...(current ? { current } : {}) };
}
