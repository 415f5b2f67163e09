import {
  rowState,
  type SiteData,
  type SiteEnvironment,
  type SiteRun,
  type SiteUnitFacets,
} from '../core/ops/site/gather.js';
import type { StatusRow } from '../core/ops/workspace/report.js';
import { formatDuration } from '../core/util/duration.js';
import {
  commit,
  countsText,
  duration,
  facts,
  link,
  outLink,
  page,
  runLink,
  seg,
  source,
  state,
  t,
  table,
  time,
  unitId,
} from './html.js';
import { gateText, leaseText, stateCounts } from './overview.js';
import { UNITS_PER_PAGE, unitsPageName } from './unit-pages.js';

/** env/<name>/index.html (units, url, outputs, the newest runs) and runs-2.html… (older runs). */

export const RUNS_PER_PAGE = 50;

const runHref = (run: string) => `run/${seg(run)}.html`;
export const runsPageName = (n: number) => (n === 1 ? 'index.html' : `runs-${n}.html`);

/** How long before the site was built: `3 h ago`, with the time itself for a pointer or a reader. */
function age(iso: string | undefined, now: string): string {
  if (!iso) return '';
  const ms = Date.parse(now) - Date.parse(iso);
  if (Number.isNaN(ms)) return time(iso);
  const text = ms < 60_000 ? 'under a minute ago' : `${formatDuration(Math.round(ms / 60_000) * 60_000)} ago`;
  return `<time datetime="${t(iso)}" title="${t(iso)}">${t(text)}</time>`;
}

/** One unit's row: what status says, and each fact of its observed state in its own column. */
function unitRow(r: StatusRow, f: SiteUnitFacets | undefined, now: string, known: Set<string>) {
  const toRun = (run: string) => (run && known.has(run) ? runLink(runHref(run), run) : t(run));
  const verified = f?.verified;
  const drift = verified
    ? `${state(verified.state)} ${age(verified.at, now)}${verified.state === 'drifted' ? `: ${t(verified.detail)}` : ''}`
    : '';
  const drifted = r.drift?.resources ?? [];
  const listed = drifted.slice(0, DRIFT_SHOWN).map((x) => `${x.action} ${x.address}`);
  if (drifted.length > DRIFT_SHOWN) listed.push(`and ${drifted.length - DRIFT_SHOWN} more (nyl status lists them)`);
  const resources = listed.length ? `<br><span class="muted">${t(listed.join(', '))}</span>` : '';
  const c = f?.condition;
  const h = f?.hold;
  // The detail only where no column says it already.
  const said = [c?.reason, h ? `held by ${h.by}: ${h.reason}` : undefined, verified?.detail];
  return [
    t(r.unit),
    t(r.kind),
    state(rowState(r)),
    `${t(r.receipt)}${f?.receiptAt ? ` ${age(f.receiptAt, now)}` : ''}`,
    toRun(r.lastRun),
    drift + resources,
    c ? `${state(c.state)} in ${toRun(c.run)}: ${t(c.reason)}` : '',
    h ? `by ${t(h.by)} ${age(h.at, now)}: ${t(h.reason)}` : '',
    said.includes(r.detail) ? '' : t(r.detail),
  ];
}

function unitsTable(e: SiteEnvironment, now: string, n: number): string {
  const known = new Set(e.runs.map((r) => r.line.run));
  const facets = new Map(e.facets.map((f) => [f.unit, f]));
  const first = (n - 1) * UNITS_PER_PAGE;
  const shown = e.status.rows.slice(first, first + UNITS_PER_PAGE);
  const rows = shown.map((r) => unitRow(r, facets.get(r.unit), now, known));
  const all = e.status.rows.length;
  const part = all > UNITS_PER_PAGE ? ` (${first + 1}–${first + shown.length} here)` : '';
  return table(
    `${all} unit${all === 1 ? '' : 's'}: ${countsText(stateCounts(e))}${part}`,
    ['Unit', 'Kind', 'State', 'Receipt', 'Last run', 'Drift (last verify)', 'Condition', 'Hold', 'Detail'],
    rows,
    shown.map((r) => unitId(r.unit)),
  );
}

/**
 * What one environment page lists at most of what grows with the environment (besides its units,
 * one row each): drifted resources per unit, outputs, problems. The rest are counted, with the
 * command that lists them, so a page of 1,000 units stays under 1 MB.
 */
const DRIFT_SHOWN = 10;
const OUTPUTS_SHOWN = 500;
const PROBLEMS_SHOWN = 50;

/** "N more" with the command that shows them all, when a list was cut. */
const more = (n: number, command: string) => (n > 0 ? `\n<p>${n} more: \`${t(command)}\` shows them all.</p>` : '');

function outputsSection(e: SiteEnvironment): string {
  if (!e.outputs) return '';
  const rows = e.outputs.flatMap((o) =>
    Object.entries(o.outputs).map(([k, v]) => [t(o.unit), t(k), `<code>${t(v)}</code>`]),
  );
  const body = rows.length
    ? table(
        'Outputs the receipts recorded (sensitive outputs are never recorded)',
        ['Unit', 'Output', 'Value'],
        rows.slice(0, OUTPUTS_SHOWN),
      ) + more(rows.length - OUTPUTS_SHOWN, `nyl state show -e ${e.name}`)
    : '<p>No unit recorded outputs.</p>';
  return `<h2>Outputs</h2>\n${body}`;
}

