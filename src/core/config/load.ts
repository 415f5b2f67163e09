import { posix, relative, resolve } from 'node:path';
import * as z from 'zod/mini';
import type { $ZodType } from 'zod/v4/core';
import { jsonExact } from '../git/derived-cache.js';
import type { GitRepo } from '../git/repo.js';
import { NylError, type Problem, problem } from '../util/errors.js';
import { validFast } from '../util/fast-validate.js';
import '../util/zod.js';
import { checkCycles, checkReferences } from './checks.js';
import { DEFAULT_CONFIG_FILES } from './default-files.js';
import { issueProblem } from './issues.js';
import type { Config, Location } from './model.js';
import {
  type EnvironmentDoc,
  type EnvironmentGroupDoc,
  KIND_SCHEMAS,
  type Kind,
  UNIT_KINDS,
  type UnitDoc,
} from './schema.js';
import { unitConfig } from './unit-config.js';
import { type CachedDocument, locate, type ReadDocument, readDocuments, type ValueDocument } from './yaml-read.js';

export type { CachedDocument } from './yaml-read.js';

/** Loads and validates configuration from a commit; every problem names file, line and field. */
export async function loadConfig(
  repo: GitRepo,
  opts: {
    rev?: string;
    config?: string;
    cwd?: string;
    /** Called with the files' texts before they are parsed (work that can overlap the parse). */
    beforeParse?: (files: { file: string; text: string }[]) => void;
  },
): Promise<Config> {
  const rev = opts.rev ?? 'HEAD';
  const commit = await repo.readCommit(rev);
  if (!commit)
    throw new NylError(
      problem('NYL-SOURCE-MISSING', `${repo.root} has no commit ${rev} to read configuration from`, {
        fix: 'commit your nyl.yaml (`git add nyl.yaml && git commit -m "add nyl.yaml"`) and run again',
      }),
    );
  const files = await configFiles(repo, commit.oid, opts);
  const objects = await Promise.all(files.map((f) => repo.readObject(`${commit.oid}:${f}`)));
  const sources = files.map((file, i) => {
    const oid = objects[i]?.oid;
    const cached = oid ? repo.derived.get<CachedDocument[]>('config', `${file}\0${oid}`) : undefined;
    return { file, text: objects[i]?.body.toString('utf8') ?? '', ...(cached ? { cached } : {}) };
  });
  opts.beforeParse?.(sources);
  const cfg = parseConfig(commit.oid, sources, {
    // A file whose documents were all read and validated by the fast path is kept as values.
    onValidated: (file, docs) => {
      const oid = objects[files.indexOf(file)]?.oid;
      if (oid && jsonExact(docs)) repo.derived.set('config', `${file}\0${oid}`, docs);
    },
  });
  cfg.tree = commit.tree;
  return cfg;
}

/**
 * Validates configuration given the texts of its files (read from commit `source`); every
 * problem names file, line and field. `yamlOnly` reads every file with `yaml`, the reference the
 * fast reader is tested against.
 */
export function parseConfig(
  source: string,
  files: { file: string; text: string; cached?: CachedDocument[] }[],
  opts: { yamlOnly?: boolean; onValidated?: (file: string, docs: CachedDocument[]) => void } = {},
): Config {
  const problems: Problem[] = [];
  const cfg: Config = {
    source,
    files: files.map((f) => f.file),
    environments: new Map(),
    groups: new Map(),
    units: new Map(),
    invalid: new Set(),
  };
  for (const { file, text, cached } of files) {
    const reads = parseFile(file, text, cfg, problems, opts.yamlOnly === true ? 'yaml' : cached);
    if (!cached && opts.onValidated && reads.every((r) => 'validated' in r && r.validated))
      opts.onValidated(
        file,
        reads.map((r) => ({ value: (r as ValueDocument).value, line: (r as ValueDocument).line })),
      );
  }
  // Every problem in one pass; a cycle is only looked for once the edges are all known.
  checkReferences(cfg, problems);
  if (!problems.length) checkCycles(cfg, problems);
  if (problems.length) throw new NylError(problems);
  return cfg;
}

async function configFiles(repo: GitRepo, commit: string, opts: { config?: string; cwd?: string }): Promise<string[]> {
  const notCommitted = (path: string) =>
    problem(
      'NYL-CONFIG-MISSING',
      `${path} is not in the source commit ${commit.slice(0, 12)} (Nyl reads configuration from HEAD, not the working tree)`,
      {
        subject: path,
        fix: `commit it (\`git add ${path} && git commit\`) or pass --config FILE|DIR`,
      },
    );
  if (!opts.config) {
    for (const f of DEFAULT_CONFIG_FILES) {
      const o = await repo.readObject(`${commit}:${f}`);
      if (o?.type === 'blob') return [f];
    }
    throw new NylError(notCommitted('nyl.yaml'));
  }
  const abs = resolve(opts.cwd ?? process.cwd(), opts.config);
  let rel = relative(repo.root, abs).split('\\').join('/');
  if (rel.startsWith('..'))
    throw new NylError(
      problem('NYL-CONFIG-MISSING', `${opts.config} is outside the repository ${repo.root}`, {
        subject: opts.config,
        fix: 'pass a file or directory inside the repository',
      }),
    );
  if (rel === '') rel = '.';
  const o = await repo.readObject(rel === '.' ? `${commit}^{tree}` : `${commit}:${rel}`);
  if (!o) throw new NylError(notCommitted(rel));
  if (o.type === 'blob') return [rel];
  const all = await repo.readTreeRecursive(o.oid, rel === '.' ? '' : rel);
  const yamls = [...all.keys()].filter((p) => /\.ya?ml$/.test(p)).sort();
  if (!yamls.length)
    throw new NylError(
      problem('NYL-CONFIG-MISSING', `${rel} holds no .yaml or .yml file in the source commit`, {
        subject: rel,
        fix: 'commit configuration files there or pass --config FILE',
      }),
    );
  return yamls.map((p) => posix.normalize(p));
}

