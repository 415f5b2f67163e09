import picomatch from 'picomatch';
import { type WorkTreeChange, workTreeChanges } from '../git/worktree-status.js';
import { Exit, type Problem, problem } from '../util/errors.js';
import { type FileRule, staticPrefix } from './rules.js';
import type { SourceFiles } from './source-files.js';
import { toolMade } from './tf-calls.js';

/** A unit whose tools are about to run: its name and the rules of its key (resolved paths). */
export interface UnitUse {
  name: string;
  rules: FileRule[];
}

/** The lock file `init` writes (a new platform's hashes): the commit's copy is keyed, a change here is the tool's. */
const LOCK_FILE = '.terraform.lock.hcl';

/** Where a rule's files lie, for `git status`, and whether a path there is one of them. */
function areas(rule: FileRule, sources: SourceFiles): { dir: string; covers: (p: string) => boolean }[] {
  const inside = (dir: string, p: string) => dir === '' || p === dir || p.startsWith(`${dir}/`);
  if (rule.kind === 'glob') {
    const match = picomatch(rule.pattern, { dot: true });
    return [{ dir: staticPrefix(rule), covers: (p) => match(p) }];
  }
  if (rule.kind !== 'module') return [{ dir: rule.pattern, covers: (p) => inside(rule.pattern, p) }];
  const folders: string[] = [];
  const visit = (d: string) => {
    if (folders.includes(d)) return;
    folders.push(d);
    for (const t of sources.calls.get(d)?.targets ?? []) visit(t);
  };
  visit(rule.pattern);
  return folders.map((dir) => ({
    dir,
    covers: (p: string) => {
      if (!inside(dir, p)) return false;
      const rel = dir ? p.slice(dir.length + 1) : p;
      return !toolMade(rel) && !(rel === LOCK_FILE);
    },
  }));
}

/**
 * The units whose files in the working tree are not the source commit's: the tools run on the
 * working tree, while the key and the receipt name the commit's files, so such a run would apply
 * what nobody recorded. CI checkouts are clean; a workstation with an uncommitted edit is refused
 * before anything runs (NYL-FILES-UNCOMMITTED, exit 2), naming the files.
 */
export async function uncommittedFiles(
  root: string,
  source: string,
  sources: SourceFiles,
  units: UnitUse[],
): Promise<Problem[]> {
  const per = units.map((u) => ({ name: u.name, areas: u.rules.flatMap((r) => areas(r, sources)) }));
  const dirs = per.flatMap((u) => u.areas.map((a) => a.dir));
  if (!dirs.length) return [];
  const changes = await workTreeChanges(root, dirs);
  if (!changes.size) return [];
  const problems: Problem[] = [];
  for (const u of per) {
    const mine: [string, WorkTreeChange][] = [...changes].filter(([p]) => u.areas.some((a) => a.covers(p)));
    if (mine.length) problems.push(uncommittedProblem(u.name, source, mine));
  }
  return problems;
}

function uncommittedProblem(unit: string, source: string, files: [string, WorkTreeChange][]): Problem {
  const shown = files.slice(0, 10).map(([p, c]) => `${p} (${c})`);
  if (files.length > 10) shown.push(`and ${files.length - 10} more`);
  const paths = files.map(([p]) => p);
  const quoted = paths.slice(0, 5).map((p) => (/^[\w./-]+$/.test(p) ? p : `'${p.replace(/'/g, `'\\''`)}'`));
  return problem(
    'NYL-FILES-UNCOMMITTED',
    `${unit} uses files that differ from the source commit ${source.slice(0, 12)}: ${shown.join(', ')}; the tools would run them, while its key and receipt name the committed ones`,
    {
      subject: unit,
      exit: Exit.refused,
      fix: `commit them (\`git add ${quoted.join(' ')}${paths.length > 5 ? ' …' : ''} && git commit\`) or set them aside (\`git stash --include-untracked\`), then run again`,
    },
  );
}
