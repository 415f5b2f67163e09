import picomatch from 'picomatch';
import { inside, realPath } from './paths.js';
import { type FileRule, staticPrefix } from './rules.js';
import { toolMade } from './tf-calls.js';

/** The local modules one module folder calls (their real folders), and the calls that cannot be followed. */
export interface ModuleCalls {
  targets: string[];
  problems: string[];
}

/** Why a rule names no file it should: the spec field, and what is wrong. */
export interface FileProblem {
  field: string;
  message: string;
}

/** A unit's file identities: each path the key covers, by the id of its object in the source commit. */
export type FileIds = Record<string, string>;

/**
 * What files/snapshot.ts read of the source commit: every file listed by path (a blob's id; for a
 * symbolic link, the blob of its target's path; for a submodule, the commit it pins), where each
 * link points (null: outside the repository), which paths are submodules, and the local calls of
 * each module folder.
 */
export interface SourceData {
  files: Map<string, string>;
  links: Map<string, string | null>;
  gitlinks: Set<string>;
  calls: Map<string, ModuleCalls>;
}

/**
 * The files of the source commit that an environment's units need, answering, without reading
 * anything more, which files a unit's rules cover: its identities. A link is keyed with what it
 * points at; a submodule by the commit it pins (whatever lies in it). A module folder leaves out
 * the tools' files, the folders of other units' modules and the configuration files (`exclude`):
 * a change there is another unit's, or no unit's.
 */
export class SourceFiles {
  private readonly sorted: string[];
  private readonly memo = new Map<string, { files: FileIds; problems: FileProblem[] }>();
  /** The same rules asked again (rules/rulesOf keeps one array per spec): no key to build. */
  private readonly byArray = new WeakMap<FileRule[], { files: FileIds; problems: FileProblem[] }>();
  private readonly modules: string[];
  private readonly exclude: Set<string>;

  constructor(
    readonly data: SourceData,
    opts: { modules?: string[]; exclude?: string[] } = {},
  ) {
    this.sorted = [...data.files.keys()].sort();
    // Other units' module folders as written and where they are (a link's target).
    const modules = opts.modules ?? [];
    this.modules = [...new Set([...modules, ...modules.flatMap((m) => realPath(m, data.links)?.path ?? [])])];
    this.exclude = new Set(opts.exclude ?? []);
  }

  static empty(): SourceFiles {
    return new SourceFiles({ files: new Map(), links: new Map(), gitlinks: new Set(), calls: new Map() });
  }

  get calls(): Map<string, ModuleCalls> {
    return this.data.calls;
  }

  /** Every file under a folder ('' is the root), in path order. */
  under(dir: string): string[] {
    if (dir === '') return this.sorted;
    const prefix = `${dir}/`;
    let lo = 0;
    let hi = this.sorted.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if ((this.sorted[mid] as string) < prefix) lo = mid + 1;
      else hi = mid;
    }
    const out: string[] = [];
    for (let i = lo; i < this.sorted.length && (this.sorted[i] as string).startsWith(prefix); i++)
      out.push(this.sorted[i] as string);
    return out;
  }

  /** The submodule a path lies in (or is), if any. */
  gitlinkOf(p: string): string | undefined {
    if (!this.data.gitlinks.size) return undefined;
    for (const g of this.data.gitlinks) if (inside(g, p)) return g;
    return undefined;
  }

  /** A path with its links followed; the links on the way are keyed too. */
  resolve(p: string): { path: string; via: string[] } | undefined {
    return realPath(p, this.data.links);
  }

  /** What the rules cover, and what they name that the commit does not hold. */
  identity(rules: FileRule[]): { files: FileIds; problems: FileProblem[] } {
    const same = this.byArray.get(rules);
    if (same) return same;
    const key = JSON.stringify(rules);
    let hit = this.memo.get(key);
    if (!hit) {
      hit = new Identity(this).of(rules);
      this.memo.set(key, hit);
    }
    this.byArray.set(rules, hit);
    return hit;
  }

  /** Whether a module folder's key covers a file under it (`rel`: its path inside the folder). */
  moduleCovers(dir: string, p: string): boolean {
    if (!inside(dir, p) || this.exclude.has(p)) return false;
    if (toolMade(dir ? p.slice(dir.length + 1) : p)) return false;
    return !this.modules.some((m) => m !== dir && inside(dir, m) && inside(m, p));
  }
}

