import type { SiteData, SiteEnvironment, SiteLog, SiteRun, SiteRunUnit } from '../core/ops/site/gather.js';
import { duration, facts, link, outLink, page, source, state, t, table, time, unitId } from './html.js';
import { unitPage } from './unit-pages.js';

/** env/<name>/run/<run>.html: a run's record, the times of its states, its units, changes and logs. */

/** The logs of one run page stop here (its other facts are small): no page passes 1 MB. */
/** A run page's bytes at most: what its logs may take is what the rest of the page leaves of it. */
export const PAGE_BUDGET = 950_000;

/** Each environment's unit names, computed once for all its run pages. */
const namesOf = new WeakMap<SiteEnvironment, Set<string>>();
function unitNames(e: SiteEnvironment): Set<string> {
  const known = namesOf.get(e);
  if (known) return known;
  const names = new Set(e.status.rows.map((x) => x.unit));
  namesOf.set(e, names);
  return names;
}

function recordFacts(r: SiteRun, repoUrl: string | undefined): string {
  const f = r.facts;
  const ended = f.ended as { code: string; message: string } | undefined;
  const list = (v: unknown) => (Array.isArray(v) ? v.join(', ') : '');
  return facts([
    ['state', state(r.line.state)],
    ['operation', t(r.line.operation)],
    ['where', t(f.where)],
    ['detail', t(f.detail ?? '')],
    ['started', time(r.line.startedAt)],
    ['finished', time(r.line.finishedAt)],
    ['duration', t(duration(r.line.durationMs))],
    ['who', t(r.line.who)],
    ['GitHub job', r.line.job ? outLink(r.line.job, r.line.job) : ''],
    ['holder', t(f.holder ?? '')],
    ['source', source(r.line, repoUrl)],
    ['imported by', t(f.importedBy ?? '')],
    ['imported', t(list(f.imported))],
    ['ended', ended ? t(`${ended.code}: ${ended.message}`) : ''],
  ]);
}

function statesTable(r: SiteRun): string {
  if (!r.states.length) return '';
  const rows = r.states.map((s) => [
    state(s.state),
    time(s.at),
    t(s.wave !== undefined ? s.wave + 1 : ''),
    t((s.units ?? []).join(', ')),
  ]);
  return `<h2>States</h2>\n${table('Each state the run moved to, with its time', ['State', 'At', 'Wave', 'Units'], rows)}`;
}

function unitsTable(r: SiteRun, e: SiteEnvironment): string {
  if (!r.units.length) return '<h2>Units</h2>\n<p>The run recorded no unit results.</p>';
  const rows = r.units.map((u) => [
    // A unit that left the configuration and its recorded state has no row to link to.
    unitNames(e).has(u.unit) ? link(`../${unitPage(e, u.unit)}#${unitId(u.unit)}`, u.unit) : t(u.unit),
    t(u.kind ?? ''),
    state(u.result),
    t(duration(u.durationMs)),
    t(u.exitCode ?? ''),
    t(u.reason ?? ''),
  ]);
  const caption = `${r.units.length} unit${r.units.length === 1 ? '' : 's'} (unit names link to their row in ${e.name})`;
  return `<h2>Units</h2>\n${table(caption, ['Unit', 'Kind', 'Result', 'Duration', 'Exit code', 'Detail'], rows)}`;
}

type Changes = { resources?: [string, string][] };

/** Resource changes a run page lists at most; the rest are counted (`nyl runs show` has them all). */
const CHANGES_SHOWN = 2_000;

function changesSection(units: SiteRunUnit[], env: string, run: string): string {
  const withChanges = units.filter((u) => (u.changes as Changes | undefined)?.resources?.length);
  if (!withChanges.length) return '';
  const rows = withChanges.flatMap((u) =>
    ((u.changes as Changes).resources ?? []).map(([address, action]) => [
      t(u.unit),
      `<code>${t(address)}</code>`,
      t(action),
    ]),
  );
  const left = rows.length - CHANGES_SHOWN;
  const rest = left > 0 ? `\n<p>${left} more: \`nyl runs show -e ${t(env)} ${t(run)}\` lists them all.</p>` : '';
  return `<h2>Resource changes</h2>\n${table('Resources the run changed (addresses and actions, no values)', ['Unit', 'Address', 'Action'], rows.slice(0, CHANGES_SHOWN))}${rest}`;
}

function logsSection(logs: SiteLog[] | undefined, env: string, run: string, budget: number): string {
  if (!logs) return '';
  if (!logs.length) return '<h2>Logs</h2>\n<p>The run kept no log.</p>';
  const what = (l: SiteLog) =>
    `${l.unit}${l.result ? ` (${l.result})` : ''}: ${l.kind === 'tail' ? 'last output seen' : 'log'}`;
  const leftOut = logs.map(
    (l) =>
      `<p>${t(what(l))}: left out to keep the page under 1 MB; \`nyl runs logs -e ${t(env)} ${t(run)} --unit ${t(l.unit)}\` prints it.</p>`,
  );
  // Each log may end up as its left-out line: those are reserved first.
  let left = budget - leftOut.reduce((n, p) => n + Buffer.byteLength(p) + 1, 0);
  const parts = logs.map((l, i) => {
    const html = `<details class="log"><summary>${t(what(l))}</summary><pre>${t(l.text)}</pre></details>`;
    const grows = Buffer.byteLength(html) - Buffer.byteLength(leftOut[i] as string);
    if (grows > left) return leftOut[i] as string;
    left -= grows;
    return html;
  });
  return `<h2>Logs</h2>\n${parts.join('\n')}`;
}

export function runPage(e: SiteEnvironment, r: SiteRun, data: SiteData): string {
  const rest = [
    `<h1>Run ${t(r.line.run)}</h1>`,
    recordFacts(r, data.repoUrl),
    statesTable(r),
    unitsTable(r, e),
    changesSection(r.units, e.name, r.line.run),
  ].join('\n');
  // The page's frame takes a few kB; logs get what the rest leaves.
  const budget = PAGE_BUDGET - 10_000 - Buffer.byteLength(rest);
  return page({
    title: `Run ${r.line.run} of ${e.name}`,
    root: '../../../',
    crumbs: [
      ['../../../index.html', 'All environments'],
      ['../index.html', `Environment ${e.name}`],
    ],
    body: `${rest}\n${logsSection(r.logs, e.name, r.line.run, budget)}`,
    generatedAt: data.generatedAt,
  });
}
