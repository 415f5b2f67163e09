import type { RunReport } from '../core/ops/report.js';
import type { Problem } from '../core/util/errors.js';

/** GitHub drops a job summary over 1 MiB whole: stay well under it. */
export const SUMMARY_BUDGET = 1_000_000;

const COLORS: Record<string, string> = {
  executed: '#2da44e',
  recovered: '#2da44e',
  imported: '#54aeff',
  destroyed: '#8c959f',
  current: '#d0d7de',
  'in-sync': '#d0d7de',
  failed: '#cf222e',
  uncertain: '#bf8700',
  blocked: '#fb8f44',
  'awaiting-approval': '#8250df',
  drifted: '#bf3989',
  held: '#6e7781',
};

/**
 * Text from units and tools, made inert for a summary: outside code spans `<`, `>` and `&` become
 * entities (a raw `<!--` would hide everything after it), inside them they stay as they are (code
 * spans show text literally); `|` is escaped for tables and newlines become breaks. An unpaired
 * backtick is escaped so it opens no code span.
 */
export function inline(text: string): string {
  const parts = text.split('`');
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

const cell = inline;
const id = (s: string) => `u_${s.replace(/[^A-Za-z0-9_]/g, '_')}`;

export interface SummaryContext {
  runUrl?: string;
  /** Waves and edges of the environment, for the graph. */
  graph?: { waves: string[][]; edges: [string, string][] };
}

/** A mermaid graph of the waves, each unit coloured by its result. */
export function mermaid(report: RunReport, graph: NonNullable<SummaryContext['graph']>, maxUnits = 300): string {
  const result = new Map(report.rows.map((r) => [r.unit, r.result]));
  const units = graph.waves.flat();
  if (!units.length || units.length > maxUnits) return '';
  const lines = ['```mermaid', 'flowchart LR'];
  graph.waves.forEach((wave, i) => {
    lines.push(`  subgraph w${i + 1}["wave ${i + 1}"]`);
    for (const u of wave) lines.push(`    ${id(u)}["${u}<br/>${result.get(u) ?? ''}"]`);
    lines.push('  end');
  });
  for (const [from, to] of graph.edges) lines.push(`  ${id(from)} --> ${id(to)}`);
  const used = new Set([...result.values()]);
  for (const r of used) if (COLORS[r]) lines.push(`  classDef ${r.replace(/-/g, '_')} fill:${COLORS[r]},color:#1f2328`);
  for (const u of units) {
    const r = result.get(u);
    if (r && COLORS[r]) lines.push(`  class ${id(u)} ${r.replace(/-/g, '_')}`);
  }
  lines.push('```');
  return lines.join('\n');
}

function problemText(p: Problem): string {
  return `- **${p.severity} ${p.code}**${p.subject ? ` (${inline(p.subject)})` : ''}: ${inline(p.message)}${p.fix ? `<br>fix: ${inline(p.fix)}` : ''}`;
}

/** The job summary: result table, run facts, link, next steps, graph; cut to the budget. */
export function jobSummary(report: RunReport, ctx: SummaryContext = {}, budget = SUMMARY_BUDGET): string {
  const header = report.header ?? ['Unit', 'Kind', 'Result', 'Detail'];
  const head = [
    `## nyl ${report.operation} ${report.environment}: exit ${report.exit}`,
    '',
    `| ${header.map((h) => h[0] + h.slice(1).toLowerCase()).join(' | ')} |`,
    `| ${header.map(() => '---').join(' | ')} |`,
  ].join('\n');
  const facts = [
    '',
    ...[
      ['run', report.run],
      ['source', report.source],
      ['desired', report.desired],
      ['observed', report.observed],
      ...(report.extra ?? []),
    ]
      .filter(([, v]) => v)
      .map(([k, v]) => `- **${k}**: \`${v}\``),
    ...(ctx.runUrl ? [`- **workflow run**: ${ctx.runUrl}`] : []),
  ].join('\n');
  // Next steps are for people: the first ones, then a count (the table and outputs list them all).
  const NEXT_MAX = 50;
  const allWaiting = report.rows.filter((r) =>
    ['uncertain', 'awaiting-approval', 'failed', 'drifted'].includes(r.result),
  );
  const waiting = allWaiting.slice(0, NEXT_MAX);
  const next = [
    ...(waiting.length || report.problems.length ? ['', '### What to do next', ''] : []),
    ...report.problems.slice(0, NEXT_MAX).map(problemText),
    ...waiting
      .filter((r) => !report.problems.some((p) => p.subject === r.unit))
      .map((row) => {
        const e = report.environment;
        const r = { ...row, detail: inline(row.detail) };
        if (r.result === 'uncertain')
          return `- **${r.unit}** is uncertain (${r.detail}): check what it did, then \`nyl recover -e ${e} --unit ${r.unit} --retry --reason <text>\` (or the recover workflow with \`retry: true\`)`;
        if (r.result === 'awaiting-approval')
          return `- **${r.unit}** awaits approval (${r.detail}): run reconcile with \`approve: ${r.unit}\` once it is safe`;
        if (r.result === 'drifted') return `- **${r.unit}** drifted (${r.detail})`;
        return `- **${r.unit}** failed: ${r.detail}`;
      }),
    ...(allWaiting.length > NEXT_MAX ? [`- … and ${allWaiting.length - NEXT_MAX} more units that need attention`] : []),
  ].join('\n');
  const graph = ctx.graph ? mermaid(report, ctx.graph) : '';
  const fixed = Buffer.byteLength(head + facts + next + graph) + 200;
  const rows: string[] = [];
  let used = fixed;
  let cut = 0;
  for (const r of report.rows) {
    const line = `| ${[r.unit, r.kind, r.result, r.detail].map(cell).join(' | ')} |`;
    const n = Buffer.byteLength(line) + 1;
    if (used + n > budget) {
      cut = report.rows.length - rows.length;
      break;
    }
    rows.push(line);
    used += n;
  }
  if (cut) rows.push(`| … | | | ${cut} more units not shown: the summary is kept under 1 MiB |`);
  const body = [
    head,
    ...rows,
    facts,
    next,
    ...(graph && used + Buffer.byteLength(graph) < budget ? ['', graph] : []),
  ].join('\n');
  return `${body}\n`;
}
