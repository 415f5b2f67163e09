import { posix, relative, resolve } from 'node:path';
import type { Document, LineCounter, YAMLError, YAMLMap } from 'yaml';
import * as z from 'zod/mini';
import type { $ZodIssue, $ZodType } from 'zod/v4/core';
import { jsonExact } from '../git/derived-cache.js';
import type { GitRepo } from '../git/repo.js';
import { NylError, type Problem, problem } from '../util/errors.js';
import { validFast } from '../util/fast-validate.js';
import '../util/zod.js';
import { DEFAULT_CONFIG_FILES } from './default-files.js';
import { readFast } from './fast-yaml.js';
import { parseForEach } from './for-each.js';
import type { Config, Location, UnitConfig } from './model.js';
import { promotionOf } from './promotion.js';
import { type Reference, scanReferences } from './references.js';
import {
  type EnvironmentDoc,
  type EnvironmentGroupDoc,
  KIND_SCHEMAS,
  type Kind,
  UNIT_KINDS,
  type UnitDoc,
} from './schema.js';
import { yaml } from './yaml-lib.js';

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

function lineOf(lc: LineCounter, offset: number | undefined): number {
  return offset === undefined ? 1 : lc.linePos(offset).line;
}

/** The line of the deepest node on `path` that exists; for an unknown key, the key itself. */
function locate(doc: Document, lc: LineCounter, path: (string | number)[], key?: string): number {
  for (let n = path.length; n >= 0; n--) {
    const node = n === 0 ? doc.contents : doc.getIn(path.slice(0, n), true);
    if (node && typeof node === 'object' && 'range' in node) {
      if (key !== undefined && n === path.length && yaml().isMap(node)) {
        const pair = (node as YAMLMap).items.find((p) => yaml().isScalar(p.key) && p.key.value === key);
        if (pair && yaml().isScalar(pair.key)) return lineOf(lc, pair.key.range?.[0]);
      }
      return lineOf(lc, (node as { range?: [number, number, number] }).range?.[0]);
    }
  }
  return 1;
}

/** A document's syntax tree, built only when a message needs a line. */
interface Located {
  doc: Document;
  lc: LineCounter;
}

/** A document read from a file: its value and where it starts; `validated` once the fast path took it. */
interface ValueDocument {
  value: unknown;
  line: number;
  located: () => Located;
  validated?: boolean;
}
/** A document read from a file: its problems, or its value. */
type ReadDocument = { problems: Problem[] } | ValueDocument;

/** A document of a file kept between commands (git/derived-cache.ts): its validated value and first line. */
export interface CachedDocument {
  value: unknown;
  line: number;
}

/**
 * The documents of a file. Most configuration is read by the fast reader, which builds values
 * only; `yaml` reads what it does not know, and every file whose lines a message needs.
 */
function readDocuments(file: string, source: string, how: 'yaml' | CachedDocument[] | undefined): ReadDocument[] {
  const fast = how === 'yaml' ? undefined : (how ?? readFast(source));
  if (!fast) return readWithYaml(file, source);
  let all: Located[] | undefined;
  const parseAll = () => {
    if (all) return all;
    const lc = new (yaml().LineCounter)();
    const docs = yaml().parseAllDocuments(source, { lineCounter: lc, prettyErrors: false, uniqueKeys: true });
    all = Array.isArray(docs) ? docs.map((doc) => ({ doc, lc })) : [];
    return all;
  };
  // The fast reader's document starting on a line is the one `yaml` starts there.
  const at = (line: number) => () =>
    parseAll().find((d) => locate(d.doc, d.lc, []) === line) ?? (parseAll()[0] as Located);
  const known = Array.isArray(how);
  return fast.map((d) => ({ value: d.value, line: d.line, located: at(d.line), validated: known }));
}