function parseFile(
  file: string,
  source: string,
  cfg: Config,
  problems: Problem[],
  how: 'yaml' | CachedDocument[] | undefined,
): ReadDocument[] {
  const reads = readDocuments(file, source, how);
  for (const read of reads) {
    if ('problems' in read) problems.push(...read.problems);
    else parseDocument(file, source, read, cfg, problems);
  }
  return reads;
}

/** A document that is a mapping with a known kind; else the problem it is (a null document is nothing). */
function kindOf(file: string, read: ValueDocument, problems: Problem[]): Kind | undefined {
  const { value, line } = read;
  if (value === null || value === undefined) return undefined;
  if (typeof value !== 'object' || Array.isArray(value)) {
    problems.push(
      problem('NYL-CONFIG-INVALID', 'a configuration document must be a mapping with a kind', {
        subject: `${file}:${line}`,
        fix: 'start the document with `kind: Environment|EnvironmentGroup|Command` and `name: ...`',
      }),
    );
    return undefined;
  }
  const kind = (value as { kind?: unknown }).kind;
  if (typeof kind === 'string' && kind in KIND_SCHEMAS) return kind as Kind;
  const { doc, lc } = read.located();
  problems.push(
    problem('NYL-CONFIG-KIND', kind === undefined ? 'document has no kind' : `unknown kind ${JSON.stringify(kind)}`, {
      subject: `${file}:${locate(doc, lc, ['kind'])} kind`,
      fix: `set kind to one of ${Object.keys(KIND_SCHEMAS).join(', ')}`,
    }),
  );
  return undefined;
}

/**
 * The document validated against its kind's schema: the fast path's value (kept, as zod would give
 * it), or zod's; its problems otherwise, each once (a value can fail a pattern and a refinement with
 * the same message). A cached document was validated when it was kept.
 */
function validated(file: string, read: ValueDocument, kind: Kind, what: string, problems: Problem[]): unknown {
  const schema = KIND_SCHEMAS[kind] as $ZodType;
  const valid = read.validated ? { data: read.value } : validFast(schema, read.value);
  if (valid) {
    read.validated = true;
    read.value = valid.data; // what is kept: zod's output, keys in its order
    return valid.data;
  }
  const parsed = z.safeParse(schema, read.value);
  if (parsed.success) return parsed.data;
  const seen = new Set<string>();
  const { doc, lc } = read.located();
  for (const issue of parsed.error.issues) {
    const p = issueProblem(file, doc, lc, what, issue, schema);
    const key = `${p.code} ${p.subject} ${p.message}`;
    if (!seen.has(key)) problems.push(p);
    seen.add(key);
  }
  return undefined;
}

/** One document: its kind, validated, then kept as an environment, a group or a unit (a name defined twice refused). */
function parseDocument(file: string, source: string, read: ValueDocument, cfg: Config, problems: Problem[]): void {
  const kind = kindOf(file, read, problems);
  if (!kind) return;
  const name = (read.value as { name?: unknown }).name;
  const docName = typeof name === 'string' ? name : '';
  const what = `${kind}${docName ? ` ${docName}` : ''}`;
  const data = validated(file, read, kind, what, problems) as { kind: Kind; name: string } | undefined;
  if (!data) {
    if (docName) cfg.invalid.add(docName);
    return;
  }
  const at = { file, line: read.line };
  const lineAt = (p: (string | number)[]) => {
    const { doc, lc } = read.located();
    return locate(doc, lc, p);
  };
  const dup = (prev: Location | undefined, space: string) => {
    if (!prev) return false;
    problems.push(
      problem('NYL-CONFIG-DUPLICATE', `${space} ${data.name} is defined twice (first at ${prev.file}:${prev.line})`, {
        subject: `${file}:${lineAt(['name'])} name`,
        fix: `rename or remove one of the two definitions of ${data.name}`,
      }),
    );
    return true;
  };
  if (data.kind === 'Environment') {
    if (!dup(cfg.environments.get(data.name)?.at, 'environment'))
      cfg.environments.set(data.name, { doc: data as EnvironmentDoc, at, lineAt });
  } else if (data.kind === 'EnvironmentGroup') {
    if (!dup(cfg.groups.get(data.name)?.at, 'environment group'))
      cfg.groups.set(data.name, { doc: data as EnvironmentGroupDoc, at, lineAt });
  } else if ((UNIT_KINDS as readonly string[]).includes(data.kind) && !dup(cfg.units.get(data.name)?.at, 'unit'))
    cfg.units.set(data.name, unitConfig({ file, source, read, what, at }, data as UnitDoc, problems));
}
