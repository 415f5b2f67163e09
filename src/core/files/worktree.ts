import { posix } from 'node:path';
import picomatch from 'picomatch';
import { type WorkTreeChange, workTreeChanges } from '../git/worktree-status.js';
import { Exit, type Problem, problem } from '../util/errors.js';
import { folderOf, inside, underAny } from './paths.js';
import { type FileRule, staticPrefix } from './rules.js';
import type { FileIds, SourceFiles } from './source-files.js';
import { toolMade } from './tf-calls.js';

/** A unit whose tools are about to run: its name, the rules of its key, and the files its key names. */
export interface UnitUse {
  name: string;
  rules: FileRule[];
  files?: FileIds;
}

/** The lock file `init` writes (a new platform's hashes): the commit's copy is keyed, a change here is the tool's. */
export const LOCK_FILE = '.terraform.lock.hcl';

/** Where some of a unit's files lie, for `git status`, and whether a changed path there is one of them. */
interface Area {
  dir: string;
  covers: (p: string) => boolean;
}

const notLock = (p: string) => posix.basename(p) !== LOCK_FILE;

/** A module folder and, transitively, the folders it calls (a submodule: the folder it pins). */
function moduleAreas(start: string, sources: SourceFiles): Area[] {
  const out: Area[] = [];
  const seen = new Set<string>();
  const visit = (d: string) => {
    const real = sources.resolve(d)?.path;
    if (real === undefined || seen.has(real)) return;
    seen.add(real);
    const gitlink = sources.gitlinkOf(real);
    if (gitlink) return void out.push({ dir: gitlink, covers: (p) => inside(gitlink, p) });
    out.push({ dir: real, covers: (p) => sources.moduleCovers(real, p) && notLock(p) });
    for (const t of sources.calls.get(real)?.targets ?? []) visit(t);
  };
  visit(start);
  return out;
}

/**
 * A rule whose path an item or an upstream output fills in: all of its fixed folder (a module
 * rule: with what every module folder there calls), the tools' files left out. Wider than the
 * unit's own files; a workstation's edit there waits for a commit a little more often.
 */
function dynamicAreas(rule: FileRule, sources: SourceFiles): Area[] {
  const dir = staticPrefix(rule);
  const own: Area = {
    dir,
    covers: (p) => inside(dir, p) && !toolMade(dir ? p.slice(dir.length + 1) : p) && notLock(p),
  };
  if (rule.kind !== 'module') return [own];
  const called = [...sources.calls].filter(([d]) => inside(dir, d)).flatMap(([, c]) => c.targets);
  return [own, ...called.flatMap((t) => moduleAreas(t, sources))];
}

function areas(rule: FileRule, sources: SourceFiles): Area[] {
  if (rule.pattern.includes('$')) return dynamicAreas(rule, sources);
  if (rule.kind === 'glob') {
    const match = picomatch(rule.pattern, { dot: true });
    return [{ dir: staticPrefix(rule), covers: (p) => match(p) }];
  }
  if (rule.kind === 'module') return moduleAreas(rule.pattern, sources);
  const real = sources.resolve(rule.pattern);
  const at = real?.path ?? rule.pattern;
  const dir = sources.gitlinkOf(at) ?? at;
  return [rule.pattern, ...(real?.via ?? []), dir].map((d) => ({ dir: d, covers: (p: string) => inside(d, p) }));
}

/** A unit's areas: its rules', and each file its key names that none of them holds (a link's target). */
function unitAreas(u: UnitUse, sources: SourceFiles): Area[] {
  const out = u.rules.flatMap((r) => areas(r, sources));
  for (const p of Object.keys(u.files ?? {}))
    if (!out.some((a) => inside(a.dir, p))) out.push({ dir: p, covers: (x) => inside(p, x) });
  return out;
}

/** Past this many paths in one folder, `git status` is asked for the folder (matching each path against every pathspec costs more). */
const FOLDER_AFTER = 16;

/**
 * What `git status` is asked about: each path once, none under another; the paths of a folder
 * that holds many are asked as the folder (what is reported is filtered by each unit's areas).
 */
function pathspecs(paths: string[]): string[] {
  const all = new Set(paths);
  if (all.has('')) return [''];
  const byFolder = new Map<string, string[]>();
  for (const p of all) {
    const f = folderOf(p);
    const list = byFolder.get(f);
    if (list) list.push(p);
    else byFolder.set(f, [p]);
  }
  const out = new Set<string>();
  for (const [f, ps] of byFolder) for (const p of f && ps.length > FOLDER_AFTER ? [f] : ps) out.add(p);
  return [...out].filter((p) => !underAny(out, folderOf(p) || '\0'));
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
  const per = units.map((u) => ({ name: u.name, areas: unitAreas(u, sources) }));
  const dirs = pathspecs(per.flatMap((u) => u.areas.map((a) => a.dir)));
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
