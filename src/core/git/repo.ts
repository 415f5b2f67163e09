import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { CatFile } from './cat-file.js';
import { DerivedCache } from './derived-cache.js';
import { runGit } from './exec.js';
import { gcLooksDue, startBackgroundGc } from './maintenance.js';
import {
  buildPack,
  type CommitSpec,
  type GitObject,
  type HashAlgo,
  makeObject,
  type ObjectType,
  type ParsedCommit,
  packEntryData,
  parseCommit,
  parseTree,
  type Signature,
  serializeCommit,
  serializeTree,
  type TreeEntry,
} from './objects.js';
import { crc32, packDirOf, writePackFiles } from './pack-files.js';
import { looksLikeStateCommit, shallowCommits } from './shallow.js';
import { storageCode, storageCodeInGit, storageFailure } from './storage-failure.js';

/** A full object id as git prints it (SHA-1 or SHA-256). */
const FULL_ID = /^(?:[0-9a-f]{40}|[0-9a-f]{64})$/;

export class GitError extends Error {
  constructor(
    message: string,
    readonly stderr: string,
  ) {
    super(message);
  }
}

/** A compare-and-swap ref update; `old` undefined means "must not exist", `new` undefined deletes. */
export interface RefUpdate {
  ref: string;
  old: string | undefined;
  new: string | undefined;
  /** Skip the old-value check (local copies of remote refs only). */
  force?: boolean;
}

/** Files of a tree by path: new content, or an object that already exists. */
export type TreeFiles = Map<string, Buffer | { oid: string }>;

/** What every blob and commit message written goes through; `generation` moves when its output may change. */
export interface TextFilter {
  mask(text: string): string;
  readonly generation: number;
}

/**
 * The git command manager: one object reader process, one spawn per object batch and per
 * ref transaction. Objects are hashed here so ids are known before git stores them.
 */
export class GitRepo {
  readonly cat: CatFile;
  private readonly known = new Set<string>();
  /**
   * Applied to every blob and commit message written (nyl sets its secret masking here, so no
   * secret reaches a ref whatever document carries it).
   */
  textFilter: TextFilter = { mask: (t) => t, generation: 0 };
  /**
   * A content buffer's blob id, as filtered under a generation of the filter: the run ref's files
   * are written again with every checkpoint, and a landing's trees are compared before written.
   */
  private readonly blobIds = new WeakMap<
    Buffer,
    { filter: TextFilter; generation: number; oid: string; body: Buffer }
  >();
  private identity: Signature | undefined;
  private configRead: Promise<Map<string, string>> | undefined;
  /** Where nyl writes packs itself; null: git must (pack-files.ts). Learned on the first write. */
  private packDir: string | null | undefined;

  /** Where objects, refs and `shallow` live: the main repository's git dir, for a linked worktree too. */
  readonly commonDir: string;
  /** Documents parsed from objects, kept between commands (derived-cache.ts). */
  readonly derived: DerivedCache;

  private constructor(
    readonly root: string,
    readonly gitDir: string,
    readonly algo: HashAlgo,
    readonly bare: boolean,
  ) {
    this.cat = new CatFile(root);
    this.commonDir = commonDirOf(gitDir);
    this.derived = DerivedCache.at(this.commonDir);
  }

  static async open(cwd: string): Promise<GitRepo> {
    // One process for a work tree; a bare repository has no top level and needs a second ask.
    const args = ['rev-parse', '--absolute-git-dir', '--show-object-format', '--is-bare-repository'];
    let r = await runGit([...args, '--show-toplevel'], { cwd });
    if (r.code !== 0) r = await runGit(args, { cwd });
    if (r.code !== 0) throw new GitError(`${cwd} is not inside a git repository`, r.stderr);
    const [gitDir, format, bare, top] = r.stdout.toString('utf8').trim().split('\n');
    const isBare = bare === 'true';
    const root = isBare || !top ? (gitDir as string) : top;
    return new GitRepo(root, gitDir as string, format === 'sha256' ? 'sha256' : 'sha1', isBare);
  }

  get zeroOid(): string {
    return '0'.repeat(this.algo === 'sha256' ? 64 : 40);
  }

  close(): void {
    this.cat.close();
  }

  // ---- reading -------------------------------------------------------------------------

  async readObject(name: string): Promise<{ oid: string; type: string; body: Buffer } | undefined> {
    const o = await this.cat.read(name);
    if (o) this.known.add(o.oid);
    return o;
  }

  async readCommit(name: string): Promise<(ParsedCommit & { oid: string }) | undefined> {
    const o = await this.readObject(name);
    if (o?.type !== 'commit') return undefined;
    return { oid: o.oid, ...parseCommit(o.body) };
  }

