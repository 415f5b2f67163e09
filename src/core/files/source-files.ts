import picomatch from 'picomatch';
import { type FileRule, staticPrefix } from './rules.js';
import { toolMade } from './tf-calls.js';

/** The local modules one module folder calls, and the calls that cannot be followed. */
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
 * The files of the source commit that the rules of an environment's units need (files/snapshot.ts
 * reads them), and the local module calls of its module folders. Answers, without reading
 * anything more, which files a unit's rules cover: its identities.
 */
export class SourceFiles {
  private readonly sorted: string[];
  private readonly memo = new Map<string, { files: FileIds; problems: FileProblem[] }>();

  constructor(
    readonly files: Map<string, string>,
    readonly calls: Map<string, ModuleCalls>,
  ) {
    this.sorted = [...files.keys()].sort();
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

  /** What the rules cover, and what they name that the commit does not hold. */
  identity(rules: FileRule[]): { files: FileIds; problems: FileProblem[] } {
    const key = JSON.stringify(rules);
    let hit = this.memo.get(key);
    if (!hit) {
      hit = this.compute(rules);
      this.memo.set(key, hit);
    }
    return hit;
  }

  private compute(rules: FileRule[]): { files: FileIds; problems: FileProblem[] } {
    const files: FileIds = {};
    const problems: FileProblem[] = [];
    const add = (p: string) => {
      files[p] = this.files.get(p) as string;
    };
    for (const rule of rules) {
      const say = (message: string) => problems.push({ field: rule.field, message });
      const p = rule.pattern;
      if (rule.kind === 'script') {
        if (this.files.has(p)) add(p);
      } else if (rule.kind === 'path') {
        if (this.files.has(p)) add(p);
        else if (this.under(p).length) for (const f of this.under(p)) add(f);
        else say(`${p || '.'}: no such file or folder in the source commit`);
      } else if (rule.kind === 'glob') {
        const match = picomatch(p, { dot: true });
        const found = this.under(staticPrefix(rule)).filter((f) => match(f));
        if (!found.length) say(`${p} matches no file in the source commit`);
        for (const f of found) add(f);
      } else this.addModule(p, add, say, new Set());
    }
    return { files, problems };
  }

  /** A module folder's files (the tools' own left out) and, transitively, the local modules it calls. */
  private addModule(dir: string, add: (p: string) => void, say: (m: string) => void, seen: Set<string>): void {
    if (seen.has(dir)) return;
    seen.add(dir);
    const inside = this.under(dir);
    if (this.files.has(dir) || !inside.length) {
      say(
        this.files.has(dir)
          ? `${dir} is a file, not a module folder`
          : `${dir || '.'} is not a folder in the source commit`,
      );
      return;
    }
    const cut = dir ? dir.length + 1 : 0;
    for (const f of inside) if (!toolMade(f.slice(cut))) add(f);
    const calls = this.calls.get(dir);
    for (const m of calls?.problems ?? []) say(m);
    for (const t of calls?.targets ?? []) this.addModule(t, add, say, seen);
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