function readWithYaml(file: string, source: string): ReadDocument[] {
  const lc = new (yaml().LineCounter)();
  const docs = yaml().parseAllDocuments(source, { lineCounter: lc, prettyErrors: false, uniqueKeys: true });
  if (!Array.isArray(docs)) return []; // an empty stream
  return docs.map((doc): ReadDocument => {
    if (doc.errors.length)
      return {
        problems: doc.errors.map((e) => {
          const line = errorLine(doc, lc, e);
          return problem('NYL-CONFIG-SYNTAX', `YAML syntax error: ${e.message.split('\n')[0]}`, {
            subject: `${file}:${line}`,
            fix: `correct the YAML at ${file} line ${line}`,
          });
        }),
      };
    try {
      return { value: doc.toJS(), line: locate(doc, lc, []), located: () => ({ doc, lc }) };
    } catch (e) {
      // e.g. an alias bomb: "Excessive alias count indicates a resource exhaustion attack".
      const line = locate(doc, lc, []);
      return {
        problems: [
          problem('NYL-CONFIG-SYNTAX', `YAML cannot be read: ${(e as Error).message}`, {
            subject: `${file}:${line}`,
            fix: `remove the repeated aliases (*name) from the document at ${file} line ${line}`,
          }),
        ],
      };
    }
  });
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

function parseDocument(file: string, source: string, read: ValueDocument, cfg: Config, problems: Problem[]): void {
  const { value, line: docLine, located } = read;
  const lineAt = (path: (string | number)[], key?: string) => {
    const { doc, lc } = located();
    return locate(doc, lc, path, key);
  };
  if (value === null || value === undefined) return;
  if (typeof value !== 'object' || Array.isArray(value)) {
    problems.push(
      problem('NYL-CONFIG-INVALID', 'a configuration document must be a mapping with a kind', {
        subject: `${file}:${docLine}`,
        fix: 'start the document with `kind: Environment|EnvironmentGroup|Command` and `name: ...`',
      }),
    );
    return;
  }
  const kind = (value as { kind?: unknown }).kind;
  if (typeof kind !== 'string' || !(kind in KIND_SCHEMAS)) {
    const line = lineAt(['kind']);
    problems.push(
      problem('NYL-CONFIG-KIND', kind === undefined ? 'document has no kind' : `unknown kind ${JSON.stringify(kind)}`, {
        subject: `${file}:${line} kind`,
        fix: `set kind to one of ${Object.keys(KIND_SCHEMAS).join(', ')}`,
      }),
    );
    return;
  }
  const schema = KIND_SCHEMAS[kind as Kind] as $ZodType;
  // zod validates what the fast path does not pass (and so reports every problem).
  // A cached document was validated when it was kept.
  const valid = read.validated ? { data: value } : validFast(schema, value);
  if (valid) {
    read.validated = true;
    read.value = valid.data; // what is kept: zod's output, keys in its order
  }
  const parsed = valid ? { success: true as const, data: valid.data } : z.safeParse(schema, value);
  const docName = typeof (value as { name?: unknown }).name === 'string' ? (value as { name: string }).name : '';
  const what = `${kind}${docName ? ` ${docName}` : ''}`;
  if (!parsed.success) {
    // A value can fail a pattern and a refinement with the same message: report it once.
    const seen = new Set<string>();
    const { doc, lc } = located();
    for (const issue of parsed.error.issues) {
      const p = issueProblem(file, doc, lc, what, issue, schema);
      const key = `${p.code} ${p.subject} ${p.message}`;
      if (!seen.has(key)) problems.push(p);
      seen.add(key);
    }
    if (docName) cfg.invalid.add(docName);
    return;
  }
  const at = { file, line: docLine };
  const data = parsed.data as { kind: Kind; name: string };
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
      cfg.environments.set(data.name, { doc: data as EnvironmentDoc, at, lineAt: (p) => lineAt(p) });
  } else if (data.kind === 'EnvironmentGroup') {
    if (!dup(cfg.groups.get(data.name)?.at, 'environment group'))
      cfg.groups.set(data.name, { doc: data as EnvironmentGroupDoc, at, lineAt: (p) => lineAt(p) });
  } else if ((UNIT_KINDS as readonly string[]).includes(data.kind)) {
    if (dup(cfg.units.get(data.name)?.at, 'unit')) return;
    const unit = data as UnitDoc;
    const refs: Reference[] = [];
    const each = new Set<string>();
    // Where each referenced unit is first named; its line is looked up only for a message.
    const refAt = new Map<string, { line: () => number; field: string }>();
    const lineOfText = (text: string, path: string[]) => {
      const { doc, lc } = located();
      return textLine(text, doc, lc, source, ['spec', ...path]);
    };
    walkStrings(unit.spec, [], (str, path) => {
      if (!str.includes('${{')) return; // no expression, the common case: nothing to scan
      const r = scanReferences(str);
      const field = `spec.${path.join('.')}`;
      for (const e of r.each) each.add(e.path);
      for (const ref of r.refs) {
        refs.push(ref);
        if (!refAt.has(ref.unit)) refAt.set(ref.unit, { line: () => lineOfText(ref.text, path), field });
      }
      for (const b of r.bad) {
        problems.push(
          problem('NYL-CONFIG-REFERENCE', `${what}: unsupported expression ${b}`, {
            subject: `${file}:${lineOfText(b, path)} ${field}`,
            fix: 'the only expression is ${{ units.<name>.outputs.<key> }}',
          }),
        );
      }
    });
    const fe = parseForEach(unit, [...each]);
    for (const p of fe.problems)
      problems.push(
        problem('NYL-CONFIG-FOREACH', `${what}: ${p.message}`, {
          subject: `${file}:${lineAt(p.path)} ${p.path.join('.')}`,
          fix: 'forEach is a list of strings or objects with unique keys (letters, digits, ".", "_", "-"), or one ${{ units.<name>.outputs.<key> }} holding such a JSON list; ${{ each.key }}, ${{ each.value }} and ${{ each.value.<field> }} name its item',
        }),
      );
    const from = fe.source && 'from' in fe.source ? fe.source.from : undefined;
    if (from && !refAt.has(from.unit)) refAt.set(from.unit, { line: () => lineAt(['forEach']), field: 'forEach' });
    const deps = [...new Set([...(unit.needs ?? []), ...refs.map((r) => r.unit), ...(from ? [from.unit] : [])])];
    const depAt = (dep: string) => {
      const { doc, lc } = located();
      const needsNode = doc.getIn(['needs'], true) as {
        items?: { value?: unknown; range?: [number, number, number] }[];
      };
      const item = needsNode?.items?.find((i) => i.value === dep);
      if (item) return { line: lineOf(lc, item.range?.[0]), field: 'needs' };
      const ref = refAt.get(dep);
      if (ref) return { line: ref.line(), field: ref.field };
      return { line: docLine, field: 'spec' };
    };
    cfg.units.set(data.name, {
      doc: unit,
      at,
      refs,
      deps,
      depAt,
      lineAt: (p) => lineAt(p),
      ...(fe.source ? { forEach: fe.source, each: [...each] } : {}),
    });
  }
}

