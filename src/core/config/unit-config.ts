import { type Problem, problem } from '../util/errors.js';
import { parseForEach } from './for-each.js';
import type { Location, UnitConfig } from './model.js';
import { type Reference, scanReferences } from './references.js';
import type { UnitDoc } from './schema.js';
import { lineOf, locate, textLine, type ValueDocument } from './yaml-read.js';

/** A unit document being read: where it is, how to find a line in it, what it is called in messages. */
export interface UnitSource {
  file: string;
  source: string;
  read: ValueDocument;
  /** `Command migrate`, for messages. */
  what: string;
  at: Location;
}

function walkStrings(v: unknown, path: string[], fn: (s: string, path: string[]) => void): void {
  if (typeof v === 'string') fn(v, path);
  else if (Array.isArray(v)) for (const [i, x] of v.entries()) walkStrings(x, [...path, String(i)], fn);
  else if (v && typeof v === 'object') for (const [k, x] of Object.entries(v)) walkStrings(x, [...path, k], fn);
}

const lineAtOf = (read: ValueDocument) => (path: (string | number)[], key?: string) => {
  const { doc, lc } = read.located();
  return locate(doc, lc, path, key);
};

/** What a unit's spec references: the output references in order, the item paths it uses, and where each unit is first named. */
interface Scanned {
  refs: Reference[];
  each: Set<string>;
  /** Where each referenced unit is first named; its line is looked up only for a message. */
  refAt: Map<string, { line: () => number; field: string }>;
}

/** The `${{ … }}` expressions of a unit's spec; an unsupported one is a problem with its line. */
function scanSpec(s: UnitSource, unit: UnitDoc, problems: Problem[]): Scanned {
  const out: Scanned = { refs: [], each: new Set(), refAt: new Map() };
  const lineOfText = (text: string, path: string[]) => {
    const { doc, lc } = s.read.located();
    return textLine(text, doc, lc, s.source, ['spec', ...path]);
  };
  walkStrings(unit.spec, [], (str, path) => {
    if (!str.includes('${{')) return; // no expression, the common case: nothing to scan
    const r = scanReferences(str);
    const field = `spec.${path.join('.')}`;
    for (const e of r.each) out.each.add(e.path);
    for (const ref of r.refs) {
      out.refs.push(ref);
      if (!out.refAt.has(ref.unit)) out.refAt.set(ref.unit, { line: () => lineOfText(ref.text, path), field });
    }
    for (const b of r.bad)
      problems.push(
        problem('NYL-CONFIG-REFERENCE', `${s.what}: unsupported expression ${b}`, {
          subject: `${s.file}:${lineOfText(b, path)} ${field}`,
          fix: 'the only expression is ${{ units.<name>.outputs.<key> }}',
        }),
      );
  });
  return out;
}

/** Where a dependency is named: its `needs` entry, the reference that makes it one, or the spec. */
function depAtOf(s: UnitSource, refAt: Scanned['refAt']) {
  return (dep: string) => {
    const { doc, lc } = s.read.located();
    const needsNode = doc.getIn(['needs'], true) as { items?: { value?: unknown; range?: [number, number, number] }[] };
    const item = needsNode?.items?.find((i) => i.value === dep);
    if (item) return { line: lineOf(lc, item.range?.[0]), field: 'needs' };
    const ref = refAt.get(dep);
    if (ref) return { line: ref.line(), field: ref.field };
    return { line: s.at.line, field: 'spec' };
  };
}

/**
 * A validated unit document as the configuration keeps it: its output references, the item paths
 * it uses and its `forEach` (each checked, problems with their lines), its dependency edges and
 * where each is named.
 */
export function unitConfig(s: UnitSource, unit: UnitDoc, problems: Problem[]): UnitConfig {
  const lineAt = lineAtOf(s.read);
  const { refs, each, refAt } = scanSpec(s, unit, problems);
  const fe = parseForEach(unit, [...each]);
  for (const p of fe.problems)
    problems.push(
      problem('NYL-CONFIG-FOREACH', `${s.what}: ${p.message}`, {
        subject: `${s.file}:${lineAt(p.path)} ${p.path.join('.')}`,
        fix: 'forEach is a list of strings or objects with unique keys (letters, digits, ".", "_", "-"), or one ${{ units.<name>.outputs.<key> }} holding such a JSON list; ${{ each.key }}, ${{ each.value }} and ${{ each.value.<field> }} name its item',
      }),
    );
  const from = fe.source && 'from' in fe.source ? fe.source.from : undefined;
  if (from && !refAt.has(from.unit)) refAt.set(from.unit, { line: () => lineAt(['forEach']), field: 'forEach' });
  const deps = [...new Set([...(unit.needs ?? []), ...refs.map((r) => r.unit), ...(from ? [from.unit] : [])])];
  return {
    doc: unit,
    at: s.at,
    refs,
    deps,
    depAt: depAtOf(s, refAt),
    lineAt: (p) => lineAt(p),
    ...(fe.source ? { forEach: fe.source, each: [...each] } : {}),
  };
}
