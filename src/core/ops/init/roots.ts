import { readFileSync } from 'node:fs';
import { join, posix } from 'node:path';
import { calledFolder, isTfFile, localSources } from '../../files/tf-calls.js';
import { runGit } from '../../git/exec.js';
import { isSafeName } from '../../util/safe-name.js';

/**
 * The Terraform/OpenTofu root modules of a work tree: folders whose `.tf` (or `.tf.json`) files
 * hold a `terraform` block or a backend, less the folders another module calls by a local path
 * (`module "x" { source = "./…" }`: a child module, applied through its caller). Hidden folders
 * (`.terraform/`, where `init` copies modules, among them) and node_modules are never looked in.
 */

export interface TfFile {
  path: string;
  text: string;
}

/** A `terraform {` block at the start of a line, or a `backend "…" {` (in one, or an override file). */
const TERRAFORM_BLOCK = /^[ \t]*terraform[ \t]*\{|\bbackend[ \t]+"[^"\n]*"[ \t]*\{/m;

const skipped = (path: string) => path.split('/').some((p) => p.startsWith('.') || p === 'node_modules');

/** The files to look at: tracked or untracked but not ignored (what the repository holds or will). */
export async function tfFiles(root: string): Promise<TfFile[]> {
  const r = await runGit(['ls-files', '-z', '--cached', '--others', '--exclude-standard', '--', '*.tf', '*.tf.json'], {
    cwd: root,
  });
  const paths = [...new Set(r.stdout.toString('utf8').split('\0'))].filter(
    (p) => p && isTfFile(posix.basename(p)) && !skipped(p),
  );
  const files: TfFile[] = [];
  for (const path of paths.sort()) {
    try {
      files.push({ path, text: readFileSync(join(root, path), 'utf8') });
    } catch {
      // Listed by the index but gone from the work tree: not there to be a unit.
    }
  }
  return files;
}

function declaresTerraform(file: TfFile): boolean {
  if (!file.path.endsWith('.tf.json')) return TERRAFORM_BLOCK.test(file.text);
  try {
    const doc = JSON.parse(file.text) as { terraform?: unknown } | null;
    return doc?.terraform !== undefined;
  } catch {
    return false;
  }
}

const folderOf = (path: string) => {
  const d = posix.dirname(path);
  return d === '.' ? '' : d;
};

/** The root modules' folders ('' for the repository's top), in path order. */
export function rootModules(files: TfFile[]): string[] {
  const declared = new Set<string>();
  const called = new Set<string>();
  for (const f of files) {
    const dir = folderOf(f.path);
    if (declaresTerraform(f)) declared.add(dir);
    for (const source of localSources(f.path, f.text)) {
      const target = calledFolder(dir, source);
      if (target !== undefined && target !== dir) called.add(target);
    }
  }
  return [...declared].filter((d) => !called.has(d)).sort();
}

/** A path made into a unit name: runs of other characters become `-`; never `..`, nor a final `.` or `.lock`. */
function nameOf(parts: string[]): string {
  let n = parts
    .join('-')
    .replace(/[^A-Za-z0-9_.-]+/g, '-')
    .replace(/\.{2,}/g, '.')
    .replace(/-{2,}/g, '-')
    .replace(/^[^A-Za-z0-9]+/, '')
    .slice(-100)
    .replace(/^[^A-Za-z0-9]+/, '')
    .replace(/\.+$/, '');
  if (n.endsWith('.lock')) n = `${n.slice(0, -5)}-lock`;
  return isSafeName(n) ? n : 'module';
}

/**
 * Unit names for module folders: the folder's own name, or as many of its parents as tell it from
 * the others (`envs/dev/network` and `envs/prod/network`: `dev-network`, `prod-network`); names
 * still alike get `-2`, `-3`. The repository's top is `root`.
 */
export function unitNames(folders: string[]): Map<string, string> {
  const parts = new Map(folders.map((f) => [f, f ? f.split('/') : ['root']]));
  const depth = new Map(folders.map((f) => [f, 1]));
  const names = () => new Map(folders.map((f) => [f, nameOf((parts.get(f) as string[]).slice(-(depth.get(f) ?? 1)))]));
  let named = names();
  for (let grew = true; grew; ) {
    grew = false;
    const seen = new Map<string, string[]>();
    for (const [f, n] of named) seen.set(n, [...(seen.get(n) ?? []), f]);
    for (const alike of seen.values())
      for (const f of alike.length > 1 ? alike : [])
        if ((depth.get(f) as number) < (parts.get(f) as string[]).length) {
          depth.set(f, (depth.get(f) as number) + 1);
          grew = true;
        }
    named = names();
  }
  const taken = new Set<string>();
  return new Map(
    folders.map((f) => {
      const base = named.get(f) as string;
      let n = base;
      for (let i = 2; taken.has(n); i++) n = `${base.slice(0, 96)}-${i}`;
      taken.add(n);
      return [f, n];
    }),
  );
}
