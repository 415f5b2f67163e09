import { CommitTree, type PathEntry } from '../git/commit-tree.js';
import type { GitRepo } from '../git/repo.js';
import { folderOf, inside, linkTarget, realPath, underAny } from './paths.js';
import { type FileRule, staticPrefix } from './rules.js';
import { type ModuleCalls, type SourceData, SourceFiles } from './source-files.js';
import { calledFolder, isTfFile, localSources } from './tf-calls.js';

/** What the derived cache keeps of a snapshot (git/derived-cache.ts): plain lists. */
interface Cached {
  files: [string, string][];
  links: [string, string | null][];
  gitlinks: string[];
  calls: [string, string[], string[]][];
}

/** Paths that none of the others holds (a folder above them): each is listed once. */
function outermost(paths: string[]): string[] {
  const all = new Set(paths);
  if (all.has('')) return [''];
  return [...all].filter((p) => !underAny(all, p.slice(0, Math.max(0, p.lastIndexOf('/'))) || '\0')).sort();
}

/** Rounds of links that point at links: past this many, the rest stay unfollowed (their own blobs are keyed). */
const LINK_ROUNDS = 10;

/** The files of a commit read so far: listed folders, links followed, submodules. */
class Reading implements SourceData {
  readonly files = new Map<string, string>();
  readonly links = new Map<string, string | null>();
  readonly gitlinks = new Set<string>();
  readonly calls = new Map<string, ModuleCalls>();
  private readonly listed = new Set<string>();
  private readonly unread: string[] = [];

  constructor(readonly tree: CommitTree) {}

  /** Lists what is under each path not listed yet, then follows the links found (to what they point at). */
  async list(paths: string[]): Promise<void> {
    let todo = paths;
    for (let round = 0; todo.length && round < LINK_ROUNDS; round++) {
      const fresh = outermost(todo).filter((d) => !underAny(this.listed, d));
      for (const d of fresh) this.listed.add(d);
      for (const found of await Promise.all(fresh.map((d) => this.tree.list(d)))) for (const e of found) this.add(e);
      todo = await this.followLinks();
    }
  }

  private add(e: PathEntry): void {
    this.files.set(e.path, e.oid);
    if (e.kind === 'gitlink') this.gitlinks.add(e.path);
    if (e.kind === 'link' && !this.links.has(e.path)) this.unread.push(e.path);
  }

  /** Reads the links found since the last call; returns their targets, to be listed. */
  private async followLinks(): Promise<string[]> {
    const links = this.unread.splice(0);
    const texts = await Promise.all(links.map((l) => this.tree.read(this.files.get(l) as string)));
    const targets: string[] = [];
    links.forEach((l, i) => {
      const t = linkTarget(l, texts[i]?.toString('utf8') ?? '/');
      this.links.set(l, t);
      if (t !== null) targets.push(t);
    });
    return targets;
  }

  /** Whether the commit holds something at or under a (real) path: files, or the submodule it is in. */
  holds(dir: string): boolean {
    for (const g of this.gitlinks) if (inside(g, dir)) return true;
    for (const p of this.files.keys()) if (inside(dir, p)) return true;
    return false;
  }
}

/**
 * Reads what the rules need of a commit: the files under each rule's fixed prefix (links followed
 * to what they point at inside the repository), and the local module calls of every module folder
 * under a module rule's prefix, followed to the folders they call (listed too). Trees and blobs
 * come through the repository's object reader, each once; the result is kept in the derived cache
 * by the commit's tree and the rules' prefixes, so a second command on the same commit reads one
 * file. `keep.exclude`: files no module folder's key covers (the configuration itself);
 * `keep.modules`: every unit's module folder (another unit's is not this one's).
 */
export async function readSources(
  repo: GitRepo,
  rootTree: string,
  rules: FileRule[],
  keep: { exclude?: string[]; modules?: string[] } = {},
): Promise<SourceFiles> {
  const roots = outermost(rules.map(staticPrefix));
  const moduleRoots = outermost(rules.filter((r) => r.kind === 'module').map(staticPrefix));
  const modules =
    keep.modules ?? rules.filter((r) => r.kind === 'module' && !r.pattern.includes('$')).map((r) => r.pattern);
  const exclude = keep.exclude ?? [];
  const key = `${rootTree}\0${JSON.stringify([roots, moduleRoots])}`;
  const hit = repo.derived.get<Cached>('sources', key);
  if (hit) return new SourceFiles(fromCache(hit), { modules, exclude });
  const r = new Reading(new CommitTree(repo, rootTree));
  await r.list(roots);
  await followCalls(r, moduleRoots);
  repo.derived.set('sources', key, {
    files: [...r.files],
    links: [...r.links],
    gitlinks: [...r.gitlinks],
    calls: [...r.calls].map(([d, c]) => [d, c.targets, c.problems]),
  } satisfies Cached);
  return new SourceFiles(r, { modules, exclude });
}

function fromCache(c: Cached): SourceData {
  return {
    files: new Map(c.files),
    links: new Map(c.links),
    gitlinks: new Set(c.gitlinks),
    calls: new Map(c.calls.map(([d, t, p]) => [d, { targets: t, problems: p }])),
  };
}

/** Folders holding configuration files directly (under `within`), each with its files. */
function tfFolders(files: Map<string, string>, within: string[]): Map<string, string[]> {
  const out = new Map<string, string[]>();
  for (const p of files.keys()) {
    if (!isTfFile(p) || !within.some((r) => inside(r, p))) continue;
    const dir = folderOf(p);
    const list = out.get(dir);
    if (list) list.push(p);
    else out.set(dir, [p]);
  }
  return out;
}

/** Each module folder's local calls, followed (and listed) until no new folder is called. */
async function followCalls(r: Reading, moduleRoots: string[]): Promise<void> {
  let todo = [...tfFolders(r.files, moduleRoots).keys()];
  while (todo.length) {
    const folders = tfFolders(r.files, todo);
    const found = await Promise.all(todo.map((dir) => callsOf(r, dir, folders.get(dir) ?? [])));
    await r.list(found.flatMap((c) => c.targets));
    const next = new Set<string>();
    todo.forEach((dir, i) => {
      const c = found[i] as ModuleCalls;
      const targets: string[] = [];
      for (const t of c.targets) {
        // A call through a link is a call of the folder it points at.
        const real = realPath(t, r.links)?.path;
        if (real === undefined || !r.holds(real))
          c.problems.push(`${dir || '.'} calls the module ${t}, which the source commit does not hold`);
        else if (real !== dir && !targets.includes(real)) targets.push(real);
      }
      r.calls.set(dir, { targets, problems: c.problems });
      for (const t of targets) if (!r.calls.has(t) && ![...r.gitlinks].some((g) => inside(g, t))) next.add(t);
    });
    todo = [...next].filter((t) => !todo.includes(t));
  }
}

async function callsOf(r: Reading, dir: string, tf: string[]): Promise<ModuleCalls> {
  const targets: string[] = [];
  const problems: string[] = [];
  const bodies = await Promise.all(tf.map((file) => r.tree.read(r.files.get(file) as string)));
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
