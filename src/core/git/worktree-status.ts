import { runGit } from './exec.js';
import { GitError } from './repo.js';

/** How a path of the working tree differs from HEAD. */
export type WorkTreeChange = 'modified' | 'deleted' | 'not committed';

/** Pathspecs per git process: a command line stays far below the system's limit. */
const CHUNK = 1000;

/**
 * The paths under `pathspecs` where the working tree (index included) differs from HEAD, and the
 * untracked files there that .gitignore does not hide. `git status` compares file contents where
 * the index's stat data is stale, so a touched but unchanged file is no change; it takes no
 * optional lock, so it never competes with another git in the clone.
 */
export async function workTreeChanges(root: string, pathspecs: string[]): Promise<Map<string, WorkTreeChange>> {
  const out = new Map<string, WorkTreeChange>();
  // `:(top,literal)` + path: from the repository root, no pattern characters; '' is the whole tree.
  const specs = [...new Set(pathspecs)];
  for (let i = 0; i < specs.length; i += CHUNK) {
    const args = ['--no-optional-locks', 'status', '--porcelain=v1', '-z', '--untracked-files=all', '--no-renames'];
    const r = await runGit([...args, '--', ...specs.slice(i, i + CHUNK).map((p) => `:(top,literal)${p}`)], {
      cwd: root,
    });
    if (r.code !== 0) throw new GitError(`git status failed in ${root}`, r.stderr);
    for (const entry of r.stdout.toString('utf8').split('\0')) {
      if (entry.length < 4) continue;
      const xy = entry.slice(0, 2);
      const path = entry.slice(3);
      out.set(path, xy === '??' ? 'not committed' : xy.includes('D') ? 'deleted' : 'modified');
    }
  }
  return out;
}
