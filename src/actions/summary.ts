import {
  needsAPerson,
  outcomeWords,
  type Part,
  problemStep,
  type Told,
  unitStep,
  type WorkflowName,
  words,
} from '../core/ops/workspace/attention.js';
import type { OpReport, RunReport, UnitRow } from '../core/ops/workspace/report.js';
import { canonicalJson } from '../core/util/canonical.js';
import type { Problem } from '../core/util/errors.js';
import { fittedChangesMd } from './changes-md.js';
import { code, inline } from './markdown.js';

/** GitHub drops a job summary over 1 MiB whole: stay well under it. */
export const SUMMARY_BUDGET = 1_000_000;
/** Above this many rows the table is collapsed in `<details>`: what needs a person stays in view. */
export const TABLE_OPEN_MAX = 20;
/** Units (and problems) listed under "Needs a person"; the rest are counted (the table has them all). */
const LIST_MAX = 50;
/** A detail or problem text in the list is cut here (the table has the whole detail). */
const DETAIL_MAX = 500;
const PROBLEM_MAX = 1_000;
/** Problems shown under one unit. */
const PER_UNIT_MAX = 3;

/**
 * Fill and text colour of each result in the wave graph. Every pair has at least 4.5:1 contrast
 * (WCAG 2 AA for normal text): dark text on the light and mid fills, white on the dark ones.
 */
export const RESULT_COLORS: Record<string, { fill: string; color: string }> = {
  executed: { fill: '#2da44e', color: '#1f2328' },
  recovered: { fill: '#2da44e', color: '#1f2328' },
  imported: { fill: '#54aeff', color: '#1f2328' },
  removed: { fill: '#8c959f', color: '#1f2328' },
  destroyed: { fill: '#8c959f', color: '#1f2328' },
  current: { fill: '#d0d7de', color: '#1f2328' },
  'in-sync': { fill: '#d0d7de', color: '#1f2328' },
  superseded: { fill: '#d0d7de', color: '#1f2328' },
  pending: { fill: '#eaeef2', color: '#1f2328' },
  skipped: { fill: '#eaeef2', color: '#1f2328' },
  failed: { fill: '#cf222e', color: '#ffffff' },
  uncertain: { fill: '#bf8700', color: '#1f2328' },
  blocked: { fill: '#fb8f44', color: '#1f2328' },
  'awaiting-approval': { fill: '#8250df', color: '#ffffff' },
  drifted: { fill: '#bf3989', color: '#ffffff' },
  held: { fill: '#57606a', color: '#ffffff' },
};

/**
 * The workflows the next steps name: the files shipped in examples/workflows/, with the
 * `workflow_dispatch` inputs they take (test/summary.test.ts checks every step against them).
 */
export const WORKFLOWS: Record<WorkflowName, string> = {
  deploy: 'deploy.yml',
  recover: 'recover.yml',
  verify: 'verify.yml',
};

/** Cut to `max` characters (never inside a surrogate pair), saying so. */
function cut(text: string, max: number): string {
  if (text.length <= max) return text;
  let end = max;
  const c = text.charCodeAt(end - 1);
  if (c >= 0xd800 && c <= 0xdbff) end--;
  return `${text.slice(0, end)} …`;
}

const cell = inline;
const id = (s: string) => `u_${s.replace(/[^A-Za-z0-9_]/g, '_')}`;
const cls = (r: string) => r.replace(/[^A-Za-z0-9_]/g, '_');

export interface SummaryContext {
  runUrl?: string;
  /** Waves and edges of the environment, for the graph. */
  graph?: { waves: string[][]; edges: [string, string][] };
  /** verify: the environment's drift issue, when drift-issue is on. */
  driftIssue?: { number: number; url: string };
  /** reconcile with deployments: the GitHub deployment and the state it was given. */
  deployment?: { id: number; environment: string; state: string };
}

