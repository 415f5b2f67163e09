import {
  rowState,
  type SiteAttention,
  type SiteData,
  type SiteEnvironment,
  type SiteRun,
} from '../core/ops/site/gather.js';
import {
  commit,
  countsText,
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
import { unitPage } from './unit-pages.js';

/** index.html: first what needs a person, then every environment in promotion order. */

export const envHref = (env: string) => `env/${seg(env)}/index.html`;

function attentionRow(a: SiteAttention, data: SiteData): string[] {
  const env = data.environments.find((e) => e.name === a.environment);
  const what = a.unit
    ? link(
        `env/${seg(a.environment)}/${env ? unitPage(env, a.unit) : 'index.html'}#${unitId(a.unit)}`,
        `unit ${a.unit}`,
      )
    : a.run && env?.runs.some((r) => r.line.run === a.run)
      ? link(`env/${seg(a.environment)}/run/${seg(a.run)}.html`, `run ${a.run}`)
      : t(a.run ? `run ${a.run}` : '');
  return [state(a.state), link(envHref(a.environment), a.environment), what, t(a.detail)];
}

/** Rows of "Needs a person" on the overview at most; the rest are counted, and each environment's page has its own. */
export const ATTENTION_SHOWN = 200;

function needsAPerson(data: SiteData): string {
  const all = data.attention;
  const shown = all.slice(0, ATTENTION_SHOWN);
  const more = all.length - shown.length;
  const body = all.length
    ? table(
        `${all.length} thing${all.length === 1 ? '' : 's'} wait on a person${more ? ` (the first ${shown.length} here)` : ''}`,
        ['State', 'Environment', 'What', 'Detail'],
        shown.map((a) => attentionRow(a, data)),
      )
    : '<p>Nothing waits on a person.</p>';
  const rest = more ? `\n<p>${more} more: ${moreByEnvironment(all.slice(ATTENTION_SHOWN))}.</p>` : '';
  const cls = all.length ? 'needs' : 'calm';
  return `<section id="needs" class="${cls}" aria-labelledby="needs-h"><h2 id="needs-h">Needs a person</h2>\n${body}${rest}\n</section>`;
}

/** The rows not shown, counted by environment, each linked to its page. */
function moreByEnvironment(rest: SiteAttention[]): string {
  const counts = new Map<string, number>();
  for (const a of rest) counts.set(a.environment, (counts.get(a.environment) ?? 0) + 1);
  return [...counts].map(([env, n]) => `${n} in ${link(envHref(env), env)}`).join(', ');
}

/** The run that last reconciled the environment (it landed what the environment has applied). */
export function lastReconcile(e: SiteEnvironment): SiteRun | undefined {
  return e.runs.find((r) => r.line.operation === 'reconcile' && ['succeeded', 'failed'].includes(r.line.state));
}

/** The lease in words: free, or held by which run (and its GitHub job), until when. */
export function leaseText(e: SiteEnvironment, runHref: (run: string) => string): string {
  const l = e.status.lease;
  if (!l || l.state === 'released') return 'free';
  const run = e.runs.find((r) => r.line.run === l.run);
  const which = run ? runLink(runHref(l.run), l.run, 'run ') : t(`run ${l.run}`);
  const job = run?.line.job ? ` (${outLink(run.line.job, 'GitHub job')})` : '';
  return `${t(l.state)} by ${which}${job}: ${t(l.holder)}${l.state === 'held' ? `, until ${time(l.deadline)}` : ''}`;
}

/** Where the environment's promotion gate stands: ready, or what the environments before it miss. */
export function gateText(e: SiteEnvironment): string {
  const p = e.status.promotion;
  if (!p?.length) return '';
  return p
    .map((g) =>
      g.ready
        ? `${t(g.environment)}: ready`
        : `${t(g.environment)}: <strong>waiting</strong> (${t(g.missing.join('; '))})`,
    )
    .join('<br>');
}

export function stateCounts(e: SiteEnvironment): Record<string, number> {
  const c: Record<string, number> = {};
  for (const r of e.status.rows) c[rowState(r)] = (c[rowState(r)] ?? 0) + 1;
  return c;
}

function environmentSection(e: SiteEnvironment, data: SiteData): string {
  const last = lastReconcile(e);
  const runHref = (run: string) => `env/${seg(e.name)}/run/${seg(run)}.html`;
  const applied = last
    ? `${source(last.line, data.repoUrl)} by ${runLink(runHref(last.line.run), last.line.run, 'run ')} (${t(last.line.state)}), ${time(last.line.finishedAt ?? last.line.startedAt)}, ${t(last.line.who)}`
    : 'nothing yet';
  const id = `env-${seg(e.name)}`;
  return `<section class="env" aria-labelledby="${id}"><h2 id="${id}">${link(envHref(e.name), `Environment ${e.name}`)}</h2>
${facts([
  ['production', e.production ? 'yes' : ''],
  ['after', t(e.after.join(', '))],
  ['group', t(e.group ?? '')],
  ['last reconcile', applied],
  ['source now', commit(e.status.source, data.repoUrl)],
  ['promotion gate', gateText(e)],
  ['lease', leaseText(e, runHref)],
  ['units', t(countsText(stateCounts(e)) || 'none')],
  ['url', e.status.url ? outLink(e.status.url, e.status.url) : ''],
])}
</section>`;
}

export function overviewPage(data: SiteData): string {
  const body = [
    '<h1>Environments</h1>',
    needsAPerson(data),
    ...data.environments.map((e) => environmentSection(e, data)),
  ].join('\n');
  return page({ title: 'Environments', root: '', crumbs: [], body, generatedAt: data.generatedAt });
}
