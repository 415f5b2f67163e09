import { posix } from 'node:path';
import { CommitTree } from '../git/commit-tree.js';
import type { GitRepo } from '../git/repo.js';
import { type FileRule, staticPrefix } from './rules.js';
import { type ModuleCalls, SourceFiles } from './source-files.js';
import { calledFolder, isTfFile, localSources } from './tf-calls.js';

/** What the derived cache keeps of a snapshot (git/derived-cache.ts): plain lists. */
interface Cached {
  files: [string, string][];
  calls: [string, string[], string[]][];
}

const under = (root: string, p: string) => root === '' || p === root || p.startsWith(`${root}/`);

/** Folders that none of the others holds: each is listed once. */
function outermost(paths: string[]): string[] {
  const sorted = [...new Set(paths)].sort();
  return sorted.filter((p) => !sorted.some((q) => q !== p && under(q, p)));
}

/**
 * Reads what the rules need of a commit: the files under each rule's fixed prefix, and the local
 * module calls of every module folder under a module rule's prefix, followed to the folders they
 * call (listed too). Trees and blobs come through the repository's object reader, each once; the
 * result is kept in the derived cache by the commit's tree and the rules' prefixes, so a second
 * command on the same commit reads one file.
 */
export async function readSources(repo: GitRepo, rootTree: string, rules: FileRule[]): Promise<SourceFiles> {
  const roots = outermost(rules.map(staticPrefix));
  const moduleRoots = outermost(rules.filter((r) => r.kind === 'module').map(staticPrefix));
  const key = `${rootTree}\0${JSON.stringify([roots, moduleRoots])}`;
  const hit = repo.derived.get<Cached>('sources', key);
  if (hit)
    return new SourceFiles(new Map(hit.files), new Map(hit.calls.map(([d, t, p]) => [d, { targets: t, problems: p }])));
  const tree = new CommitTree(repo, rootTree);
  const files = new Map<string, string>();
  const listed: string[] = [];
  const list = async (dirs: string[]) => {
    const fresh = dirs.filter((d) => !listed.some((r) => under(r, d)));
    listed.push(...fresh);
    for (const m of await Promise.all(fresh.map((d) => tree.list(d)))) for (const [p, oid] of m) files.set(p, oid);
  };
  await list(roots);
  const calls = await followCalls(tree, files, moduleRoots, list);
  const cached: Cached = {
    files: [...files],
    calls: [...calls].map(([d, c]) => [d, c.targets, c.problems]),
  };
  repo.derived.set('sources', key, cached);
  return new SourceFiles(files, calls);
}

/** Folders holding configuration files directly, each with its files. */
function tfFolders(files: Map<string, string>, inside: string[]): Map<string, string[]> {
  const out = new Map<string, string[]>();
  for (const p of files.keys()) {
    if (!isTfFile(p) || !inside.some((r) => under(r, p))) continue;
    const dir = posix.dirname(p) === '.' ? '' : posix.dirname(p);
    out.set(dir, [...(out.get(dir) ?? []), p]);
  }
  return out;
}

/** Each module folder's local calls, followed (and listed) until no new folder is called. */
async function followCalls(
  tree: CommitTree,
  files: Map<string, string>,
  moduleRoots: string[],
  list: (dirs: string[]) => Promise<void>,
): Promise<Map<string, ModuleCalls>> {
  const calls = new Map<string, ModuleCalls>();
  const holds = (dir: string) => [...files.keys()].some((p) => under(dir, p));
  let todo = [...tfFolders(files, moduleRoots).keys()];
  while (todo.length) {
    const folders = tfFolders(files, todo);
    const found = await Promise.all(todo.map((dir) => callsOf(tree, files, dir, folders.get(dir) ?? [])));
    const next = [...new Set(found.flatMap((c) => c.targets))].filter((t) => !calls.has(t) && !todo.includes(t));
    await list(next);
    todo.forEach((dir, i) => {
      const c = found[i] as ModuleCalls;
      // A called folder the commit does not hold is a problem of its caller, not a module to follow.
      for (const t of c.targets.filter((x) => !holds(x)))
        c.problems.push(`${dir || '.'} calls the module ${t}, which the source commit does not hold`);
      calls.set(dir, { targets: c.targets.filter(holds), problems: c.problems });
    });
    todo = next.filter(holds);
  }
  return calls;
}

async function callsOf(tree: CommitTree, files: Map<string, string>, dir: string, tf: string[]): Promise<ModuleCalls> {
  const targets: string[] = [];
  const problems: string[] = [];
  const bodies = await Promise.all(tf.map((file) => tree.read(files.get(file) as string)));
  tf.forEach((file, i) => {
    for (const source of localSources(file, bodies[i]?.toString('utf8') ?? '')) {
      const t = calledFolder(dir, source);
      if (t === undefined)
        problems.push(
          `${file} calls the module ${JSON.stringify(source)}, outside the repository: nyl keys a unit by the files its source commit holds`,
        );
      else if (t !== dir && !targets.includes(t)) targets.push(t);
    }
  });
  return { targets, problems };
}
