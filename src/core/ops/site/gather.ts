import { Exit, NylError, problem } from '../../util/errors.js';
import { listRuns, type RunEntry, runLogs, showRun } from '../runs/runs.js';
import { listEnvironments } from '../status/environments.js';
import { status } from '../status/status.js';
import type { OpReport, StatusReport, StatusRow } from '../workspace/report.js';
import type { OpContext } from '../workspace/workspace.js';
import { stateShow } from '../writes/state.js';

/** What `nyl site` is asked for: which environments, and what to leave out. */
export interface SiteOptions {
  environment?: string;
  group?: string;
  logs: boolean;
  outputs: boolean;
}

/** A run as `nyl runs` lists it (without its record and file ids). */
export type SiteRunLine = Omit<RunEntry, 'record' | 'files'>;

/** One unit's result in a run, as `nyl runs show` gives it. */
export interface SiteRunUnit {
  unit: string;
  result: string;
  kind?: string;
  durationMs?: number;
  exitCode?: number;
  reason?: string;
  changes?: unknown;
}

/** A unit's kept log (or the last heartbeat's tail of a killed unit), masked by `runs logs`. */
export interface SiteLog {
  unit: string;
  result?: string;
  kind: 'log' | 'tail';
  text: string;
}

/** One run: its line, its record's facts (`runs show`), its units and logs. */
export interface SiteRun {
  line: SiteRunLine;
  facts: Record<string, unknown>;
  states: { state: string; at: string; wave?: number; units?: string[] }[];
  units: SiteRunUnit[];
  logs?: SiteLog[];
}

export interface SiteEnvironment {
  name: string;
  group?: string;
  after: string[];
  production: boolean;
  status: StatusReport;
  /** Each unit's recorded (non-sensitive) outputs; absent with `--no-outputs`. */
  outputs?: { unit: string; outputs: Record<string, string> }[];
  /** Newest first. */
  runs: SiteRun[];
}

/** Something that waits on a person: a unit's state, or a dead run not imported yet. */
export interface SiteAttention {
  environment: string;
  state: string;
  unit?: string;
  run?: string;
  detail: string;
}

export interface SiteData {
  generatedAt: string;
  environments: SiteEnvironment[];
  attention: SiteAttention[];
  /** `https://github.com/owner/repo`, when a run's GitHub job says it. */
  repoUrl?: string;
}

/** History read for a site: as deep as this (bounded so a fetch's depth stays sane). */
export const SITE_RUNS_MAX = 10_000;

/** The states that wait on a person, in the order "Needs a person" lists them. */
export const ATTENTION_ORDER = ['failed', 'uncertain', 'awaiting-approval', 'drifted', 'held', 'unimported'];

type Promotion = { name: string; group?: string; after: string[]; production: boolean };

/** The environments asked for, in promotion order; an unknown one is refused as `status` refuses it. */
async function environmentsAsked(ctx: OpContext, opts: SiteOptions): Promise<Promotion[]> {
  const listed = await listEnvironments(ctx);
  const all = factOf<Promotion[]>(listed, 'promotion');
  if (opts.group !== undefined) {
    const members = all.filter((e) => e.group === opts.group);
    if (!members.length)
      throw new NylError(
        problem('NYL-GROUP-UNKNOWN', `environment group ${opts.group} has no environments`, {
          subject: opts.group,
          exit: Exit.failed,
          fix: `set \`group: ${opts.group}\` on the environments it should hold, or pass -e ENV`,
        }),
      );
    return members;
  }
  if (opts.environment === undefined) return all;
  const one = all.find((e) => e.name === opts.environment);
  return [one ?? { name: opts.environment, after: [], production: false }];
}

function factOf<T>(r: OpReport, key: string): T {
  return r.facts.find(([k]) => k === key)?.[1] as T;
}

