/**
 * Renaming the examples' environments (and branch) in a text: a comment, or a value of a job made
 * from an example's job. One pass, so a name given to one environment is never renamed again as
 * another's (`--environments prod,dev`). Names are whole words: `nyl-dev`, `dev's`, `'dev'`, never
 * `devices`; a whole list (`dev, staging and prod`, across a line break too) becomes the whole new
 * list. Values the workflows hold as structure (lists, `needs`, branches) are set as structure
 * instead, not through here.
 */

export interface Renames {
  /** The examples' environments and the new ones, in order: their lists are renamed as a whole. */
  lists?: { from: string[]; to: string[] };
  /** One name → its new name. */
  names: Map<string, string>;
  /** `needs.<job>` in an expression: an environment's new name → its job's id. */
  jobs?: Map<string, string>;
}

const literal = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/** The ways the examples spell a list (`a, then b`, `a, b`, `["a","b"]`, `a, b and c`): a pattern and its spelling of another. */
const SPELLINGS: { pattern: (names: string[]) => string; spell: (names: string[]) => string }[] = [
  { pattern: (l) => l.map(literal).join(',\\s+then\\s+'), spell: (l) => l.join(', then ') },
  { pattern: (l) => l.map(literal).join(',\\s+'), spell: (l) => l.join(', ') },
  { pattern: (l) => literal(JSON.stringify(l)), spell: (l) => JSON.stringify(l) },
  {
    pattern: (l) => `${l.slice(0, -1).map(literal).join(',\\s+')}\\s+and\\s+${literal(l.at(-1) as string)}`,
    spell: (l) => (l.length > 1 ? `${l.slice(0, -1).join(', ')} and ${l.at(-1)}` : (l[0] ?? '')),
  },
];

/** Whole lists in a text, each a match of one spelling: what it becomes. */
function listRenamer(lists: Renames['lists']): { re: RegExp; to: (match: string) => string } | undefined {
  if (!lists || lists.from.length < 2 || lists.from.join() === lists.to.join()) return undefined;
  const { from, to } = lists;
  const anchored = SPELLINGS.map((s) => ({ re: new RegExp(`^(?:${s.pattern(from)})$`), spell: s.spell }));
  return {
    re: new RegExp(SPELLINGS.map((s) => `(?:${s.pattern(from)})`).join('|'), 'g'),
    to: (match) => anchored.find((a) => a.re.test(match))?.spell(to) ?? match,
  };
}

export function renamer(r: Renames): (text: string) => string {
  const lists = listRenamer(r.lists);
  const names = new Map([...r.names].filter(([a, b]) => a !== b || r.jobs?.has(b)));
  if (!lists && !names.size) return (text) => text;
  const word = [...names.keys()].map(literal).join('|');
  const pattern = word ? new RegExp(`(needs\\.)?(?<![\\w])(?:${word})(?![\\w])`, 'g') : undefined;
  // Two names of the example that became one (`staging and prod` of a line of two): said once.
  const targets = [...new Set(names.values())].map(literal).join('|');
  const twice = targets ? new RegExp(`(?<![\\w.-])(${targets})\\s+and\\s+\\1(?![\\w.-])`, 'g') : undefined;
  const renameWords = (text: string) =>
    pattern
      ? text
          .replace(pattern, (match: string, needs: string | undefined) => {
            const name = needs ? match.slice(needs.length) : match;
            const to = names.get(name) ?? name;
            return needs ? `needs.${r.jobs?.get(to) ?? to}` : to;
          })
          .replace(twice as RegExp, '$1')
      : text;
  return (text) => {
    if (!lists) return renameWords(text);
    let out = '';
    let at = 0;
    for (const m of text.matchAll(lists.re)) {
      out += renameWords(text.slice(at, m.index)) + lists.to(m[0]);
      at = (m.index ?? 0) + m[0].length;
    }
    return out + renameWords(text.slice(at));
  };
}
