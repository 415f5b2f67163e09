import type { TreeEntry } from './objects.js';
import type { GitRepo } from './repo.js';

/** A path in a commit: a tree (folder) or a file, with its object id. */
export interface PathEntry {
  type: 'tree' | 'file';
  oid: string;
}

/**
 * The files of one commit, read through the repository's object reader (no process of its own):
 * only the subtrees asked for are read, each tree once. A file is a blob (its id names its bytes),
 * a symbolic link (the blob of its target) or a submodule (the commit it pins): all three are
 * what a tool run in the work tree would meet.
 */
export class CommitTree {
  private readonly trees = new Map<string, Promise<TreeEntry[]>>();

  constructor(
    private readonly repo: GitRepo,
    readonly rootTree: string,
  ) {}

  /** The entries of a tree object (read once). */
  private entries(tree: string): Promise<TreeEntry[]> {
    let e = this.trees.get(tree);
    if (!e) {
      e = this.repo.readTree(tree);
      this.trees.set(tree, e);
    }
    return e;
  }

  /** What `path` is in the commit ('' is the root), or undefined when it holds nothing there. */
  async entry(path: string): Promise<PathEntry | undefined> {
    let at: PathEntry = { type: 'tree', oid: this.rootTree };
    for (const part of path.split('/').filter(Boolean)) {
      if (at.type !== 'tree') return undefined;
      const e = (await this.entries(at.oid)).find((x) => x.name === part);
      if (!e) return undefined;
      at = { type: e.mode === '40000' ? 'tree' : 'file', oid: e.oid };
    }
    return at;
  }

  /** Every file at or under `path`, by its path from the repository root. */
  async list(path: string): Promise<Map<string, string>> {
    const out = new Map<string, string>();
    const top = await this.entry(path);
    if (!top) return out;
    if (top.type === 'file') return out.set(path, top.oid);
    const walk = async (tree: string, at: string): Promise<void> => {
      const entries = await this.entries(tree);
      await Promise.all(
        entries.map((e) => {
          const p = at ? `${at}/${e.name}` : e.name;
          if (e.mode === '40000') return walk(e.oid, p);
          out.set(p, e.oid);
          return undefined;
        }),
      );
    };
    await walk(top.oid, path);
    return out;
  }

  /** A file's bytes. */
  async read(oid: string): Promise<Buffer | undefined> {
    const o = await this.repo.readObject(oid);
    return o?.type === 'blob' ? o.body : undefined;
  }
}
