/** Transition commit messages: a subject with counts, then a YAML body machines can read. */

export interface TransitionSummary {
  operation: string;
  environment: string;
  units: Map<string, Record<string, unknown>>;
  /** Result of every unit, for the counts. */
  results: string[];
  lists: [string, string[]][];
  extra?: [string, unknown][];
}

const ORDER = ['executed', 'recovered', 'imported', 'failed', 'uncertain', 'blocked', 'awaiting-approval', 'current'];

export function countsText(results: string[]): string {
  const counts = new Map<string, number>();
  for (const r of results) counts.set(r, (counts.get(r) ?? 0) + 1);
  const keys = [...counts.keys()].sort((a, b) => rank(a) - rank(b));
  return keys.map((k) => `${counts.get(k)} ${k}`).join(', ');
}

function rank(r: string): number {
  const i = ORDER.indexOf(r);
  return i < 0 ? ORDER.length : i;
}

function flowList(names: string[]): string {
  return `[${names.join(', ')}]`;
}

export function transitionMessage(s: TransitionSummary): string {
  const counts = countsText(s.results);
  const lines = [`nyl: ${s.operation} ${s.environment}${counts ? ` (${counts})` : ''}`, ''];
  if (s.units.size) {
    lines.push('units:');
    for (const [name, v] of s.units) lines.push(`  ${name}: ${JSON.stringify(sorted(v))}`);
  } else lines.push('units: {}');
  for (const [key, names] of s.lists) if (names.length) lines.push(`${key}: ${flowList(names)}`);
  for (const [key, v] of s.extra ?? [])
    if (v !== undefined) lines.push(`${key}: ${typeof v === 'string' ? v : JSON.stringify(sorted(v))}`);
  return `${lines.join('\n')}\n`;
}

function sorted(v: unknown): unknown {
  if (!v || typeof v !== 'object' || Array.isArray(v)) return v;
  const out: Record<string, unknown> = {};
  for (const k of Object.keys(v).sort()) out[k] = (v as Record<string, unknown>)[k];
  return out;
}