/**
 * A missing closing quote is reported where the file ends; the operator needs the line where
 * the quote opened: the start of the last quoted scalar before that point.
 */
function errorLine(doc: Document, lc: LineCounter, e: YAMLError): number {
  const at = e.pos[0];
  if (e.code === 'MISSING_CHAR' && /quote/.test(e.message)) {
    let open: number | undefined;
    yaml().visit(doc, {
      Scalar(_k, node) {
        const start = node.range?.[0];
        if ((node.type === 'QUOTE_DOUBLE' || node.type === 'QUOTE_SINGLE') && start !== undefined && start <= at)
          if (open === undefined || start > open) open = start;
      },
    });
    if (open !== undefined) return lineOf(lc, open);
  }
  return e.linePos?.[0]?.line ?? lineOf(lc, at);
}

/** The line where `text` occurs inside the scalar at `path` (block scalars span many lines). */
function textLine(text: string, doc: Document, lc: LineCounter, source: string, path: string[]): number {
  const node = doc.getIn(path, true) as { range?: [number, number, number] } | undefined;
  const [start, end] = node?.range ?? [0, source.length];
  const inner = text.replace(/^\$\{\{\s*|\s*\}\}$/g, '');
  const at = source.slice(start, end).indexOf(inner);
  return lineOf(lc, at >= 0 ? start + at : start);
}

function walkStrings(v: unknown, path: string[], fn: (s: string, path: string[]) => void): void {
  if (typeof v === 'string') fn(v, path);
  else if (Array.isArray(v)) for (const [i, x] of v.entries()) walkStrings(x, [...path, String(i)], fn);
  else if (v && typeof v === 'object') for (const [k, x] of Object.entries(v)) walkStrings(x, [...path, k], fn);
}

/** The fields an object in the schema allows at `path` (optional wrappers and lists looked through). */
function allowedKeys(schema: $ZodType, path: PropertyKey[]): string[] {
  type Def = { shape?: Record<string, $ZodType>; innerType?: $ZodType; element?: $ZodType };
  const defOf = (x: $ZodType | undefined) => x?._zod.def as Def | undefined;
  const unwrap = (x: $ZodType | undefined) => {
    for (let d = defOf(x); d?.innerType || d?.element; d = defOf(x)) x = d.innerType ?? d.element;
    return x;
  };
  let s: $ZodType | undefined = schema;
  for (const p of path) s = unwrap(defOf(s)?.shape?.[String(p)]);
  const shape = defOf(s)?.shape;
  return shape ? Object.keys(shape) : [];
}