function problemsSection(e: SiteEnvironment): string {
  const all = e.status.problems;
  if (!all.length) return '';
  const items = all
    .slice(0, PROBLEMS_SHOWN)
    .map(
      (p) =>
        `<li><strong>${t(p.severity)} ${t(p.code)}</strong>: ${t(p.message)}${p.fix ? `<br><span class="muted">fix: ${t(p.fix)}</span>` : ''}</li>`,
    );
  return `<h2>Problems</h2>\n<ul>${items.join('\n')}</ul>${more(all.length - PROBLEMS_SHOWN, `nyl status -e ${e.name}`)}`;
}

function runsTable(e: SiteEnvironment, runs: SiteRun[], repoUrl: string | undefined, first: number): string {
  const rows = runs.map((r) => [
    runLink(runHref(r.line.run), r.line.run),
    t(r.line.operation),
    state(r.line.state),
    time(r.line.startedAt),
    t(duration(r.line.durationMs)),
    r.line.job ? `${t(r.line.who)} (${outLink(r.line.job, 'GitHub job')})` : t(r.line.who),
    source(r.line, repoUrl),
    t(countsText(r.line.counts)),
    t(r.line.detail),
  ]);
  const last = first + runs.length;
  return table(
    `Runs ${runs.length ? `${first + 1}–${last}` : '0'} of ${e.runs.length}, newest first`,
    ['Run', 'Operation', 'State', 'Started', 'Duration', 'Who', 'Source', 'Results', 'Detail'],
    rows,
  );
}

function pagination(pages: number, current: number): string {
  if (pages <= 1) return '';
  const items = Array.from({ length: pages }, (_, i) =>
    i + 1 === current
      ? `<li aria-current="page">runs page ${i + 1}</li>`
      : `<li>${link(runsPageName(i + 1), `runs page ${i + 1}`)}</li>`,
  );
  return `<nav aria-label="Runs pages"><ul class="pages">${items.join('')}</ul></nav>`;
}

function header(e: SiteEnvironment, data: SiteData): string {
  return facts([
    ['url', e.status.url ? outLink(e.status.url, e.status.url) : t(e.status.urlMissing ?? '')],
    ['group', t(e.group ?? '')],
    ['after', t(e.after.join(', '))],
    ['source now', commit(e.status.source, data.repoUrl)],
    ['promotion gate', gateText(e)],
    ['lease', leaseText(e, runHref)],
  ]);
}

/** The environment's pages by file name: index.html, then runs-2.html … for older runs. */
function unitsNav(pages: number, current: number): string {
  if (pages <= 1) return '';
  const items = Array.from({ length: pages }, (_, i) =>
    i + 1 === current
      ? `<li aria-current="page">units page ${i + 1}</li>`
      : `<li>${link(unitsPageName(i + 1), `units page ${i + 1}`)}</li>`,
  );
  return `<nav aria-label="Units pages"><ul class="pages">${items.join('')}</ul></nav>`;
}

/** units-2.html…: the units past the first page's, each page with its own table. */
function unitsPages(e: SiteEnvironment, data: SiteData, out: Map<string, string>): void {
  const pages = Math.ceil(e.status.rows.length / UNITS_PER_PAGE);
  for (let n = 2; n <= pages; n++) {
    const title = `Environment ${e.name}, units page ${n}`;
    const body = [`<h1>${t(title)}</h1>`, unitsTable(e, data.generatedAt, n), unitsNav(pages, n)].join('\n');
    const crumbs: [string, string][] = [
      ['../../index.html', 'All environments'],
      ['index.html', `Environment ${e.name}`],
    ];
    out.set(unitsPageName(n), page({ title, root: '../../', crumbs, body, generatedAt: data.generatedAt }));
  }
}

/** The environment's pages by file name: index.html, then runs-2.html … for older runs, units-2.html … for more units. */
export function environmentPages(e: SiteEnvironment, data: SiteData): Map<string, string> {
  const pages = Math.max(1, Math.ceil(e.runs.length / RUNS_PER_PAGE));
  const unitPages = Math.ceil(e.status.rows.length / UNITS_PER_PAGE);
  const out = new Map<string, string>();
  for (let n = 1; n <= pages; n++) {
    const runs = e.runs.slice((n - 1) * RUNS_PER_PAGE, n * RUNS_PER_PAGE);
    const top =
      n === 1
        ? [
            header(e, data),
            '<h2>Units</h2>',
            unitsTable(e, data.generatedAt, 1),
            unitsNav(unitPages, 1),
            outputsSection(e),
            problemsSection(e),
          ]
        : [`<p>${link('index.html', `Units and newest runs of ${e.name}`)}</p>`];
    const body = [
      `<h1>Environment ${t(e.name)}${n > 1 ? `, runs page ${n}` : ''}</h1>`,
      ...top,
      '<h2>Runs</h2>',
      runsTable(e, runs, data.repoUrl, (n - 1) * RUNS_PER_PAGE),
      pagination(pages, n),
    ];
    const title = n === 1 ? `Environment ${e.name}` : `Environment ${e.name}, runs page ${n}`;
    const crumbs: [string, string][] = [['../../index.html', 'All environments']];
    if (n > 1) crumbs.push(['index.html', `Environment ${e.name}`]);
    out.set(
      runsPageName(n),
      page({ title, root: '../../', crumbs, body: body.join('\n'), generatedAt: data.generatedAt }),
    );
  }
  unitsPages(e, data, out);
  return out;
}
