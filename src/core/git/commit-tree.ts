import type { TreeEntry } from './objects.js';
import type { GitRepo } from './repo.js';

/**
 * What a path is in a commit: a folder, a file (its blob), a symbolic link (the blob of its
 * target's path) or a submodule (the commit it pins).
 */
export type EntryKind = 'tree' | 'file' | 'link' | 'gitlink';

export interface PathEntry {
  kind: EntryKind;
  oid: string;
  /** Where it is: the path asked for, or the link or submodule met on the way to it. */
  path: string;
}

const kindOf = (mode: TreeEntry['mode']): EntryKind =>
  mode === '40000' ? 'tree' : mode === '120000' ? 'link' : mode === '160000' ? 'gitlink' : 'file';

/**
 * The files of one commit, read through the repository's object reader (no process of its own):
 * only the subtrees asked for are read, each tree once.
 */
export class CommitTree {
  private readonly trees = new Map<string, Promise<TreeEntry[]>>();

  constructor(
    private readonly repo: GitRepo,
    readonly rootTree: string,
  ) {}

  private entries(tree: string): Promise<TreeEntry[]> {
    let e = this.trees.get(tree);
    if (!e) {
      e = this.repo.readTree(tree);
      this.trees.set(tree, e);
    }
    return e;
  }

  /**
   * What `path` is ('' is the root); a link or submodule on the way is returned as itself (what
   * lies behind it is elsewhere); undefined when the commit holds nothing there.
   */
  async entry(path: string): Promise<PathEntry | undefined> {
    let at: PathEntry = { kind: 'tree', oid: this.rootTree, path: '' };
    for (const part of path.split('/').filter(Boolean)) {
      if (at.kind !== 'tree') return at;
      const e = (await this.entries(at.oid)).find((x) => x.name === part);
      if (!e) return undefined;
      at = { kind: kindOf(e.mode), oid: e.oid, path: at.path ? `${at.path}/${part}` : part };
    }
    return at;
  }

  /** Every entry but folders at or under `path` (or the link or submodule on the way to it). */
  async list(path: string): Promise<PathEntry[]> {
    const top = await this.entry(path);
    if (!top) return [];
    if (top.kind !== 'tree') return [top];
    const out: PathEntry[] = [];
    const walk = async (tree: string, at: string): Promise<void> => {
      const entries = await this.entries(tree);
      await Promise.all(
        entries.map((e) => {
          const p = at ? `${at}/${e.name}` : e.name;
          const kind = kindOf(e.mode);
          if (kind === 'tree') return walk(e.oid, p);
          out.push({ kind, oid: e.oid, path: p });
          return undefined;
        }),
      );
    };
    await walk(top.oid, top.path);
    return out;
  }

  /** A blob's bytes. */
  async read(oid: string): Promise<Buffer | undefined> {
    const o = await this.repo.readObject(oid);
    return o?.type === 'blob' ? o.body : undefined;
  }
}