/** One set of rules' identities: what `add` met, and what the rules name that is not there. */
class Identity {
  private readonly files: FileIds = {};
  private readonly problems: FileProblem[] = [];
  private readonly modules = new Set<string>();

  constructor(private readonly s: SourceFiles) {}

  of(rules: FileRule[]): { files: FileIds; problems: FileProblem[] } {
    for (const rule of rules) {
      const say = (message: string) => this.problems.push({ field: rule.field, message });
      if (rule.kind === 'glob') this.glob(rule, say);
      else if (rule.kind === 'module') this.module(rule.pattern, say);
      else this.path(rule.pattern, rule.kind === 'path' ? say : undefined);
    }
    return { files: this.files, problems: this.problems };
  }

  /** A file, a link (and what it points at), or a submodule. */
  private add(p: string): void {
    if (p in this.files) return;
    const oid = this.s.data.files.get(p);
    if (oid === undefined) return;
    this.files[p] = oid;
    if (this.s.data.links.has(p)) {
      const real = this.s.resolve(p);
      if (real) this.path(real.path, undefined);
    }
  }

  /** A file or every file of a folder; `say` when nothing is there (a script that is not a file is no problem). */
  private path(p: string, say: ((m: string) => void) | undefined): void {
    // A link named itself: keyed, with what it points at when that is in the repository.
    if (this.s.data.links.has(p)) {
      this.add(p);
      return;
    }
    const real = this.s.resolve(p);
    for (const l of real?.via ?? []) this.add(l);
    const at = real?.path;
    const gitlink = at === undefined ? undefined : this.s.gitlinkOf(at);
    if (gitlink) {
      this.add(gitlink);
      return;
    }
    if (at !== undefined && this.s.data.files.has(at)) {
      this.add(at);
      return;
    }
    const found = at === undefined ? [] : this.s.under(at);
    for (const f of found) this.add(f);
    if (!found.length && say) say(`${p || '.'}: no such file or folder in the source commit`);
  }

  private glob(rule: FileRule, say: (m: string) => void): void {
    const match = picomatch(rule.pattern, { dot: true });
    const found = this.s.under(staticPrefix(rule)).filter((f) => match(f));
    if (!found.length) say(`${rule.pattern} matches no file in the source commit`);
    for (const f of found) this.add(f);
  }

  /** A module folder's files (see SourceFiles.moduleCovers) and, transitively, the local modules it calls. */
  private module(dir: string, say: (m: string) => void): void {
    const real = this.s.resolve(dir);
    for (const l of real?.via ?? []) this.add(l);
    const at = real?.path;
    if (at === undefined) {
      say(`${dir} is a link to a folder outside the repository: nyl keys a unit by the files its source commit holds`);
      return;
    }
    if (this.modules.has(at)) return;
    this.modules.add(at);
    const gitlink = this.s.gitlinkOf(at);
    if (gitlink) {
      this.add(gitlink);
      return;
    }
    const inside = this.s.under(at);
    if (this.s.data.files.has(at) || !inside.length) {
      say(
        this.s.data.files.has(at)
          ? `${dir} is a file, not a module folder`
          : `${dir || '.'} is not a folder in the source commit`,
      );
      return;
    }
    for (const f of inside) if (this.s.moduleCovers(at, f)) this.add(f);
    const calls = this.s.calls.get(at);
    for (const m of calls?.problems ?? []) say(m);
    for (const t of calls?.targets ?? []) this.module(t, say);
  }
}

/** The paths whose identity differs between two sets of identities (added, removed or changed), in order. */
export function changedPaths(before: FileIds, after: FileIds): string[] {
  const out: string[] = [];
  for (const p of new Set([...Object.keys(before), ...Object.keys(after)])) if (before[p] !== after[p]) out.push(p);
  return out.sort();
}

/** `infra/main.tf, modules/net/variables.tf and 4 more`: a few paths, then a count. */
export function pathsText(paths: string[], few = 3): string {
  if (paths.length <= few + 1) return paths.join(', ');
  return `${paths.slice(0, few).join(', ')} and ${paths.length - few} more`;
}
