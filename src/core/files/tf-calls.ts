import { posix } from 'node:path';

/**
 * The local modules a Terraform/OpenTofu file calls: the `source` of its module blocks when it is
 * a local path (`./…` or `../…`, the only forms the tools read as one; registry and remote sources
 * are pinned by the lock file or the address itself). HCL is scanned, not parsed: a `source`
 * assignment that starts a line or follows a block's `{` (`module "x" { source = "./x" }`); a local
 * path can appear nowhere else. A match inside a comment only widens the key, never narrows it.
 */
export function localSources(file: string, text: string): string[] {
  if (file.endsWith('.tf.json')) return jsonSources(text);
  const out: string[] = [];
  for (const m of text.matchAll(/(?:^|[{;,])[ \t]*source[ \t]*=[ \t]*"(\.\.?\/[^"]*|\.\.?)"/gm))
    out.push(m[1] as string);
  return out;
}

/** `{"module": {"net": {"source": "./net"}}}`, or a list of such objects (the JSON syntax allows both). */
function jsonSources(text: string): string[] {
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch {
    return []; // the tool reports a file it cannot read; the file's own id is in the key
  }
  const modules = (doc as { module?: unknown } | null)?.module;
  const blocks = (Array.isArray(modules) ? modules : [modules]).flatMap((m) =>
    m && typeof m === 'object' ? Object.values(m as Record<string, unknown>) : [],
  );
  return blocks
    .flatMap((b) => (Array.isArray(b) ? b : [b]))
    .map((b) => (b as { source?: unknown } | null)?.source)
    .filter((s): s is string => typeof s === 'string' && /^\.\.?(\/|$)/.test(s));
}

/** Whether a file of a module folder is one of its configuration files. */
export const isTfFile = (name: string) => name.endsWith('.tf') || name.endsWith('.tf.json');

/** A call's folder from the calling module's folder; undefined when it leaves the repository. */
export function calledFolder(from: string, source: string): string | undefined {
  const joined = posix.normalize(posix.join(from || '.', source)).replace(/\/+$/, '');
  if (joined === '..' || joined.startsWith('../')) return undefined;
  return joined === '.' ? '' : joined;
}

/**
 * Files the tools make in a module folder, never part of what it runs: `.terraform/` (providers,
 * modules), state and its backups, the local lock, workspaces' states. `rel` is inside the folder.
 */
export function toolMade(rel: string): boolean {
  const parts = rel.split('/');
  if (parts.some((p) => p === '.terraform' || p === 'terraform.tfstate.d')) return true;
  const base = parts[parts.length - 1] as string;
  return /\.tfstate$/.test(base) || /\.tfstate\.[^/]+$/.test(base) || base === '.terraform.tfstate.lock.info';
}