/** A mermaid graph of the waves, each unit coloured by its result. */
export function mermaid(report: RunReport, graph: NonNullable<SummaryContext['graph']>, maxUnits = 300): string {
  const result = new Map(report.rows.map((r) => [r.unit, r.result]));
  const units = graph.waves.flat();
  if (!units.length || units.length > maxUnits) return '';
  const label = (s: string) => s.replace(/["<>&#]/g, (c) => `#${c.charCodeAt(0)};`);
  const lines = ['```mermaid', 'flowchart LR'];
  graph.waves.forEach((wave, i) => {
    lines.push(`  subgraph w${i + 1}["wave ${i + 1}"]`);
    for (const u of wave) lines.push(`    ${id(u)}["${label(u)}<br/>${label(result.get(u) ?? '')}"]`);
    lines.push('  end');
  });
  for (const [from, to] of graph.edges) lines.push(`  ${id(from)} --> ${id(to)}`);
  const used = new Set([...result.values()]);
  for (const r of used) {
    const c = RESULT_COLORS[r];
    if (c) lines.push(`  classDef ${cls(r)} fill:${c.fill},color:${c.color}`);
  }
  for (const u of units) {
    const r = result.get(u);
    if (r && RESULT_COLORS[r]) lines.push(`  class ${id(u)} ${cls(r)}`);
  }
  lines.push('```');
  return lines.join('\n');
}

// --- next steps --------------------------------------------------------------------------------

function render(parts: Part[], md: boolean): string {
  return parts
    .map((p) => {
      if (typeof p === 'string') return md ? inline(p) : p;
      if ('cli' in p) return md ? code(p.cli) : p.cli;
      const name = p.workflow;
      const inputs = p.inputs.map(([k, v]) => (md ? code(`${k}: ${v}`) : `${k}: ${v}`)).join(', ');
      const wfName = md ? `**${name}**` : name;
      return `the ${wfName} workflow${inputs ? ` with ${inputs}` : ''}`;
    })
    .join('');
}

function problemText(p: Problem, step: Part[] = []): string {
  const head = `**${p.severity} ${p.code}**${p.subject ? ` (${inline(p.subject)})` : ''}`;
  const fix = p.fix ? `<br>fix: ${inline(cut(p.fix, PROBLEM_MAX))}` : '';
  const next = step.length ? `<br>next: ${render(step, true)}` : '';
  return `${head}: ${inline(cut(p.message, PROBLEM_MAX))}${fix}${next}`;
}

/**
 * One annotation per failed, uncertain or awaiting-approval unit, with its next step; units a
 * problem of the report already names (same subject) are left to that problem's annotation.
 * Plain text: the caller masks it and passes it to core.error / core.warning.
 */
export function unitAnnotations(report: RunReport): { level: 'error' | 'warning'; title: string; message: string }[] {
  const named = new Set(report.problems.map((p) => p.subject).filter(Boolean));
  const titles: Record<string, [string, 'error' | 'warning']> = {
    failed: ['NYL-UNIT-FAILED', 'error'],
    uncertain: ['NYL-UNIT-UNCERTAIN', 'error'],
    'awaiting-approval': ['NYL-UNIT-AWAITING-APPROVAL', 'warning'],
  };
  return report.rows
    .filter((r) => titles[r.result] && !named.has(r.unit))
    .map((r) => {
      const [code, level] = titles[r.result] as [string, 'error' | 'warning'];
      const step = render(unitStep(r, report, []), false);
      const detail = r.detail ? `: ${cut(r.detail, PROBLEM_MAX)}` : '';
      return {
        level,
        title: `${code} (${r.unit})`,
        message: `${r.unit} ${words(r.result)}${detail}${step ? `\nnext: ${step}` : ''}`,
      };
    });
}

/** A link GitHub renders, only to http(s). */
function link(text: string, url: string): string {
  try {
    const u = new URL(url);
    if (u.protocol !== 'https:' && u.protocol !== 'http:') return inline(text);
    return `[${inline(text)}](${u.href.replace(/[()<> ]/g, (c) => encodeURIComponent(c))})`;
  } catch {
    return inline(text);
  }
}

/**
 * A fact's value: strings as they are, anything else as canonical JSON; in a code span, unless it
 * holds `<` or a backtick: then made inert as text (a code span would show an entity as typed).
 */
function factValue(v: unknown): string {
  const text = typeof v === 'string' ? v : canonicalJson(v ?? null);
  return /[<`]/.test(text) ? inline(text) : code(text);
}

/** The "Needs a person" section: units with their next step, then the problems that end the run. */
function attention(report: RunReport, ctx: SummaryContext): { needs: string; notes: string } {
  const n = needsAPerson(report);
  const lines: string[] = [];
  if (ctx.driftIssue && n.waiting.some((w) => w.row.result === 'drifted'))
    lines.push(`Drift is tracked in ${link(`issue #${ctx.driftIssue.number}`, ctx.driftIssue.url)}.`, '');
  for (const w of n.waiting.slice(0, LIST_MAX)) lines.push(waitingLine(w.row, w.problems, w.step));
  if (n.waiting.length > LIST_MAX)
    lines.push(`- … and ${n.waiting.length - LIST_MAX} more units that need a person: see the table`);
  if (n.approveTogether) lines.push(`- to approve them together, run ${render(n.approveTogether, true)}`);
  if (n.blocked.length) lines.push(blockedLine(n.blocked));
  const told = (t: Told) => `- ${problemText(t.problem, t.step)}`;
  lines.push(...n.errors.slice(0, LIST_MAX).map(told));
  if (n.errors.length > LIST_MAX) lines.push(`- … and ${n.errors.length - LIST_MAX} more errors`);
  const notes = n.warnings.slice(0, LIST_MAX).map(told);
  if (n.warnings.length > LIST_MAX) notes.push(`- … and ${n.warnings.length - LIST_MAX} more warnings`);
  return {
    needs: lines.length ? ['### Needs a person', '', ...lines].join('\n') : '',
    notes: notes.length ? ['### Notes', '', ...notes].join('\n') : '',
  };
}

/** A unit that waits on a person: what it is, the problems about it (a few), its next step. */
function waitingLine(row: UnitRow, mine: Problem[], step: Part[]): string {
  const detail = row.detail ? `: ${inline(cut(row.detail, DETAIL_MAX))}` : '';
  const notes = mine.slice(0, PER_UNIT_MAX).map((p) => `<br>${problemText(p)}`);
  if (mine.length > PER_UNIT_MAX) notes.push(`<br>… and ${mine.length - PER_UNIT_MAX} more problems about it`);
  const next = step.length ? `<br>next: ${render(step, true)}` : '';
  return `- **${inline(row.unit)}** (${inline(row.kind)}) ${words(row.result)}${detail}${notes.join('')}${next}`;
}

function blockedLine(blocked: UnitRow[]): string {
  const one = (r: UnitRow) => `**${inline(r.unit)}**${r.detail ? ` (${inline(cut(r.detail, 100))})` : ''}`;
  const more = blocked.length > LIST_MAX ? ` and ${blocked.length - LIST_MAX} more` : '';
  return blocked.length === 1
    ? `- ${one(blocked[0] as UnitRow)} is blocked: it runs once what it needs is resolved`
    : `- blocked, they run once what they need is resolved: ${blocked.slice(0, LIST_MAX).map(one).join(', ')}${more}`;
}

function factsOf(report: RunReport, ctx: SummaryContext): string {
  const exitWord = ['done', 'failed', 'refused', 'drift', 'uncertain'][report.exit] ?? 'failed';
  const list: [string, unknown][] = [
    ['run', report.run],
    ['source', report.source],
    ['desired', report.desired],
    ['observed', report.observed],
    ['url', report.url ? undefined : report.urlMissing ? `none (${report.urlMissing})` : undefined],
    ...(report.extra ?? []),
  ];
  return [
    '### Run',
    '',
    ...list
      .filter(([, v]) => v !== undefined && v !== '' && v !== null)
      .map(([k, v]) => `- **${inline(k)}**: ${factValue(v)}`),
    ...(report.url ? [`- **url**: ${link(report.url, report.url)}`] : []),
    `- **exit code**: ${code(String(report.exit))} (${exitWord})`,
    ...(report.run
      ? [
          `- **its record and logs**: ${code(`nyl runs show -e ${report.environment} ${report.run}`)}, ${code(`nyl runs logs -e ${report.environment} ${report.run}`)}`,
        ]
      : []),
    ...(ctx.driftIssue ? [`- **drift issue**: ${link(`#${ctx.driftIssue.number}`, ctx.driftIssue.url)}`] : []),
    ...(ctx.deployment
      ? [
          `- **deployment**: ${code(String(ctx.deployment.id))} in ${code(ctx.deployment.environment)}, ${code(ctx.deployment.state)}`,
        ]
      : []),
    ...(ctx.runUrl ? [`- **workflow run**: ${ctx.runUrl}`] : []),
  ].join('\n');
}

/**
 * The job summary of a run: a heading that says the outcome in words with counts; the units that
 * need a person, each with its next step; notes; the table (collapsed when long); the facts; the
 * wave graph. Cut to the budget: the table loses rows first (saying how many), then the graph.
 */
export function jobSummary(report: RunReport, ctx: SummaryContext = {}, budget = SUMMARY_BUDGET): string {
  const heading = `## nyl ${inline(report.operation)} ${inline(report.environment)}: ${inline(outcomeWords(report))}`;
  const { needs, notes } = attention(report, ctx);
  const facts = factsOf(report, ctx);
  const wanted = ctx.graph ? mermaid(report, ctx.graph) : '';
  const header = report.header ?? ['Unit', 'Kind', 'Result', 'Detail'];
  const collapsed = report.rows.length > TABLE_OPEN_MAX;
  const tableHead = [
    `### Units (${report.rows.length})`,
    '',
    ...(collapsed ? [`<details><summary>All ${report.rows.length} units</summary>`, ''] : []),
    `| ${header.map((h) => inline(h[0] + h.slice(1).toLowerCase())).join(' | ')} |`,
    `| ${header.map(() => '---').join(' | ')} |`,
  ].join('\n');
  const tableTail = collapsed ? '\n\n</details>' : '';
  const graphLeftOut = '_The wave graph is left out: the summary is kept under 1 MiB._';
  const tooBig =
    ctx.graph && !wanted && ctx.graph.waves.flat().length ? '_The wave graph is left out above 300 units._' : '';
  // At most a quarter of the budget: the rows and the facts come first.
  const changes = fittedChangesMd(
    report.rows,
    (lines) => Buffer.byteLength(lines.join('\n')) < budget / 4,
    '_The resource changes are left out: the summary is kept under 1 MiB._',
  )
    .join('\n')
    .trim();
  const sections = (table: string, graph: string) =>
    `${[heading, needs, notes, table, changes, facts, graph].filter(Boolean).join('\n\n')}\n`;
  // Everything but the rows and the graph, plus room for the cut row and the graph's note.
  const fixed = Buffer.byteLength(sections(tableHead + tableTail, graphLeftOut)) + 200;
  const rows: string[] = [];
  let used = fixed;
  let dropped = 0;
  if (report.rows.length) {
    for (const r of report.rows) {
      const line = `| ${[r.unit, r.kind, r.result, r.detail].map(cell).join(' | ')} |`;
      const n = Buffer.byteLength(line) + 1;
      if (used + n > budget) {
        dropped = report.rows.length - rows.length;
        break;
      }
      rows.push(line);
      used += n;
    }
  }
  if (dropped) rows.push(`| … | | | ${dropped} more units not shown: the summary is kept under 1 MiB |`);
  const table = report.rows.length ? [tableHead, ...rows].join('\n') + tableTail : '';
  const graph = wanted
    ? used + Buffer.byteLength(wanted) - Buffer.byteLength(graphLeftOut) < budget
      ? `### Waves\n\n${wanted}`
      : graphLeftOut
    : tooBig;
  return fitted(sections(table, graph), budget);
}

/** The last guard of the budget: whole lines up to it, then a line saying the rest was cut. */
function fitted(text: string, budget: number): string {
  if (Buffer.byteLength(text) <= budget) return text;
  const note = '\n\n_The rest of this summary is cut: it is kept under 1 MiB._\n';
  const room = budget - Buffer.byteLength(note);
  const lines = text.split('\n');
  const kept: string[] = [];
  let used = 0;
  for (const l of lines) {
    const n = Buffer.byteLength(l) + 1;
    if (used + n > room) break;
    kept.push(l);
    used += n;
  }
  return `${kept.join('\n')}${note}`;
}

/**
 * The job summary of an operation that is not a run (recover, lease-break, a refusal): the
 * outcome, what needs a person, the facts (non-strings as canonical JSON), the workflow run.
 */
export function opSummary(
  report: Pick<OpReport, 'operation' | 'environment' | 'outcome' | 'facts' | 'problems' | 'exit'>,
  ctx: Pick<SummaryContext, 'runUrl'> = {},
): string {
  const heading = `## nyl ${inline(report.operation)} ${inline(report.environment)}: ${inline(report.outcome)}`;
  const errors = report.problems.filter((p) => p.severity === 'error');
  const warnings = report.problems.filter((p) => p.severity !== 'error');
  const list = (ps: Problem[]) =>
    ps.slice(0, LIST_MAX).map((p) => `- ${problemText(p, problemStep(p, report, false))}`);
  const facts = [
    ...report.facts
      .filter(([, v]) => v !== undefined && v !== '')
      .map(([k, v]) => `- **${inline(k)}**: ${factValue(v)}`),
    ...(ctx.runUrl ? [`- **workflow run**: ${ctx.runUrl}`] : []),
  ];
  const text = `${[
    heading,
    errors.length ? ['### Needs a person', '', ...list(errors)].join('\n') : '',
    warnings.length ? ['### Notes', '', ...list(warnings)].join('\n') : '',
    facts.length ? ['### Facts', '', ...facts].join('\n') : '',
  ]
    .filter(Boolean)
    .join('\n\n')}\n`;
  return fitted(text, SUMMARY_BUDGET);
}
