import { spawnSync } from 'node:child_process';
import { cpSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { isDeepStrictEqual } from 'node:util';
import { describe, expect, it } from 'vitest';
import { LineCounter, parseAllDocuments } from 'yaml';
import { readFast } from '../src/core/config/fast-yaml.js';
import { parseConfig } from '../src/core/config/load.js';
import type { Config } from '../src/core/config/model.js';
import { KIND_SCHEMAS } from '../src/core/config/schema.js';
import { NylError } from '../src/core/util/errors.js';
import { validFast } from '../src/core/util/fast-validate.js';
import { command, commitFiles, ENV_DEV, makeRepo, tempDir } from './helpers/repo.js';

// The fast reader must read what it accepts exactly as `yaml` does (values, their types and key
// order, the line each document starts on), and configuration read with it must be the one read
// with `yaml` alone: the same documents, the same locations, the same problems, byte for byte.

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
const CORPUS_DIR = join(ROOT, 'test', 'fixtures', 'config-corpus');

/** What load.ts's reference path reads: each non-empty document's value and its first line. */
function yamlDocuments(source: string): { value: unknown; line: number }[] | 'error' {
  const lc = new LineCounter();
  const docs = parseAllDocuments(source, { lineCounter: lc, prettyErrors: false, uniqueKeys: true });
  if (!Array.isArray(docs)) return [];
  const out: { value: unknown; line: number }[] = [];
  for (const doc of docs) {
    if (doc.errors.length) return 'error';
    let value: unknown;
    try {
      value = doc.toJS();
    } catch {
      return 'error';
    }
    if (value === null || value === undefined) continue;
    const start = (doc.contents as { range?: [number, number, number] } | null)?.range?.[0] ?? 0;
    out.push({ value, line: lc.linePos(start).line });
  }
  return out;
}

/** A value with every object's key order made part of it (deep equality ignores order). */
function ordered(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(ordered);
  if (v && typeof v === 'object') return Object.entries(v).map(([k, x]) => [k, ordered(x)]);
  return v;
}

/** undefined when the fast reader gives up or agrees with `yaml`; otherwise what differs. */
function disagreement(source: string): string | undefined {
  const fast = readFast(source);
  if (fast === undefined) return undefined;
  const slow = yamlDocuments(source);
  if (slow !== 'error' && isDeepStrictEqual(fast, slow) && isDeepStrictEqual(ordered(fast), ordered(slow)))
    return undefined;
  return `${JSON.stringify(source)}\n  fast: ${JSON.stringify(fast)}\n  yaml: ${JSON.stringify(slow)}`;
}

/** The generated configuration of scripts/bench.mjs: N Command units in four waves. */
function benchConfig(n: number): string {
  const name = (i: number) => `u${String(i + 1).padStart(4, '0')}`;
  const per = Math.ceil(n / 4);
  const docs = ['kind: Environment\nname: bench\n'];
  for (let i = 0; i < n; i++) {
    const wave = Math.floor(i / per);
    const lines = ['kind: Command', `name: ${name(i)}`];
    if (wave > 0) lines.push(`needs: [${name((wave - 1) * per + ((i - wave * per) % per))}]`);
    lines.push('spec:', '  run: "true"');
    docs.push(`${lines.join('\n')}\n`);
  }
  return docs.join('---\n');
}

/**
 * Configurations of the test suite (collected from its runs), the examples, the benchmark's. The
 * corpus files are named .yaml.txt so that no formatter rewrites them: their quoting is the point.
 */
const corpus: { name: string; text: string }[] = [
  ...readdirSync(CORPUS_DIR)
    .sort()
    .map((f) => ({ name: `corpus/${f}`, text: readFileSync(join(CORPUS_DIR, f), 'utf8') })),
  ...['quickstart', 'kinds'].map((e) => ({
    name: `examples/${e}`,
    text: readFileSync(join(ROOT, 'examples', e, 'nyl.yaml'), 'utf8'),
  })),
  { name: 'bench-100', text: benchConfig(100) },
];

/** YAML the configuration may use, each construct alone and next to others. */
const CONSTRUCTS = [
  'a: 1\n',
  '# c\n---\n# d\na: 1\n',
  '---\n\n\n  # x\nkind: A\n',
  'a: x\n---\nb: y\n--- # c\nc: z\n---\n',
  '---\n---\na: 1\n',
  '  a: 1\n  b: 2\n',
  'a: x',
  'a:\n  b:\n    c: 1\n  d: 2\ne: 3\n',
  'a:\n- x\n- y\nb: 1\n',
  'a:\n  - x\n  -\n  - - y\n    - z\n  - k: v\n    l: w\n',
  'a: |\n  x\n\n  y\n\n\nb: 1\n',
  'a: |\n  x\n  # not a comment\n# a comment\nb: 2\n',
  'a: |-\n  x\n\n',
  'a: |\n  x',
  'a: | # comment\n    indented\n      more\n',
  'a: >\n  x\n  y\n\n  z\n   w\n  v\n',
  'a: >\n  x\n\n\n  y\n',
  'a: >-\n  x\n  \ty\n  z\n',
  'a: >\n  a\n\n   b\n\n  c\n',
  'a:\n  - |\n    x\n    y\n  - >-\n    p\n    q\n',
  'a: |\n  \tx\n',
  'a: "x" # c\nb: \'y\' #d\n',
  'a: x #c\nb: x#c\nc: b #\n',
  'a: x\n  # c\nb: y\n',
  'a: "\\u00e9\\x41\\t\\n\\\\\\"\\/\\0\\e\\N\\_\\L\\P\\ "\n',
  "a: ''\nb: \"\"\nc: 'it''s'\n",
  'a: [x, "y", {b: c}, [1, 2.5]]\n',
  'a: {b: [1,2], c: "d"}\n',
  'a: [a b, c ]\nb: [a,]\nc: []\nd: {}\ne: [ ]\nf: { }\n',
  'a: [a\'b]\nb: [a"b]\n',
  'spec: {"module":"infra/my app","vars":{"name":"${{ units.base.outputs.id }}","n":1,"e":{}}}\n',
  'a: {"b":c, \'d\': e, "h":-1, "i":[x], "j": "k", "":1, "it\'s":y, \'q\'\'\':z}\n',
  'a: -1\nb: +5\nc: 0o17\nd: 0x1F\ne: 1e3\nf: -.inf\ng: .NaN\nh: 1.50\ni: 0.\nj: 12345678901234567890\nk: -0\n',
  'a: 0x\nb: 0o\nc: 1_0\nd: 0b1\ne: 1.2.3\nf: .e3\ng: 1e\nh: +.5\ni: 00\nj: 0o8\n',
  'a: ~\nb: null\nc: Null\nd: NULL\ne: nULL\nf:\n',
  'a: True\nb: TRUE\nc: tRUE\nd: false\ne: yes\nf: no\ng: on\n',
  'true_x: 1\nnull_y: 2\n$v: 3\nx.y/z-w: 4\n',
  'a: http://x.y/z?q=1#f\nb: b:c\nc: a -b\nd: -x\ne: é ü\n',
  'a: ${{ units.b.outputs.c }}\nb: "${{ units.b.outputs.c"\n',
  'run: echo "${{ units.db.outputs.url }}" && echo \'x\'\n',
  'a: x\u00a0\nb: x\u3000 \nc: [x\u2003, y]\nd: x\u2003#c\ne: \u00a0x\n', // spaces YAML does not trim
];

/** Inputs the fast reader must leave to `yaml`: outside its subset, or errors. */
const LEFT_TO_YAML = [
  'a: &x 1\nb: *x\n', // anchors and aliases (and so alias bombs)
  'a: !!str 1\n', // tags
  'a: b\n  c\n', // a plain scalar on two lines
  'a: "b\n  c"\n', // a quoted scalar on two lines
  'a: [b,\n  c]\n', // a flow collection on two lines
  '? a\n: b\n', // an explicit key
  '%YAML 1.2\n---\na: 1\n', // a directive
  'a: 1\n...\n', // a document end marker
  'a: 1\na: 2\n', // a duplicate key
  'a: {b: 1, b: 2}\n',
  '"a": 1\n', // a quoted key
  'a: {"b" : 1}\n', // a space before a JSON-like key's colon
  'a: {"b":1, b: 2}\n',
  'a: {"__proto__": 1}\n',
  'a: {"b"}\n',
  '1: a\n', // a key that is not a string
  '__proto__: a\n',
  'a:\n\tb: 1\n', // a tab
  'a: 1\r\nb: 2\r\n', // CR LF
  '\ufeffa: 1\n', // a BOM
  'a: |+\n  x\n\n', // keep chomping
  'a: |2\n   x\n', // an indentation indicator
  'a: |\n   \n  x\n', // a leading line more indented than the content
  'a: |\nb: 1\n', // an empty block scalar
  '- a\n', // a document that is not a mapping
  'a: [-]\n',
  'a: - b\n',
  'a: b: c\n',
  'a: "x"y\n',
  'a: [1, 2]#c\n',
  'a:\n    b: 1\n  c: 2\n',
];

// A small seeded generator of configuration-like YAML, with mistakes mixed in.
function generator(seed: number) {
  let s = seed;
  const rnd = () => {
    s = (s + 0x6d2b79f5) | 0;
    let t = Math.imul(s ^ (s >>> 15), 1 | s);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const pick = <T>(xs: T[]): T => xs[Math.floor(rnd() * xs.length)] as T;
  const scalars = [
    ...['a', 'echo hi', 'true', 'False', 'null', '~', '0', '-1', '0x1f', '0o7', '1.5', '1e3', '.inf', '.nan'],
    ...['"q"', "'s'", "'it''s'", '"a\\tb"', '"\\z"', 'x # c', 'a#b', 'http://x:1/y', 'a: b', 'a:', '-', '- a'],
    ...['-a', '*x', '&x y', '!t y', '%x', '@x', '[a, b]', '[a, [b], {c: d}]', '{a: 1, b: [x]}', '{}', '[a,]'],
    ...['[-]', '[a b]', '{a:1}', '{a: }', '${{ units.a.outputs.x }}', '${{ units.a', '""', 'x  ', '"open'],
    ...['x\u00a0', '\u00a0x', '[x\u3000, y]', 'x\u2003#c', 'x\u2028y'],
    ...['{"a":"b","c":1}', '{"a":b}', "{'a': [x]}", '{"a" :1}', '{"a":}', '{"a":{"b":"c"}}', '{"a":"b"'],
  ];
  const keys = ['kind', 'name', 'spec', 'run', 'needs', 'a', 'b', 'x.y', 'k-1', '$v', '_', 'c', 'd'];
  const oddKeys = ['true', '1', '"q"', '__proto__', 'a b', 'toString'];
  const blockLines = ['echo a', '', 'echo b', '  indented', '\tx', '# no comment', 'x: y', '- z', '   '];
  const block = (ind: number) => {
    const w = ind + pick([2, 2, 4, 1]);
    const lines = Array.from({ length: 1 + Math.floor(rnd() * 4) }, () => {
      const l = pick(blockLines);
      return l === '' ? pick(['', ' '.repeat(w)]) : ' '.repeat(w) + l;
    });
    return `${pick(['|', '>', '|-', '>-', '|+', '| # c'])}\n${lines.join('\n')}`;
  };
  const junk = () => (rnd() < 0.06 ? `${' '.repeat(Math.floor(rnd() * 5))}# comment\n` : rnd() < 0.03 ? '\n' : '');
  const node = (ind: number, depth: number): string => {
    const r = rnd();
    if (depth > 2 || r < 0.5) return ` ${rnd() < 0.12 ? block(ind) : pick(scalars)}`;
    if (r < 0.8) return `\n${map(ind + pick([2, 2, 4, 1]), depth + 1)}`;
    return `\n${seq(ind + pick([2, 0]), depth + 1)}`;
  };
  const map = (ind: number, depth: number): string => {
    const used = new Set<string>();
    const lines: string[] = [];
    for (let i = 0, n = 1 + Math.floor(rnd() * 4); i < n; i++) {
      let k = rnd() < 0.93 ? pick(keys) : pick(oddKeys);
      while (used.has(k) && rnd() < 0.95) k = pick(keys);
      used.add(k);
      lines.push(`${junk()}${' '.repeat(ind)}${k}:${node(ind, depth)}`);
    }
    return lines.join('\n');
  };
  const seq = (ind: number, depth: number): string => {
    const lines: string[] = [];
    for (let i = 0, n = 1 + Math.floor(rnd() * 3); i < n; i++) {
      if (rnd() < 0.3) lines.push(`${junk()}${' '.repeat(ind)}- ${map(ind + 2, depth + 1).slice(ind + 2)}`);
      else lines.push(`${junk()}${' '.repeat(ind)}-${node(ind, depth + 1)}`);
    }
    return lines.join('\n');
  };
  const mutate = (text: string) => {
    if (rnd() < 0.85) return text;
    const i = Math.floor(rnd() * text.length);
    return text.slice(0, i) + pick(['', ' ', '\n', ':', '#', '-', '"', '[', '\t']) + text.slice(i + 1);
  };
  return () => {
    const docs = Array.from({ length: 1 + Math.floor(rnd() * 3) }, () => `${junk()}${map(0, 0)}\n`);
    return mutate(docs.join(pick(['---\n', '--- # c\n', '---\n\n# x\n'])));
  };
}

describe('the fast YAML reader', () => {
  it('reads each construct as yaml does', () => {
    const accepted = CONSTRUCTS.filter((c) => readFast(c) !== undefined);
    expect(CONSTRUCTS.map(disagreement).filter(Boolean)).toEqual([]);
    // Every construct but the tab-led folded line and content is in the subset.
    expect(accepted.length).toBeGreaterThanOrEqual(CONSTRUCTS.length - 2);
  });

  it('leaves to yaml what it does not know or what is wrong', () => {
    expect(LEFT_TO_YAML.filter((c) => readFast(c) !== undefined)).toEqual([]);
  });

  it('reads every configuration of the corpus as yaml does, and nearly all of it', () => {
    expect(corpus.length).toBeGreaterThan(50);
    expect(corpus.map((c) => disagreement(c.text)).filter(Boolean)).toEqual([]);
    const left = corpus.filter((c) => readFast(c.text) === undefined && yamlDocuments(c.text) !== 'error');
    // What the suite writes is in the subset but for a few on purpose (anchors, odd keys).
    expect(left.length, left.map((c) => c.name).join(', ')).toBeLessThanOrEqual(corpus.length / 10);
    expect(readFast(benchConfig(100))).toBeDefined();
  });

  it('agrees with yaml on generated documents', () => {
    const next = generator(15);
    let accepted = 0;
    const wrong: string[] = [];
    for (let i = 0; i < 4000; i++) {
      const text = next();
      const d = disagreement(text);
      if (d) wrong.push(d);
      if (readFast(text)) accepted++;
    }
    expect(wrong.slice(0, 5)).toEqual([]);
    expect(accepted).toBeGreaterThan(200); // the generator reaches the fast path
  });
});

describe('the fast validation', () => {
  it('gives what zod gives for every valid document of the corpus, and every kind takes it', () => {
    const kinds = new Set<string>();
    const mapped = new Set<string>(); // forEach's union: a list, an output reference
    let invalid = 0;
    for (const c of corpus) {
      const docs = yamlDocuments(c.text);
      if (docs === 'error') continue;
      for (const { value } of docs) {
        const schema = KIND_SCHEMAS[(value as { kind: keyof typeof KIND_SCHEMAS }).kind];
        if (!schema) continue;
        const zod = schema.safeParse(value);
        const fast = validFast(schema, value);
        if (!zod.success) {
          invalid++;
          expect(fast, JSON.stringify(value)).toBeUndefined();
          continue;
        }
        expect(ordered(fast?.data), JSON.stringify(value)).toEqual(ordered(zod.data));
        kinds.add((value as { kind: string }).kind);
        if ('forEach' in (value as object)) mapped.add(typeof (value as { forEach: unknown }).forEach);
      }
    }
    expect([...kinds].sort()).toEqual(Object.keys(KIND_SCHEMAS).sort());
    expect([...mapped].sort()).toEqual(['object', 'string']);
    expect(invalid).toBeGreaterThan(0);
  });
});

/** Configuration as something to compare: every document, location and edge, or the problems. */
function snapshot(files: { file: string; text: string }[], yamlOnly: boolean): unknown {
  let cfg: Config;
  try {
    cfg = parseConfig('0'.repeat(40), files, { yamlOnly });
  } catch (e) {
    if (e instanceof NylError) return { problems: e.problems };
    throw e;
  }
  const lines = (doc: unknown, lineAt: (p: (string | number)[]) => number) => {
    const out: [string, number][] = [];
    const walk = (v: unknown, path: (string | number)[]) => {
      out.push([path.join('.'), lineAt(path)]);
      if (Array.isArray(v)) for (const [i, x] of v.entries()) walk(x, [...path, i]);
      else if (v && typeof v === 'object') for (const [k, x] of Object.entries(v)) walk(x, [...path, k]);
    };
    walk(doc, []);
    walk(doc, ['nowhere', 0]);
    return out;
  };
  return {
    files: cfg.files,
    environments: [...cfg.environments].map(([n, e]) => [n, ordered(e.doc), e.at, lines(e.doc, e.lineAt)]),
    groups: [...cfg.groups].map(([n, g]) => [n, ordered(g.doc), g.at, lines(g.doc, g.lineAt)]),
    units: [...cfg.units].map(([n, u]) => [
      n,
      ordered(u.doc),
      u.at,
      u.refs,
      u.deps,
      [...u.deps, 'nowhere'].map((d) => u.depAt(d)),
      lines(u.doc, u.lineAt),
    ]),
    invalid: [...cfg.invalid],
  };
}

function expectSameConfig(files: { file: string; text: string }[]): void {
  expect(snapshot(files, false), files.map((f) => f.text).join('\n# ---- next file\n')).toEqual(snapshot(files, true));
}

/** Mistakes an operator makes that keep the YAML valid, each inserted after a top-level line. */
const MISTAKES = [
  'timout: 5m',
  'timeout: 10 minutes',
  'needs: [nope]',
  'needs:\n  - gone',
  'environments: [nowhere]',
  'description: [not, a, string]',
  'spec:\n  rnu: x',
  'spec:\n  run: echo ${{ secrets.X }}\n  check: |\n    a\n    ${{ units.nope.outputs.x }}',
  'spec:\n  run: |\n    echo start\n    curl ${{ units.gone.outputs.url',
  'promotion:\n  after: [ghost]',
  'group: nogroup',
  'promote: [x]',
];

describe('configuration read with the fast reader', () => {
  it('is the configuration yaml reads, for every corpus configuration', () => {
    for (const c of corpus) expectSameConfig([{ file: 'nyl.yaml', text: c.text }]);
  });

  it('has the problems yaml reading has, word for word, for configurations with mistakes', () => {
    let checked = 0;
    for (const c of corpus.slice(0, 60)) {
      const lines = c.text.split('\n');
      const tops = lines.flatMap((l, i) => (/^[a-z]+:/.test(l) ? [i] : []));
      for (const [k, mistake] of MISTAKES.entries()) {
        const at = tops[(k * 7) % Math.max(tops.length, 1)];
        if (at === undefined) continue;
        // A field the document has already makes a duplicate key: a syntax error, also compared.
        const text = [...lines.slice(0, at + 1), mistake, ...lines.slice(at + 1)].join('\n');
        expectSameConfig([{ file: 'nyl.yaml', text }]);
        checked++;
      }
      // The same unit twice, across files, and a name that is not a ref component.
      expectSameConfig([
        { file: 'a.yaml', text: c.text },
        { file: 'b.yaml', text: c.text.replace(/^name: .*$/m, 'name: "bad name"') },
      ]);
    }
    expect(checked).toBeGreaterThan(300);
  });

  it('has the problems yaml reading has for generated configurations', () => {
    const next = generator(29);
    for (let i = 0; i < 1500; i++) {
      const text = `kind: Environment\nname: dev\n---\nkind: Command\nname: u${i}\n${next()}`;
      expectSameConfig([{ file: 'nyl.yaml', text }]);
    }
  });

  it('reports an alias bomb and an unclosed ${{ with their lines, as before', () => {
    const bomb = ['kind: Environment', 'name: dev', '---', 'a: &a [x, x, x, x, x, x, x, x, x, x]'];
    for (let i = 0; i < 5; i++) bomb.push(`${'bcdef'[i]}: &${'bcdef'[i]} [${Array(10).fill(`*${'abcde'[i]}`)}]`);
    const text = `${bomb.join('\n')}\n`;
    expectSameConfig([{ file: 'nyl.yaml', text }]);
    expect(snapshot([{ file: 'nyl.yaml', text }], false)).toMatchObject({
      problems: [{ code: 'NYL-CONFIG-SYNTAX', subject: 'nyl.yaml:4' }],
    });
    const unclosed =
      'kind: Environment\nname: dev\n---\nkind: Command\nname: a\nspec:\n  run: |\n    a\n    b ${{ units.x\n';
    expectSameConfig([{ file: 'nyl.yaml', text: unclosed }]);
    expect(readFast(unclosed)).toBeDefined();
    expect(snapshot([{ file: 'nyl.yaml', text: unclosed }], false)).toMatchObject({
      // The line of the block scalar: the unclosed text is not found as written (as before).
      problems: [{ code: 'NYL-CONFIG-REFERENCE', subject: 'nyl.yaml:7 spec.run' }],
    });
  });
});

describe('the built CLI', () => {
  it('reads, plans and reconciles configuration without loading yaml, and loads it for a message', async () => {
    // A copy of dist/ without yaml.cjs: what needs no message must not need it.
    const dist = join(tempDir('nyl-dist-noyaml-'), 'dist');
    cpSync(join(ROOT, 'dist'), dist, { recursive: true });
    rmSync(join(dist, 'yaml.cjs'));
    const cli = join(dist, 'cli.js');
    const dir = makeRepo({ 'nyl.yaml': ENV_DEV + command('a', 'echo hi') + command('b', 'true', { needs: ['a'] }) });
    for (const args of [['plan'], ['reconcile'], ['status']]) {
      const r = spawnSync('node', [cli, ...args, '-e', 'dev', '--local'], { cwd: dir, encoding: 'utf8' });
      expect(r.status, r.stderr).toBe(0);
    }
    // A mistake needs lines: without yaml.cjs that fails (NYL-INTERNAL), with it the message names the line.
    commitFiles(dir, { 'nyl.yaml': `${ENV_DEV}---\nkind: Command\nname: a\nspec:\n  rnu: x\n` });
    const broken = spawnSync('node', [cli, 'plan', '-e', 'dev', '--local'], { cwd: dir, encoding: 'utf8' });
    expect(broken.stderr).toContain('NYL-INTERNAL');
    const r = spawnSync('node', [join(ROOT, 'dist', 'cli.js'), 'plan', '-e', 'dev', '--local'], {
      cwd: dir,
      encoding: 'utf8',
    });
    expect(r.status).toBe(1);
    expect(r.stderr).toContain('error NYL-CONFIG-FIELD (nyl.yaml:7 spec.rnu)');
  });
});
