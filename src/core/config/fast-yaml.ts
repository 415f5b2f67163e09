/**
 * A reader for the plain YAML configuration is written in: documents that are block mappings of
 * block mappings and sequences, one-line flow collections (JSON-like keys included), one-line quoted scalars, `|`/`>` block
 * scalars, comments. It builds values only (no document or syntax tree) and gives up, returning
 * undefined, on anything else: anchors, tags, multi-line plain or quoted scalars, odd indentation,
 * tabs outside block scalars, duplicate keys, anything `yaml` would reject. The caller then reads
 * the file with `yaml`, which reports errors and locations; so this reader only has to be right for
 * what it accepts, and its values are those of `yaml` (YAML 1.2 core schema) for the same input.
 */

export interface FastDocument {
  /** The document's value, as `yaml`'s `toJS()` gives it. */
  value: Record<string, unknown>;
  /** 1-based line where the document's mapping starts (its first key). */
  line: number;
}

/** Thrown (never escapes) when the input leaves the subset. */
const GIVE_UP: unique symbol = Symbol('give up');

// Characters `yaml` may treat specially or refuse: control characters, BOM, CR, unicode line separators.
const UNSUPPORTED_CHARS = /[\x00-\x08\x0b-\x1f\x7f-\x9f\ufeff\u2028\u2029]/;
/** Characters of a plain key: letters, digits, `_` and `$` (which may start it), `.`, `/` and `-`. */
const KEY_CHAR = new Uint8Array(128);
for (const c of 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_$') KEY_CHAR[c.charCodeAt(0)] = 2;
for (const c of './-') KEY_CHAR[c.charCodeAt(0)] = 1;
const COLON = 58;
const SPACE = 32;

/** Length of the plain key `s` starts with at `i` (0 if none). */
function keyLength(s: string, i: number): number {
  if (KEY_CHAR[s.charCodeAt(i)] !== 2) return 0;
  let j = i + 1;
  while (KEY_CHAR[s.charCodeAt(j)]) j++;
  return j - i;
}

/** `key:` then a space or the end of the line: the key's length, or 0. */
function blockKey(t: string): number {
  const n = keyLength(t, 0);
  if (!n || t.charCodeAt(n) !== COLON || (n + 1 < t.length && t.charCodeAt(n + 1) !== SPACE)) return 0;
  return n;
}
/** A plain scalar inside a flow collection: up to the next indicator. */
const FLOW_PLAIN = /[^,[\]{}#:'"&*!|>%@`?\s][^,[\]{}#:]*/y;
const BLOCK_HEADER = /^([|>])(-?)(?: +(?:#.*)?)?$/;
const AFTER_VALUE = /^(?: +#.*| *)$/;
const BLANK = /^ *$/;
/** First characters a plain scalar cannot start with (some only before a space; all handled as giving up). */
const NOT_PLAIN_START = new Set([...'?:,[]{}#&*!|>\'"%@`']);

const NULL = /^(?:~|[Nn]ull|NULL)?$/;
const BOOL = /^(?:[Tt]rue|TRUE|[Ff]alse|FALSE)$/;
const INT_OCT = /^0o[0-7]+$/;
const INT = /^[-+]?[0-9]+$/;
const INT_HEX = /^0x[0-9a-fA-F]+$/;
const FLOAT_NAN = /^(?:[-+]?\.(?:inf|Inf|INF)|\.nan|\.NaN|\.NAN)$/;
const FLOAT_EXP = /^[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)[eE][-+]?[0-9]+$/;
const FLOAT = /^[-+]?(?:\.[0-9]+|[0-9]+\.[0-9]*)$/;
/** First characters of plain scalars that may resolve to something other than a string: `-+.0-9~nNtTfF`. */
const MAYBE_NOT_STRING = new Uint8Array(128);
for (const c of '-+.0123456789~nNtTfF') MAYBE_NOT_STRING[c.charCodeAt(0)] = 1;

/** A plain scalar's value under the YAML 1.2 core schema, tag by tag in `yaml`'s order. */
export function resolvePlain(s: string): unknown {
  if (s === '') return null;
  const c = s.charCodeAt(0);
  if (c >= 128 || !MAYBE_NOT_STRING[c]) return s;
  if (NULL.test(s)) return null;
  if (BOOL.test(s)) return s[0] === 't' || s[0] === 'T';
  if (c > 64) return s; // a letter: neither a number nor infinity
  if (INT_OCT.test(s)) return Number.parseInt(s.substring(2), 8);
  if (INT.test(s)) return Number.parseInt(s, 10);
  if (INT_HEX.test(s)) return Number.parseInt(s.substring(2), 16);
  if (FLOAT_NAN.test(s)) return s.slice(-3).toLowerCase() === 'nan' ? Number.NaN : s[0] === '-' ? -Infinity : Infinity;
  if (FLOAT_EXP.test(s) || FLOAT.test(s)) return Number.parseFloat(s);
  return s;
}

const ESCAPES: Record<string, string> = {
  '0': '\0',
  a: '\x07',
  b: '\b',
  t: '\t',
  '\t': '\t',
  n: '\n',
  v: '\v',
  f: '\f',
  r: '\r',
  e: '\x1b',
  ' ': ' ',
  '"': '"',
  '/': '/',
  '\\': '\\',
  N: '\x85',
  _: '\xa0',
  L: '\u2028',
  P: '\u2029',
};
const HEX_ESCAPES: Record<string, RegExp> = { x: /^[0-9a-fA-F]{2}/, u: /^[0-9a-fA-F]{4}/ };

function giveUp(): never {
  throw GIVE_UP;
}

/** The documents of `source`, or undefined when it is not in the subset this reader knows. */
export function readFast(source: string): FastDocument[] | undefined {
  if (UNSUPPORTED_CHARS.test(source)) return undefined;
  try {
    return new Reader(source).documents();
  } catch (e) {
    if (e === GIVE_UP) return undefined;
    throw e;
  }
}

class Reader {
  private readonly raw: string[];
  /** Indentation and text after it, per line; a compact item (`- key: v`) rewrites its line. */
  private readonly ind: number[];
  private readonly text: string[];
  private pos = 0;

  constructor(source: string) {
    this.raw = source.split('\n');
    this.ind = new Array(this.raw.length);
    this.text = new Array(this.raw.length);
    for (let i = 0; i < this.raw.length; i++) {
      const line = this.raw[i] as string;
      let n = 0;
      while (line.charCodeAt(n) === SPACE) n++;
      this.ind[i] = n;
      this.text[i] = n ? line.slice(n) : line;
    }
  }

  documents(): FastDocument[] {
    const docs: FastDocument[] = [];
    for (;;) {
      const i = this.next();
      if (i < 0) return docs;
      if (this.marker(i)) {
        this.pos++;
        continue;
      }
      docs.push({ value: this.map(this.ind[i] as number), line: i + 1 });
      const after = this.next();
      if (after >= 0 && !this.marker(after)) giveUp();
    }
  }

  /** Index of the next line that is neither blank nor a comment (-1 at the end). */
  private next(): number {
    for (let i = this.pos; i < this.raw.length; i++) {
      const t = this.text[i] as string;
      if (t === '' || t[0] === '#') continue;
      if (t.includes('\t')) giveUp();
      this.pos = i;
      return i;
    }
    this.pos = this.raw.length;
    return -1;
  }

  /** `---` starts a document; `...` and directives are left to `yaml`. */
  private marker(i: number): boolean {
    if (this.ind[i] !== 0) return false;
    const t = this.text[i] as string;
    if (t.startsWith('...') || t[0] === '%') giveUp();
    if (!t.startsWith('---')) return false;
    if (t.length === 3) return true;
    if (t[3] !== ' ') return false;
    if (!AFTER_VALUE.test(t.slice(3))) giveUp();
    return true;
  }

  /** A line that ends the collection at `ind`: the end, a document marker or a smaller indentation. */
  private ends(i: number, ind: number): boolean {
    if (i < 0 || this.marker(i)) return true;
    const n = this.ind[i] as number;
    if (n > ind) giveUp();
    return n < ind;
  }

  private node(ind: number): unknown {
    return isItem(this.text[this.pos] as string) ? this.seq(ind) : this.map(ind);
  }

  private map(ind: number): Record<string, unknown> {
    const out: Record<string, unknown> = {};
    for (;;) {
      const i = this.next();
      if (this.ends(i, ind)) return out;
      const t = this.text[i] as string;
      const n = blockKey(t);
      if (!n) giveUp();
      const key = t.slice(0, n);
      if (!plainKey(key) || Object.hasOwn(out, key)) giveUp();
      this.pos = i + 1;
      out[key] = this.value(t.slice(skipSpaces(t, n + 1)), ind, true);
    }
  }

  private seq(ind: number): unknown[] {
    const out: unknown[] = [];
    for (;;) {
      const i = this.next();
      if (this.ends(i, ind)) return out;
      const t = this.text[i] as string;
      if (!isItem(t)) return out; // the next key of a mapping whose value this sequence is
      let j = 1;
      while (t.charCodeAt(j) === 32) j++;
      const rest = t.slice(j);
      if (rest !== '' && rest[0] !== '#' && (isItem(rest) || blockKey(rest))) {
        // `- key: v` or `- - x`: a collection whose indentation is the column of its first entry.
        this.ind[i] = ind + j;
        this.text[i] = rest;
        this.pos = i;
        out.push(this.node(ind + j));
      } else {
        this.pos = i + 1;
        out.push(this.value(rest, ind, false));
      }
    }
  }

  /** The value after `key:` or `-` (the line already consumed), its parent collection at `ind`. */
  private value(rest: string, ind: number, inMap: boolean): unknown {
    if (rest === '' || rest[0] === '#') return this.nested(ind, inMap);
    const c = rest[0] as string;
    if (c === '|' || c === '>') return this.block(rest, ind);
    const v = inlineValue(rest);
    // A more indented line next would continue the scalar (or be an error): left to `yaml`.
    const i = this.next();
    if (i >= 0 && !this.marker(i) && (this.ind[i] as number) > ind) giveUp();
    return v;
  }

  /** Nothing after `key:`: the collection on the lines below (a sequence may sit at the key's own column), or null. */
  private nested(ind: number, inMap: boolean): unknown {
    const i = this.next();
    if (i < 0 || this.marker(i)) return null;
    const n = this.ind[i] as number;
    if (n > ind) return this.node(n);
    if (inMap && n === ind && isItem(this.text[i] as string)) return this.seq(ind);
    return null;
  }

  /** A `|` or `>` scalar, clipped or stripped, its content more indented than `ind`. */
  private block(header: string, ind: number): string {
    const h = BLOCK_HEADER.exec(header);
    if (!h) giveUp();
    const raw = this.raw;
    let first = this.pos;
    while (first < raw.length && BLANK.test(raw[first] as string)) first++;
    if (first === raw.length) giveUp();
    const width = this.ind[first] as number;
    if (width <= ind) giveUp();
    if (first > this.pos && h[1] === '>') giveUp();
    const lines: string[] = [];
    let i = this.pos;
    for (; i < raw.length; i++) {
      const r = raw[i] as string;
      if (BLANK.test(r)) {
        if (r.length > width) giveUp();
        lines.push('');
        continue;
      }
      if ((this.ind[i] as number) < width) break;
      lines.push(r.slice(width));
    }
    while (lines.length && lines[lines.length - 1] === '') lines.pop();
    this.pos = i;
    const body = h[1] === '|' ? lines.join('\n') : fold(lines);
    return h[2] === '-' ? body : `${body}\n`;
  }
}

/** A value on the line itself: a flow collection, a quoted scalar, or a plain one (anything else is left to `yaml`). */
function inlineValue(rest: string): unknown {
  const c = rest[0] as string;
  if (c === '[' || c === '{' || c === '"' || c === "'") {
    const [value, end] = c === '[' || c === '{' ? flow(rest, 0) : quoted(rest, 0);
    if (end < rest.length && !AFTER_VALUE.test(rest.slice(end))) giveUp();
    return value;
  }
  if (NOT_PLAIN_START.has(c) || (c === '-' && (rest.length === 1 || rest[1] === ' '))) giveUp();
  const hash = rest.indexOf(' #');
  const s = trimSpaces(hash >= 0 ? rest.slice(0, hash) : rest);
  if (s.includes(': ') || s.endsWith(':')) giveUp();
  return resolvePlain(s);
}

/** A key that is a string as written (`yaml` caps implicit keys at 1024 characters). */
const plainKey = (k: string) => k.length < 1000 && k !== '__proto__' && typeof resolvePlain(k) === 'string';

const isItem = (t: string) => t === '-' || t.startsWith('- ');

const spaced = (s: string) => s[0] === ' ' || s[0] === '\t';

/** Folded content: a break between two plain lines becomes a space, unless empty lines are between. */
function fold(lines: string[]): string {
  let out = lines[0] as string;
  let empty = 0;
  let prev = out;
  for (let k = 1; k < lines.length; k++) {
    const l = lines[k] as string;
    if (l === '') {
      empty++;
      continue;
    }
    if (spaced(prev) || spaced(l)) out += '\n'.repeat(empty + 1);
    else out += empty ? '\n'.repeat(empty) : ' ';
    out += l;
    prev = l;
    empty = 0;
  }
  return out;
}

/** A quoted scalar starting at `s[i]`, closed on the same line: its value and the index after it. */
function quoted(s: string, i: number): [string, number] {
  const q = s[i];
  let out = '';
  let j = i + 1;
  for (;;) {
    const end = s.indexOf(q as string, j);
    if (end < 0) giveUp();
    if (q === "'") {
      out += s.slice(j, end);
      if (s[end + 1] === "'") {
        out += "'";
        j = end + 2;
        continue;
      }
      return [out, end + 1];
    }
    const bs = s.indexOf('\\', j);
    if (bs < 0 || bs > end) return [out + s.slice(j, end), end + 1];
    out += s.slice(j, bs);
    const e = s[bs + 1] as string;
    const hexEscape = HEX_ESCAPES[e];
    if (hexEscape) {
      const hex = hexEscape.exec(s.slice(bs + 2))?.[0];
      if (hex === undefined) giveUp();
      out += String.fromCodePoint(Number.parseInt(hex, 16));
      j = bs + 2 + hex.length;
    } else {
      const c = ESCAPES[e];
      if (c === undefined) giveUp();
      out += c;
      j = bs + 2;
    }
  }
}

/** Without its trailing spaces; not `trimEnd`, which also drops no-break and other spaces YAML keeps. */
function trimSpaces(s: string): string {
  let end = s.length;
  while (s.charCodeAt(end - 1) === SPACE) end--;
  return end === s.length ? s : s.slice(0, end);
}

function skipSpaces(s: string, i: number): number {
  while (s.charCodeAt(i) === 32) i++;
  return i;
}

/** A flow mapping's key at `s[i]`: quoted (`"k": v`, or `"k":v` as JSON writes it) or plain (`k: v`); the index of its colon. */
function flowKey(s: string, i: number): [string, number] {
  if (s[i] === '"' || s[i] === "'") {
    const [key, after] = quoted(s, i);
    if (s.charCodeAt(after) !== COLON || after - i >= 1000 || key === '__proto__') giveUp();
    return [key, after];
  }
  const n = keyLength(s, i);
  if (!n || s.charCodeAt(i + n) !== COLON || s.charCodeAt(i + n + 1) !== SPACE) giveUp();
  const key = s.slice(i, i + n);
  if (!plainKey(key)) giveUp();
  return [key, i + n];
}

/** A flow collection starting at `s[i]`, closed on the same line: its value and the index after it. */
function flow(s: string, i: number): [unknown, number] {
  const close = s[i] === '[' ? ']' : '}';
  const seq: unknown[] = [];
  const map: Record<string, unknown> = {};
  i = skipSpaces(s, i + 1);
  while (s[i] !== close) {
    if (close === '}') {
      const [key, after] = flowKey(s, i);
      if (Object.hasOwn(map, key)) giveUp();
      const [v, end] = flowItem(s, skipSpaces(s, after + 1));
      map[key] = v;
      i = end;
    } else {
      const [v, end] = flowItem(s, i);
      seq.push(v);
      i = end;
    }
    i = skipSpaces(s, i);
    if (s[i] === ',') i = skipSpaces(s, i + 1);
    else if (s[i] !== close) giveUp();
  }
  return [close === ']' ? seq : map, i + 1];
}

function flowItem(s: string, i: number): [unknown, number] {
  const c = s[i];
  if (c === '[' || c === '{') return flow(s, i);
  if (c === '"' || c === "'") return quoted(s, i);
  // `-` starts a plain scalar only before a character that is neither space nor a flow indicator.
  if (c === '-' && (i + 1 === s.length || ' ,[]{}'.includes(s[i + 1] as string))) giveUp();
  FLOW_PLAIN.lastIndex = i;
  const m = FLOW_PLAIN.exec(s);
  if (!m) giveUp();
  return [resolvePlain(trimSpaces(m[0])), i + m[0].length];
}
