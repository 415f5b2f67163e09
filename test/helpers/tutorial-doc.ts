/**
 * docs/tutorial.md read as a script. Its conventions (the tutorial's closing section repeats them
 * for its editors):
 *
 * - a ```sh block is typed in the reader's terminal: run with bash (`set -e`), in order, in the
 *   folder the previous block ended in and with what it exported; it must exit 0, or the code
 *   its info string names (```sh exit=4);
 * - `<!-- file: PATH -->` before a block: the block is the content of PATH (`, append` adds it at
 *   the end; `, from: TEXT` replaces the file from the line that starts with TEXT);
 * - `<!-- excerpt: PATH -->` before a block: the block is an excerpt of the file PATH as it is then;
 * - `<!-- github: EVENT -->` alone: what happens on github.com (a pull request opened, a merge, a
 *   workflow run), simulated by test/tutorial.test.ts;
 * - a ```text or ```markdown block is what the step before it printed (a terminal block: its
 *   output; a github event: its workflows' log and comments): an excerpt, checked; all of it
 *   with ```text exact.
 *
 * Any other block or directive makes the test fail: nothing in the page goes unchecked.
 */

export type Item =
  | { kind: 'shell'; line: number; code: string; exit: number }
  | { kind: 'file'; line: number; path: string; mode: 'write' | 'append' | { from: string }; content: string }
  | { kind: 'excerpt'; line: number; path: string; content: string }
  | { kind: 'github'; line: number; event: string }
  | { kind: 'output'; line: number; content: string; exact: boolean };

interface Block {
  line: number;
  info: string;
  content: string;
}

const DIRECTIVE = /^<!--\s*([a-z-]+):\s*(.*?)\s*-->$/;

/** The fenced blocks and directives of a markdown text, in order. */
function scan(text: string): (Block | { line: number; directive: string; value: string })[] {
  const lines = text.split('\n');
  const out: (Block | { line: number; directive: string; value: string })[] = [];
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i] as string;
    const fence = /^(\s*)(`{3,})(.*)$/.exec(line);
    if (fence) {
      const [, indent = '', ticks = '', info = ''] = fence;
      const body: string[] = [];
      let j = i + 1;
      for (; j < lines.length && (lines[j] as string).trim() !== ticks; j++)
        body.push(
          (lines[j] as string).startsWith(indent) ? (lines[j] as string).slice(indent.length) : (lines[j] as string),
        );
      if (j >= lines.length) throw new Error(`tutorial line ${i + 1}: a code block is not closed`);
      out.push({ line: i + 1, info: info.trim(), content: body.length ? `${body.join('\n')}\n` : '' });
      i = j;
      continue;
    }
    const d = DIRECTIVE.exec(line.trim());
    if (d) out.push({ line: i + 1, directive: d[1] as string, value: d[2] as string });
    else if (line.trim().startsWith('<!--'))
      throw new Error(`tutorial line ${i + 1}: an HTML comment that is no directive: ${line}`);
  }
  return out;
}

function fileMode(value: string): { path: string; mode: 'write' | 'append' | { from: string } } {
  const [path = '', ...rest] = value.split(',').map((s) => s.trim());
  const opt = rest.join(',');
  if (!opt) return { path, mode: 'write' };
  if (opt === 'append') return { path, mode: 'append' };
  const from = /^from:\s*(.+)$/.exec(opt);
  if (from) return { path, mode: { from: from[1] as string } };
  throw new Error(`file directive ${JSON.stringify(value)}: say "append" or "from: TEXT" after the path`);
}

/** The tutorial as a list of steps; throws on a block or directive the test would not run or check. */
export function readTutorial(text: string): Item[] {
  const items: Item[] = [];
  const parts = scan(text);
  for (let i = 0; i < parts.length; i++) {
    const p = parts[i] as (typeof parts)[number];
    if ('directive' in p) {
      if (p.directive === 'github') {
        items.push({ kind: 'github', line: p.line, event: p.value });
        continue;
      }
      const block = parts[i + 1];
      if (!block || 'directive' in block)
        throw new Error(`tutorial line ${p.line}: the ${p.directive} directive needs a code block after it`);
      i++;
      if (p.directive === 'file')
        items.push({ kind: 'file', line: block.line, ...fileMode(p.value), content: block.content });
      else if (p.directive === 'excerpt')
        items.push({ kind: 'excerpt', line: block.line, path: p.value, content: block.content });
      else throw new Error(`tutorial line ${p.line}: unknown directive ${p.directive} (file, excerpt or github)`);
      continue;
    }
    const [lang, ...attrs] = p.info.split(/\s+/);
    if (lang === 'sh') {
      const exit = attrs.find((a) => a.startsWith('exit='));
      items.push({ kind: 'shell', line: p.line, code: p.content, exit: exit ? Number(exit.slice(5)) : 0 });
    } else if (lang === 'text' || lang === 'markdown')
      items.push({ kind: 'output', line: p.line, content: p.content, exact: attrs.includes('exact') });
    else
      throw new Error(
        `tutorial line ${p.line}: a \`\`\`${p.info} block the test neither runs nor checks: use sh, text or markdown, or a file/excerpt directive`,
      );
  }
  return items;
}

