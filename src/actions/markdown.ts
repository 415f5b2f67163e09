import { masker } from '../core/util/mask.js';

/**
 * Markdown for GitHub's job summaries and comments: text made inert, code spans that hold anything.
 * Each masks its text first: a secret escaped before the summary is masked as a whole (`&` as
 * `&amp;`) would no longer be found, yet render as itself.
 */

/**
 * Text from units and tools, made inert for a summary: outside code spans `<`, `>` and `&` become
 * entities (a raw `<!--` would hide everything after it), inside them they stay as they are (code
 * spans show text literally); `|` is escaped for tables and newlines become breaks. An unpaired
 * backtick is escaped so it opens no code span.
 */
export function inline(text: string): string {
  const parts = masker.mask(text).split('`');
  // An odd number of backticks: the last one pairs with nothing and is shown as it is.
  const unpaired = parts.length % 2 === 0 ? parts.pop() : undefined;
  const plain = (p: string) =>
    p
      .replace(/&/g, '&amp;')
      .replace(/</g, '&lt;')
      .replace(/>/g, '&gt;')
      .replace(/\|/g, '\\|')
      .replace(/\r?\n/g, '<br>');
  const code = (p: string) => `\`${p.replace(/\|/g, '\\|').replace(/\r?\n/g, ' ')}\``;
  const out = parts.map((p, i) => (i % 2 === 1 ? code(p) : plain(p))).join('');
  return unpaired === undefined ? out : `${out}&#96;${plain(unpaired)}`;
}

/** A code span around any text: a fence longer than any run of backticks inside it. */
export function code(text: string): string {
  const s = masker.mask(text).replace(/\r?\n/g, ' ').replace(/\|/g, '\\|');
  const longest = Math.max(0, ...(s.match(/`+/g) ?? []).map((m) => m.length));
  const fence = '`'.repeat(longest + 1);
  return longest ? `${fence} ${s} ${fence}` : `${fence}${s}${fence}`;
}
