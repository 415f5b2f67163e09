import type { Problem } from '../core/util/errors.js';

/** Columns padded to the widest cell plus two spaces; trailing blanks trimmed. */
export function table(header: string[], rows: string[][]): string {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: string[]) =>
    cells
      .map((c, i) => (i === cells.length - 1 ? c : c.padEnd((widths[i] as number) + 2)))
      .join('')
      .trimEnd();
  return [line(header), ...rows.map(line)].join('\n');
}

/** `  label:    value` lines, labels padded to one width. */
export function facts(pairs: [string, string | undefined][]): string {
  const present = pairs.filter((p): p is [string, string] => p[1] !== undefined && p[1] !== '');
  // Labels line up as in `observed: ` even when fewer are shown.
  const w = Math.max('observed:'.length, ...present.map(([k]) => k.length + 1));
  return present.map(([k, v]) => `  ${`${k}:`.padEnd(w + 1)}${v}`).join('\n');
}

/** `error|warning NYL-CODE (subject)`, then the explanation and `fix:` indented. */
export function renderProblem(p: Problem): string {
  const lines = [`${p.severity} ${p.code}${p.subject ? ` (${p.subject})` : ''}`];
  for (const l of p.message.split('\n')) lines.push(`  ${l}`);
  if (p.fix) lines.push(`  fix: ${p.fix}`);
  return lines.join('\n');
}

export function renderProblems(ps: Problem[]): string {
  return ps.map(renderProblem).join('\n\n');
}