  async readTree(oid: string): Promise<TreeEntry[]> {
    const o = await this.readObject(oid);
    if (o?.type !== 'tree') return [];
    const entries = parseTree(this.algo, o.body);
    for (const e of entries) this.known.add(e.oid);
    return entries;
  }

  /** Every blob under a tree, by path; subtrees are read in parallel through the one reader. */
  async readTreeRecursive(oid: string, prefix = ''): Promise<Map<string, string>> {
    const out = new Map<string, string>();
    const walk = async (tree: string, at: string): Promise<void> => {
      const entries = await this.readTree(tree);
      await Promise.all(
        entries.map((e) => {
          const p = at ? `${at}/${e.name}` : e.name;
          if (e.mode === '40000') return walk(e.oid, p);
          // Symlinks and submodules are not files to read (e.g. YAML in a --config directory).
          if (e.mode === '120000' || e.mode === '160000') return undefined;
          out.set(p, e.oid);
          return undefined;
        }),
      );
    };
    await walk(oid, prefix);
    return out;
  }

  async readBlobs(oids: string[]): Promise<Buffer[]> {
    return Promise.all(
      oids.map(async (oid) => {
        const o = await this.readObject(oid);
        if (!o) throw new GitError(`object ${oid} is missing`, '');
        return o.body;
      }),
    );
  }

  /** Refs under one or more prefixes with their tips, in one process. */
  async listRefs(...prefixes: string[]): Promise<Map<string, string>> {
    const r = await runGit(['for-each-ref', '--format=%(objectname) %(refname)', ...prefixes.map((p) => `${p}/`)], {
      cwd: this.root,
    });
    if (r.code !== 0) throw new GitError('git for-each-ref failed', r.stderr);
    const out = new Map<string, string>();
    for (const line of r.stdout.toString('utf8').split('\n')) {
      if (!line) continue;
      const sp = line.indexOf(' ');
      out.set(line.slice(sp + 1), line.slice(0, sp));
      this.known.add(line.slice(0, sp));
    }
    return out;
  }

  /**
   * A clone made with --depth (an actions/checkout, a fetch of a commit at depth 1): its source
   * history stops somewhere, so ancestry cannot be told past it. The boundaries at nyl's own state
   * commits (state refs are fetched depth 1) do not count: they cut no source history.
   */
  async isShallow(): Promise<boolean> {
    const boundaries = shallowCommits(this.commonDir);
    if (!boundaries.length) return false;
    const source = await Promise.all(boundaries.map((oid) => this.isSourceBoundary(oid)));
    return source.some(Boolean);
  }

  private async isSourceBoundary(oid: string): Promise<boolean> {
    const c = await this.readCommit(oid);
    // Gone (pruned): nothing this clone holds has it for a parent, so it cuts nothing.
    if (!c) return false;
    const names = (await this.readTree(c.tree)).map((e) => e.name);
    return !looksLikeStateCommit(c.message, names);
  }

  /** Whether `ancestor` is `descendant` or one of its ancestors. */
  async isAncestor(ancestor: string, descendant: string): Promise<boolean> {
    if (ancestor === descendant) return true;
    const r = await runGit(['merge-base', '--is-ancestor', ancestor, descendant], { cwd: this.root });
    return r.code === 0;
  }

  /**
   * How `a` stands to `b` in one process (where two `merge-base --is-ancestor` took two): the
   * best common ancestors of an ancestor and its descendant are that ancestor alone.
   */
  async relation(a: string, b: string): Promise<'same' | 'ancestor' | 'descendant' | 'unrelated'> {
    if (a === b) return 'same';
    // merge-base prints full ids: a name given otherwise (short, a tag) is compared ancestor-wise.
    if (!FULL_ID.test(a) || !FULL_ID.test(b)) {
      if (await this.isAncestor(a, b)) return 'ancestor';
      return (await this.isAncestor(b, a)) ? 'descendant' : 'unrelated';
    }
    const r = await runGit(['merge-base', '--all', a, b], { cwd: this.root });
    const bases = r.code === 0 ? r.stdout.toString('utf8').trim().split('\n') : [];
    if (bases.length !== 1) return 'unrelated';
    return bases[0] === a ? 'ancestor' : bases[0] === b ? 'descendant' : 'unrelated';
  }

  // ---- writing -------------------------------------------------------------------------

  /** Hashes objects now; `flush` stores the ones git does not have yet in one process. */
  batch(): ObjectBatch {
    return new ObjectBatch(this);
  }