/**
 * A line with what changes from run to run (ids, commits, tokens, workflow run and job numbers,
 * times, durations, user@host) replaced by placeholders, runs of blanks made one and indentation
 * dropped (so that a page written from one run matches the next), and a markdown table's rule
 * made short (biome pads the tables of the page).
 */
export function normalize(line: string): string {
  return line
    .replace(/\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b/g, '<id>')
    .replace(/\bv[23](\.[0-9a-f]{12}|\.none){3,4}\b/g, '<token>')
    .replace(/\/actions\/runs\/\d+/g, '/actions/runs/<n>')
    .replace(/\/job\/\d+/g, '/job/<n>')
    .replace(/\b\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)?/g, '<time>')
    .replace(/\b(?=[0-9a-f]*\d)[0-9a-f]{7,40}\b/g, '<sha>')
    .replace(/\b\d+(\.\d+)?(ms|s|m|h)\b( ago)?/g, '<duration>')
    .replace(/[\w.+-]+@[\w.-]+/g, '<who>')
    .replace(/\/tmp\/[\w./-]+/g, '<path>')
    .replace(/-{3,}/g, '---')
    .replace(/[ \t]+/g, ' ')
    .trim();
}

/** Run ids and plan tokens: values a reader copies from an output into a later command. */
export const COPIED =
  /\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b|\bv[23](?:\.[0-9a-f]{12}|\.none){3,4}\b/g;

/** The run ids and tokens of a line of the page paired with those in the same places of what ran. */
function pairsOf(shown: string, printed: string, into: Map<string, string>): void {
  const a = shown.match(COPIED) ?? [];
  const b = printed.match(COPIED) ?? [];
  if (a.length === b.length) for (const [i, v] of a.entries()) into.set(v, b[i] as string);
}

/**
 * Whether `expected` (a block of the page) is an excerpt of `actual` (what ran printed): a line
 * `…` skips lines; a `…` inside a line stands for any text; the other lines of a chunk must follow
 * one another in `actual`, chunks in order. `problem` says why not; `copied` maps each run id and
 * token the page shows to the one printed in its place, for the commands that copy them.
 */
export function matchExcerpt(expected: string, actual: string): { problem?: string; copied: Map<string, string> } {
  const printed = actual.split('\n');
  const have = printed.map(normalize);
  const copied = new Map<string, string>();
  const chunks: string[][] = [[]];
  for (const raw of expected.trimEnd().split('\n')) {
    if (raw.trim() === '…' || raw.trim() === '# …') chunks.push([]);
    else (chunks.at(-1) as string[]).push(raw);
  }
  const matches = (pattern: string, line: string | undefined) =>
    line !== undefined &&
    new RegExp(
      `^${pattern
        .split('…')
        .map((s) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'))
        .join('.*')}$`,
    ).test(line);
  let from = 0;
  for (const chunk of chunks.filter((c) => c.length)) {
    const want = chunk.map(normalize);
    let at = -1;
    for (let i = from; i + want.length <= have.length && at < 0; i++)
      if (want.every((l, k) => matches(l, have[i + k]))) at = i;
    if (at < 0) {
      const first = want[0] as string;
      const near = have.findIndex((l, i) => i >= from && matches(first, l));
      const off = want.findIndex((l, k) => !matches(l, have[near + k]));
      const problem =
        near < 0
          ? `this line is not in the output (after line ${from + 1}): ${JSON.stringify(first)}`
          : `lines from ${JSON.stringify(first)} do not follow one another in the output: ${JSON.stringify(want[off])} is not where it is shown`;
      return { problem, copied };
    }
    for (const [k, raw] of chunk.entries()) pairsOf(raw, printed[at + k] as string, copied);
    from = at + want.length;
  }
  return { copied };
}

export const excerptProblem = (expected: string, actual: string) => matchExcerpt(expected, actual).problem;
