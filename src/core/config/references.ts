/** `${{ units.<name>.outputs.<key> }}`: the one expression form configuration supports. */
const EXPR = /\$\{\{\s*(.*?)\s*\}\}/g;
const REF = /^units\.(.+)\.outputs\.([A-Za-z_][A-Za-z0-9_-]*)$/;
/** `${{ each.key }}`, `${{ each.value }}`, `${{ each.value.<field> }}`: a mapped unit's item (resolve/for-each.ts). */
const EACH = /^each\.(key|value(?:\.[A-Za-z_][A-Za-z0-9_-]*)?)$/;

export interface Reference {
  unit: string;
  key: string;
  /** The expression as written, e.g. `${{ units.db.outputs.url }}`. */
  text: string;
}

/** `each` lists the item paths used (`key`, `value`, `value.region`); only a unit with forEach has them. */
export type ScanResult = { refs: Reference[]; bad: string[]; each: { path: string; text: string }[] };

export function scanReferences(text: string): ScanResult {
  const refs: Reference[] = [];
  const bad: string[] = [];
  const each: ScanResult['each'] = [];
  let closed = 0;
  for (const m of text.matchAll(EXPR)) {
    const r = REF.exec(m[1] as string);
    const e = EACH.exec(m[1] as string);
    if (r) refs.push({ unit: r[1] as string, key: r[2] as string, text: m[0] });
    else if (e) each.push({ path: e[1] as string, text: m[0] });
    else bad.push(m[0]);
    closed = (m.index ?? 0) + m[0].length;
  }
  // `${{` that no `}}` closes: an expression cut short, not text to pass on as it is.
  const open = text.indexOf('${{', closed);
  if (open >= 0) bad.push(`${text.slice(open, open + 60).split('\n')[0]} (no closing }})`);
  return { refs, bad, each };
}

/** Parses one whole expression (`${{ units.a.outputs.b }}` and nothing else), for forEach's source. */
export function wholeReference(text: string): Reference | undefined {
  const m = /^\$\{\{\s*(.*?)\s*\}\}$/.exec(text.trim());
  const r = m ? REF.exec(m[1] as string) : null;
  return r ? { unit: r[1] as string, key: r[2] as string, text: text.trim() } : undefined;
}

/** The input name of an item path in a desired document (`each.value.region`). */
export const eachInput = (path: string) => `each.${path}`;

/** The variable carrying an item path into a script: NYL_EACH_KEY, NYL_EACH_VALUE, NYL_EACH_VALUE__region. */
export function eachVariable(input: string): string | undefined {
  const m = /^each\.(key|value)(?:\.(.+))?$/.exec(input);
  if (!m) return undefined;
  const enc = (s: string) => s.replace(/[^A-Za-z0-9]/g, (c) => `_${c.charCodeAt(0).toString(16).padStart(2, '0')}`);
  return `NYL_EACH_${(m[1] as string).toUpperCase()}${m[2] ? `__${enc(m[2])}` : ''}`;
}

/**
 * Environment variable that carries a reference's value into a shell script. Letters and digits
 * stay; every other character becomes `_` and two hex digits, so distinct references never share
 * a variable and `__` can only be the separator.
 */
export function referenceVariable(ref: { unit: string; key: string }): string {
  const enc = (s: string) => s.replace(/[^A-Za-z0-9]/g, (c) => `_${c.charCodeAt(0).toString(16).padStart(2, '0')}`);
  return `NYL_INPUT_${enc(ref.unit)}__${enc(ref.key)}`;
}

/**
 * Rewrites references in a bash script into quoted variable expansions, so an output holding
 * `$(…)`, backticks or `;` stays data: bash expands a variable's value without evaluating it.
 * Inside double quotes the expansion is used as is; elsewhere it is wrapped in double quotes.
 */
export function shellSafeScript(script: string): string {
  const q: Quotes = { single: false, double: false };
  let out = '';
  for (let i = 0; i < script.length; ) {
    const piece = nextPiece(script, i, q);
    out += piece.text;
    i = piece.end;
  }
  return out;
}

/** Whether the scan is inside single or double quotes. */
interface Quotes {
  single: boolean;
  double: boolean;
}

/** The variable an expression at `i` is expanded from, and where the expression ends; none for an expression nyl does not know. */
function expansionAt(script: string, i: number): { name: string; end: number } | undefined {
  const end = script.indexOf('}}', i + 3);
  if (end < 0) return undefined;
  const inner = script.slice(i + 3, end).trim();
  const r = REF.exec(inner);
  if (r) return { name: referenceVariable({ unit: r[1] as string, key: r[2] as string }), end: end + 2 };
  const e = EACH.exec(inner);
  return e ? { name: eachVariable(eachInput(e[1] as string)) as string, end: end + 2 } : undefined;
}

/** A `#` starting a word outside quotes: a comment, to the end of its line (its quotes do not count). */
const commentAt = (script: string, i: number, q: Quotes) =>
  script[i] === '#' && !q.single && !q.double && (i === 0 || /\s|;/.test(script[i - 1] as string));

/** The next piece of the script as it is rewritten: an expansion, a comment, an escaped pair, or one character. */
function nextPiece(script: string, i: number, q: Quotes): { text: string; end: number } {
  const x = script.startsWith('${{', i) ? expansionAt(script, i) : undefined;
  if (x) {
    const v = `\${${x.name}}`;
    // In single quotes: close them, expand in double quotes, reopen.
    return { text: q.single ? `'"${v}"'` : q.double ? v : `"${v}"`, end: x.end };
  }
  if (commentAt(script, i, q)) {
    const nl = script.indexOf('\n', i);
    const end = nl < 0 ? script.length : nl;
    return { text: script.slice(i, end), end };
  }
  const ch = script[i] as string;
  if (ch === '\\' && !q.single) return { text: script.slice(i, i + 2), end: i + 2 };
  if (ch === "'" && !q.double) q.single = !q.single;
  else if (ch === '"' && !q.single) q.double = !q.double;
  return { text: ch, end: i + 1 };
}

/** Replaces references with their values, for fields that are data rather than code; `each` gives item paths' values. */
export function substitute(
  text: string,
  value: (ref: Reference) => string,
  each: (path: string) => string | undefined = () => undefined,
): string {
  return text.replace(EXPR, (whole, inner: string) => {
    const r = REF.exec(inner);
    if (r) return value({ unit: r[1] as string, key: r[2] as string, text: whole });
    const e = EACH.exec(inner);
    return (e && each(e[1] as string)) ?? whole;
  });
}