  /**
   * @internal Stores objects as one pack: one write, two files, however many objects (loose
   * objects cost a file each), written by nyl itself where it may (pack-files.ts), else by
   * `git index-pack`. A pack stores every object it is given, so objects the repository already
   * has (an unchanged document under a new path, a tree written before) are left out first: asked
   * of the one cat-file reader, pipelined, no process more (freshObjects). While git looks them
   * up (on another core), nyl compresses them: most of a write is new.
   */
  async storeObjects(objects: GitObject[]): Promise<void> {
    const unknown = objects.filter((o) => !this.known.has(o.oid));
    const lookup = freshObjects(this.algo, unknown, async (oid) => (await this.cat.read(oid)) !== undefined);
    await Promise.resolve(); // the lookups leave first
    // Copied out of zlib's output chunks (a KiB each, whatever the entry's size) while held.
    const data = new Map(unknown.map((o) => [o, [Buffer.concat(packEntryData(o))]]));
    const fresh = await lookup;
    for (const o of unknown) this.known.add(o.oid);
    if (!fresh.length) return;
    try {
      await this.writePack(fresh, data);
    } catch (e) {
      for (const o of fresh) this.known.delete(o.oid);
      throw e;
    }
    this.objectsAdded();
  }

  /** One pack of `objects`, their entries' data made already in `data` (let go once copied into the pack). */
  private async writePack(objects: GitObject[], data: Map<GitObject, Buffer[]>): Promise<void> {
    if (this.packDir === undefined) {
      const shared = (await this.config()).get('core.sharedrepository') ?? '';
      this.packDir = packDirOf(this.commonDir, shared) ?? null;
    }
    const entry = (o: GitObject) => data.get(o) ?? packEntryData(o);
    const built = buildPack(this.algo, objects, entry, this.packDir ? crc32 : undefined);
    data.clear();
    try {
      if (this.packDir && writePackFiles(this.packDir, this.algo, built)) return;
    } catch (e) {
      const code = storageCode(e);
      throw code ? storageFailure(this.commonDir, code) : e;
    }
    const r = await runGit(['index-pack', '--stdin'], { cwd: this.root, input: built.pack });
    if (r.code === 0) return;
    const code = storageCodeInGit(r.stderr, this.commonDir, r.signal);
    throw code ? storageFailure(this.commonDir, code) : new GitError('git index-pack failed', r.stderr);
  }

  /** After objects were added (a write, a fetch): a background `gc --auto` when packs pile up. */
  objectsAdded(): void {
    if (gcLooksDue(this.commonDir)) startBackgroundGc(this.root);
  }

  /** @internal `body` as the blob written for it: filtered, hashed (once per buffer and filter generation). */
  blob(body: Buffer): GitObject {
    const filter = this.textFilter;
    const generation = filter.generation;
    const memo = this.blobIds.get(body);
    if (memo?.filter === filter && memo.generation === generation)
      return { type: 'blob', oid: memo.oid, body: memo.body };
    const text = body.toString('utf8');
    const out = filter.mask(text);
    const o = makeObject(this.algo, 'blob', out === text ? body : Buffer.from(out));
    this.blobIds.set(body, { filter, generation, oid: o.oid, body: o.body });
    return o;
  }

  /** @internal */
  isKnown(oid: string): boolean {
    return this.known.has(oid);
  }

  /**
   * Applies updates as one transaction with every old value verified.
   * Returns false when a ref moved underneath us (a lost race), throws on other failures.
   */
  async updateRefs(updates: RefUpdate[]): Promise<boolean> {
    if (!updates.length) return true;
    const lines = ['start'];
    for (const u of updates) {
      const old = u.force ? '' : ` ${u.old ?? this.zeroOid}`;
      if (u.new === undefined) lines.push(`delete ${u.ref}${old}`);
      else lines.push(`update ${u.ref} ${u.new}${old}`);
    }
    lines.push('prepare', 'commit', '');
    const r = await runGit(['update-ref', '--stdin'], { cwd: this.root, input: lines.join('\n') });
    if (r.code === 0) return true;
    // A lock file the disk refused is no lost race ("cannot lock ref … Unable to create …: No space left").
    const code = storageCodeInGit(r.stderr, this.commonDir, r.signal);
    if (code) throw storageFailure(this.commonDir, code);
    if (/cannot lock ref|is at .* but expected|reference already exists|unable to resolve reference/.test(r.stderr))
      return false;
    throw new GitError('git update-ref failed', r.stderr);
  }

  /** The operator's git identity (user.name/user.email), or the local user as a fallback. */
  async signature(): Promise<Signature> {
    if (this.identity) return this.identity;
    const env = process.env;
    let name = env.GIT_COMMITTER_NAME ?? env.GIT_AUTHOR_NAME;
    let email = env.GIT_COMMITTER_EMAIL ?? env.GIT_AUTHOR_EMAIL;
    if (!name || !email) {
      const config = await this.config();
      if (!env.GIT_COMMITTER_NAME && !env.GIT_AUTHOR_NAME) name = config.get('user.name');
      if (!env.GIT_COMMITTER_EMAIL && !env.GIT_AUTHOR_EMAIL) email = config.get('user.email');
    }
    this.identity = { name: name || 'nyl', email: email || 'nyl@localhost' };
    return this.identity;
  }