function issueProblem(
  file: string,
  doc: Document,
  lc: LineCounter,
  what: string,
  issue: $ZodIssue,
  schema: $ZodType,
): Problem {
  const path = issue.path.map((p) => (typeof p === 'number' ? p : String(p)));
  const field = path.join('.');
  if (issue.code === 'unrecognized_keys') {
    const key = issue.keys[0] as string;
    const full = [...path, key].join('.');
    const allowed = allowedKeys(schema, issue.path);
    return problem('NYL-CONFIG-FIELD', `${what}: unknown field ${JSON.stringify(key)}`, {
      subject: `${file}:${locate(doc, lc, path, key)} ${full}`,
      fix: `remove ${full} or correct its spelling; allowed here: ${allowed.join(', ')}`,
    });
  }
  const line = locate(doc, lc, path);
  const subject = `${file}:${line} ${field || '(document)'}`;
  if (issue.code === 'invalid_type' && doc.getIn(path) === undefined && !doc.hasIn(path)) {
    return problem('NYL-CONFIG-INVALID', `${what}: required field ${field} is missing`, {
      subject,
      fix: `add ${field} to the ${what.split(' ')[0]} document`,
    });
  }
  if (issue.message.startsWith('is not a duration')) {
    const value = doc.getIn(path);
    return problem('NYL-CONFIG-DURATION', `${what}: ${field} ${JSON.stringify(value)} ${issue.message}`, {
      subject,
      fix: `set ${field} to a duration such as 30s, 10m or 1h30m`,
    });
  }
  if (issue.message.startsWith('must be a safe git ref component')) {
    const value = doc.getIn(path);
    return problem('NYL-CONFIG-NAME', `${what}: ${field} ${JSON.stringify(value)} ${issue.message}`, {
      subject,
      fix: `rename it using ${'letters, digits, ".", "_" and "-"'}`,
    });
  }
  return problem('NYL-CONFIG-INVALID', `${what}: ${field || 'document'}: ${issue.message}`, {
    subject,
    fix: `correct ${field || 'the document'} in ${file} at line ${line}`,
  });
}

function checkReferences(cfg: Config, problems: Problem[]): void {
  for (const [name, u] of cfg.units) {
    for (const dep of u.deps) {
      if (cfg.units.has(dep) || cfg.invalid.has(dep)) continue;
      const viaRef = u.refs.find((r) => r.unit === dep);
      problems.push(
        problem(
          'NYL-CONFIG-REFERENCE',
          viaRef
            ? `${u.doc.kind} ${name}: ${viaRef.text} refers to unit ${dep}, which is not defined`
            : `${u.doc.kind} ${name}: needs unit ${dep}, which is not defined`,
          {
            subject: `${u.at.file}:${u.depAt(dep).line} ${u.depAt(dep).field}`,
            fix: `define a unit named ${dep} or correct the name (units: ${[...cfg.units.keys()].join(', ')})`,
          },
        ),
      );
    }
    // A group's outputs are per instance: `units.G.outputs.K` would not say whose.
    const grouped = [...u.refs, ...(u.forEach && 'from' in u.forEach ? [u.forEach.from] : [])].find(
      (r) => cfg.units.get(r.unit)?.forEach,
    );
    if (grouped)
      problems.push(
        problem(
          'NYL-CONFIG-FOREACH-OUTPUT',
          `${u.doc.kind} ${name}: ${grouped.text} refers to the outputs of ${grouped.unit}, which has forEach: each of its instances has its own`,
          {
            subject: `${u.at.file}:${u.depAt(grouped.unit).line} ${u.depAt(grouped.unit).field}`,
            fix: `use needs: [${grouped.unit}] to run after all its instances, and read what they produced from where they write it`,
          },
        ),
      );
    if (u.deps.includes(name))
      problems.push(
        problem('NYL-CONFIG-CYCLE', `${u.doc.kind} ${name} depends on itself`, {
          subject: `${u.at.file}:${u.depAt(name).line} ${u.depAt(name).field}`,
          fix: `remove ${name} from its own needs and references`,
        }),
      );
  }
  // A misspelt environment would silently drop the unit everywhere: names must exist.
  for (const [name, u] of cfg.units)
    (u.doc.environments ?? []).forEach((env, i) => {
      if (cfg.environments.has(env) || cfg.groups.has(env)) return;
      problems.push(
        problem(
          'NYL-CONFIG-REFERENCE',
          `${u.doc.kind} ${name}: environments names ${env}, which is neither an Environment nor an EnvironmentGroup`,
          {
            subject: `${u.at.file}:${u.lineAt(['environments', i])} environments`,
            fix: `use one of: ${[...cfg.environments.keys(), ...cfg.groups.keys()].join(', ') || '(none defined)'}, or define ${env}`,
          },
        ),
      );
    });
  // Promotion gates name environments that exist, and never the environment itself.
  for (const [name, e] of cfg.environments)
    (e.doc.promotion?.after ?? []).forEach((a, i) => {
      if (cfg.environments.has(a) && a !== name) return;
      problems.push(
        problem(
          'NYL-CONFIG-REFERENCE',
          a === name
            ? `Environment ${name}: promotion.after names ${name} itself`
            : `Environment ${name}: promotion.after names ${a}, which is not an Environment`,
          {
            subject: `${e.at.file}:${e.lineAt(['promotion', 'after', i])} promotion.after`,
            fix: `use the environments that must have a source first: ${[...cfg.environments.keys()].filter((x) => x !== name).join(', ') || '(none defined)'}`,
          },
        ),
      );
    });
  for (const [name, g] of cfg.groups)
    (g.doc.promote ?? []).forEach((a, i) => {
      if (cfg.environments.has(a)) return;
      problems.push(
        problem('NYL-CONFIG-REFERENCE', `EnvironmentGroup ${name}: promote names ${a}, which is not an Environment`, {
          subject: `${g.at.file}:${g.lineAt(['promote', i])} promote`,
          fix: `list defined environments in promotion order: ${[...cfg.environments.keys()].join(', ') || '(none defined)'}`,
        }),
      );
    });
  checkPromotionCycles(cfg, problems);
  for (const [name, e] of cfg.environments) {
    const g = e.doc.group;
    if (g && !cfg.groups.has(g))
      problems.push(
        problem('NYL-CONFIG-REFERENCE', `Environment ${name}: group ${g} is not defined`, {
          subject: `${e.at.file}:${e.lineAt(['group'])} group`,
          fix: `add a document \`kind: EnvironmentGroup\` named ${g}, or remove group`,
        }),
      );
  }
}