/** `nyl site`'s data: every environment asked, its status, outputs and runs; what needs a person. */
export async function gatherSite(ctx: OpContext, opts: SiteOptions): Promise<SiteData> {
  const environments: SiteEnvironment[] = [];
  for (const e of await environmentsAsked(ctx, opts)) environments.push(await gatherEnvironment(ctx, e, opts));
  return {
    generatedAt: new Date(ctx.now()).toISOString(),
    environments,
    attention: environments.flatMap(attentionOf).sort(byAttention),
    ...repoOf(environments),
  };
}

async function gatherEnvironment(ctx: OpContext, e: Promotion, opts: SiteOptions): Promise<SiteEnvironment> {
  const st = await status(ctx, { environment: e.name });
  const listed = await listRuns(ctx, { environment: e.name, limit: SITE_RUNS_MAX });
  const runs: SiteRun[] = [];
  for (const line of factOf<SiteRunLine[]>(listed, 'runs')) runs.push(await gatherRun(ctx, e.name, line, opts));
  return {
    name: e.name,
    ...(e.group ? { group: e.group } : {}),
    after: e.after,
    production: e.production,
    status: st,
    ...(opts.outputs ? { outputs: await outputsOf(ctx, e.name, st.rows) } : {}),
    runs,
  };
}

async function gatherRun(ctx: OpContext, env: string, line: SiteRunLine, opts: SiteOptions): Promise<SiteRun> {
  const shown = await showRun(ctx, { environment: env, run: line.run });
  const facts = Object.fromEntries(shown.facts);
  const logs = opts.logs
    ? factOf<SiteLog[]>(await runLogs(ctx, { environment: env, run: line.run }), 'logs')
    : undefined;
  return {
    line,
    facts,
    states: (facts.states as SiteRun['states']) ?? [],
    units: (facts.units as SiteRunUnit[]) ?? [],
    ...(logs ? { logs } : {}),
  };
}

/** The outputs each unit's receipt recorded (sensitive ones never are), read through `state show`. */
async function outputsOf(ctx: OpContext, env: string, rows: StatusRow[]): Promise<SiteEnvironment['outputs']> {
  const shown = await stateShow(ctx, { environment: env });
  const units = factOf<Record<string, { observed?: { receipt?: { outputs?: Record<string, string> } } }>>(
    shown,
    'units',
  );
  const order = rows.map((r) => r.unit);
  return Object.entries(units ?? {})
    .map(([unit, d]) => ({ unit, outputs: d.observed?.receipt?.outputs ?? {} }))
    .filter((o) => Object.keys(o.outputs).length)
    .sort((a, b) => order.indexOf(a.unit) - order.indexOf(b.unit));
}

/** What waits on a person in one environment: units by their state, and dead runs not imported yet. */
function attentionOf(e: SiteEnvironment): SiteAttention[] {
  const out: SiteAttention[] = [];
  for (const r of e.status.rows) {
    const state = r.state === 'pending' && r.detail.startsWith('awaiting approval') ? 'awaiting-approval' : r.state;
    if (ATTENTION_ORDER.includes(state)) out.push({ environment: e.name, state, unit: r.unit, detail: r.detail });
  }
  for (const p of e.status.problems)
    if (p.code === 'NYL-RUN-UNIMPORTED')
      out.push({ environment: e.name, state: 'unimported', run: p.subject, detail: p.message });
  return out;
}

const byAttention = (a: SiteAttention, b: SiteAttention) =>
  ATTENTION_ORDER.indexOf(a.state) - ATTENTION_ORDER.indexOf(b.state);

/** The repository's page on GitHub, from a run's job URL (`…/owner/repo/actions/runs/…`). */
function repoOf(environments: SiteEnvironment[]): { repoUrl?: string } {
  for (const e of environments)
    for (const r of e.runs) {
      const m = r.line.job ? /^(https:\/\/[^/]+\/[^/]+\/[^/]+)\/actions\/runs\//.exec(r.line.job) : null;
      if (m) return { repoUrl: m[1] as string };
    }
  return {};
}