  /**
   * What nyl reads of git's configuration, as git resolves it (system, global and repository
   * files, includes, `-c`, the environment): the identity and core.sharedRepository, in one process.
   */
  private config(): Promise<Map<string, string>> {
    this.configRead ??= runGit(['config', '--get-regexp', '^(user\\.(name|email)|core\\.sharedrepository)$'], {
      cwd: this.root,
    }).then((r) => {
      const out = new Map<string, string>();
      // git lists system, global, then repository values: the last one wins, as in git itself.
      for (const line of r.stdout.toString('utf8').split('\n')) {
        const sp = line.indexOf(' ');
        if (sp > 0) out.set(line.slice(0, sp).toLowerCase(), line.slice(sp + 1));
      }
      return out;
    });
    return this.configRead;
  }
}

/**
 * The objects of `objects` (children before parents, as a batch builds them) the repository does
 * not have. Blobs are looked up; a tree or commit that names an object just found missing cannot
 * be there either (so a write of new documents asks about each blob, not about the tree above it
 * and the commit above that); the others are looked up too, in one more round.
 */
async function freshObjects(
  algo: HashAlgo,
  objects: GitObject[],
  exists: (oid: string) => Promise<boolean>,
): Promise<GitObject[]> {
  const missing = new Set<string>();
  const ask = async (list: GitObject[]) => {
    const there = await Promise.all(list.map((o) => exists(o.oid)));
    for (const [i, o] of list.entries()) if (!there[i]) missing.add(o.oid);
  };
  await ask(objects.filter((o) => o.type === 'blob'));
  const unsure: GitObject[] = [];
  for (const o of objects) {
    if (o.type === 'blob') continue;
    const names = o.type === 'tree' ? parseTree(algo, o.body).map((e) => e.oid) : [parseCommit(o.body).tree];
    if (names.some((n) => missing.has(n))) missing.add(o.oid);
    else unsure.push(o);
  }
  await ask(unsure);
  return objects.filter((o) => missing.has(o.oid));
}

/** A linked worktree's git dir names the main one in its `commondir` file. */
function commonDirOf(gitDir: string): string {
  try {
    return resolve(gitDir, readFileSync(resolve(gitDir, 'commondir'), 'utf8').trim());
  } catch {
    return gitDir;
  }
}

export class ObjectBatch {
  private readonly objects: GitObject[] = [];
  /** Ids in `objects` (a batch of a first reconcile holds thousands: no scan per object). */
  private readonly ids = new Set<string>();
  constructor(private readonly repo: GitRepo) {}

  add(type: ObjectType, body: Buffer): string {
    const o = type === 'blob' ? this.repo.blob(body) : makeObject(this.repo.algo, type, body);
    if (!this.repo.isKnown(o.oid) && !this.ids.has(o.oid)) {
      this.objects.push(o);
      this.ids.add(o.oid);
    }
    return o.oid;
  }

  /** Builds nested trees from paths; unchanged files given by oid are not stored again. */
  tree(files: TreeFiles): string {
    interface Dir {
      files: Map<string, string>;
      dirs: Map<string, Dir>;
    }
    const root: Dir = { files: new Map(), dirs: new Map() };
    for (const [path, content] of files) {
      const parts = path.split('/');
      let d = root;
      for (const p of parts.slice(0, -1)) {
        let next = d.dirs.get(p);
        if (!next) {
          next = { files: new Map(), dirs: new Map() };
          d.dirs.set(p, next);
        }
        d = next;
      }
      const oid = Buffer.isBuffer(content) ? this.add('blob', content) : content.oid;
      d.files.set(parts[parts.length - 1] as string, oid);
    }
    const write = (d: Dir): string => {
      const entries: TreeEntry[] = [];
      for (const [name, oid] of d.files) entries.push({ mode: '100644', name, oid });
      for (const [name, sub] of d.dirs) entries.push({ mode: '40000', name, oid: write(sub) });
      return this.add('tree', serializeTree(entries));
    };
    return write(root);
  }

  commit(spec: CommitSpec): string {
    return this.add('commit', serializeCommit({ ...spec, message: this.repo.textFilter.mask(spec.message) }));
  }

  async flush(): Promise<void> {
    const list = this.objects.splice(0);
    this.ids.clear();
    await this.repo.storeObjects(list);
  }
}