/** Names a dependency cycle unit by unit: `a -> b -> c -> a`. */
/**
 * Promotion gates that wait on each other (dev after prod, prod after dev) would refuse every
 * source forever: refused at load, naming the environments in order.
 */
function checkPromotionCycles(cfg: Config, problems: Problem[]): void {
  const done = new Set<string>();
  const visit = (e: string, stack: string[]): void => {
    if (done.has(e)) return;
    const at = stack.indexOf(e);
    if (at >= 0) {
      const cycle = [...stack.slice(at), e];
      const env = cfg.environments.get(cycle[0] as string);
      const own = env?.doc.promotion;
      problems.push(
        problem('NYL-CONFIG-CYCLE', `promotion cycle: ${cycle.join(' after ')}`, {
          subject: own && env ? `${env.at.file}:${env.lineAt(['promotion', 'after'])} promotion.after` : cycle[0],
          fix: 'promotion runs one way: remove one of these environments from the others’ promotion.after (or promote list)',
        }),
      );
      for (const c of cycle) done.add(c);
      return;
    }
    for (const a of promotionOf(cfg, e).promotion?.after ?? []) if (cfg.environments.has(a)) visit(a, [...stack, e]);
    done.add(e);
  };
  for (const e of [...cfg.environments.keys()].sort()) visit(e, []);
}

function checkCycles(cfg: Config, problems: Problem[]): void {
  const state = new Map<string, 'visiting' | 'done'>();
  const stack: string[] = [];
  const reported = new Set<string>();
  const visit = (n: string): void => {
    state.set(n, 'visiting');
    stack.push(n);
    for (const d of cfg.units.get(n)?.deps ?? []) {
      if (d === n || !cfg.units.has(d)) continue;
      const s = state.get(d);
      if (s === 'visiting') {
        const cycle = [...stack.slice(stack.indexOf(d)), d];
        const key = [...cycle].slice(0, -1).sort().join(',');
        if (!reported.has(key)) {
          reported.add(key);
          const u = cfg.units.get(d) as UnitConfig;
          const edge = u.depAt(cycle[1] as string);
          problems.push(
            problem('NYL-CONFIG-CYCLE', `dependency cycle: ${cycle.join(' -> ')}`, {
              subject: `${u.at.file}:${edge.line} ${edge.field}`,
              fix: 'remove one of these needs or output references to break the cycle',
            }),
          );
        }
      } else if (!s) visit(d);
    }
    stack.pop();
    state.set(n, 'done');
  };
  for (const n of cfg.units.keys()) if (!state.has(n)) visit(n);
}
