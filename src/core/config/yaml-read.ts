import type { Document, LineCounter, YAMLError, YAMLMap } from 'yaml';
import { type Problem, problem } from '../util/errors.js';
import { readFast } from './fast-yaml.js';
import { yaml } from './yaml-lib.js';

export function lineOf(lc: LineCounter, offset: number | undefined): number {
  return offset === undefined ? 1 : lc.linePos(offset).line;
}

/** The line of the deepest node on `path` that exists; for an unknown key, the key itself. */
export function locate(doc: Document, lc: LineCounter, path: (string | number)[], key?: string): number {
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
export interface Located {
  doc: Document;
  lc: LineCounter;
}

/** A document read from a file: its value and where it starts; `validated` once the fast path took it. */
export interface ValueDocument {
  value: unknown;
  line: number;
  located: () => Located;
  validated?: boolean;
}

/** A document read from a file: its problems, or its value. */
export type ReadDocument = { problems: Problem[] } | ValueDocument;

/** A document of a file kept between commands (git/derived-cache.ts): its validated value and first line. */
export interface CachedDocument {
  value: unknown;
  line: number;
}

/**
 * The documents of a file. Most configuration is read by the fast reader, which builds values
 * only; `yaml` reads what it does not know, and every file whose lines a message needs.
 */
export function readDocuments(
  file: string,
  source: string,
  how: 'yaml' | CachedDocument[] | undefined,
): ReadDocument[] {
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
export function textLine(text: string, doc: Document, lc: LineCounter, source: string, path: string[]): number {
  const node = doc.getIn(path, true) as { range?: [number, number, number] } | undefined;
  const [start, end] = node?.range ?? [0, source.length];
  const inner = text.replace(/^\$\{\{\s*|\s*\}\}$/g, '');
  const at = source.slice(start, end).indexOf(inner);
  return lineOf(lc, at >= 0 ? start + at : start);
}
