import { posix } from 'node:path';

/** Whether `p` is `dir` or lies under it ('' is the repository root). */
export const inside = (dir: string, p: string) => dir === '' || p === dir || p.startsWith(`${dir}/`);

/** Whether one of `set` holds `p` (is it, or a folder above it): each of p's folders looked up once. */
export function underAny(set: Set<string>, p: string): boolean {
  if (set.has('') || set.has(p)) return true;
  for (let i = p.indexOf('/'); i >= 0; i = p.indexOf('/', i + 1)) if (set.has(p.slice(0, i))) return true;
  return false;
}

/** The folder of a path ('' at the root). */
export const folderOf = (p: string) => (posix.dirname(p) === '.' ? '' : posix.dirname(p));

/** Where a symbolic link at `link` points, as a repository path; null when it points outside it. */
export function linkTarget(link: string, target: string): string | null {
  if (target.startsWith('/')) return null;
  const p = posix.normalize(posix.join(folderOf(link) || '.', target)).replace(/\/+$/, '');
  if (p === '..' || p.startsWith('../')) return null;
  return p === '.' ? '' : p;
}

/**
 * A path with the symbolic links on it followed (`links`: each link's target, null outside the
 * repository), and the links it went through; undefined when one points outside the repository
 * or they go round in a circle.
 */
export function realPath(p: string, links: Map<string, string | null>): { path: string; via: string[] } | undefined {
  if (!links.size) return { path: p, via: [] };
  let cur = p;
  const via: string[] = [];
  for (let hop = 0; hop < 40; hop++) {
    const parts = cur.split('/');
    const at = parts.findIndex((_, i) => links.has(parts.slice(0, i + 1).join('/')));
    if (at < 0) return { path: cur, via };
    const link = parts.slice(0, at + 1).join('/');
    const target = links.get(link);
    via.push(link);
    if (target === null || target === undefined) return undefined;
    cur = [target, ...parts.slice(at + 1)].filter(Boolean).join('/');
  }
  return undefined;
}
