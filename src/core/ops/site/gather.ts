import type { ObservedUnit } from '../../state/documents.js';
import { Exit, NylError, problem } from '../../util/errors.js';
import { type RunEntry, readRuns } from '../runs/runs.js';
import { logsOf, type RunLog, runFacts } from '../runs/show.js';
import { listEnvironments } from '../status/environments.js';
import { status } from '../status/status.js';
import type { OpReport, StatusReport, StatusRow } from '../workspace/report.js';
import type { OpContext } from '../workspace/workspace.js';
import { loadEnvironment } from '../workspace/workspace.js';

/** What `nyl site` is asked for: which environments, and what to leave out. */
export interface SiteOptions {
  environment?: string;
  group?: string;
  logs: boolean;
  outputs: boolean;
}

/** A run as `nyl runs` lists it (without its record and file ids), and the pull request its source merged. */
export type SiteRunLine = Omit<RunEntry, 'record' | 'files'> & { pr?: number };

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

/** A unit's kept log (or the last heartbeat's tail of a killed unit), masked as `runs logs` masks it. */
export type SiteLog = RunLog;

/** One run: its line, its record's facts (`runs show`), its units and logs. */
export interface SiteRun {
  line: SiteRunLine;
  facts: Record<string, unknown>;
  states: { state: string; at: string; wave?: number; units?: string[] }[];
  units: SiteRunUnit[];
  logs?: SiteLog[];
}

/** What the observed state says of a unit beside its status row, each in its own column. */
export interface SiteUnitFacets {
  unit: string;
  /** When its receipt was written. */
  receiptAt?: string;
  condition?: { state: string; reason: string; run: string; since: string };
  hold?: { by: string; reason: string; at: string };
  /** The last `nyl verify` observation of the receipt (in-sync, drifted, unknown). */
  verified?: { state: string; detail: string; at: string };
}

export interface SiteEnvironment {
  name: string;
  group?: string;
  after: string[];
  production: boolean;
  status: StatusReport;
  /** Per unit of the status rows, in their order: receipt time, condition, hold, last verify. */
  facets: SiteUnitFacets[];
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

/** The site's data as it is read: the environments one at a time (a big history never sits in memory whole). */
export interface SiteStream {
  generatedAt: string;
  /** `https://github.com/owner/repo` when the caller knows it (a workflow does); else the runs' jobs say it. */
  repoUrl?: string;
  /** In promotion order; each read when the one before it has been taken. */
  environments: AsyncGenerator<SiteEnvironment>;
}

/** `nyl site`'s data, streamed: the environments asked are checked first (an unknown one is refused before anything is read). */
export async function streamSite(ctx: OpContext, opts: SiteOptions): Promise<SiteStream> {
  const asked = await environmentsAsked(ctx, opts);
  const prs = new Map<string, number | undefined>();
  async function* environments() {
    for (const e of asked) yield await gatherEnvironment(ctx, e, opts, prs);
  }
  return { generatedAt: new Date(ctx.now()).toISOString(), environments: environments() };
}

/** `nyl site`'s data whole: every environment asked, its status, outputs and runs; what needs a person. */
export async function gatherSite(ctx: OpContext, opts: SiteOptions): Promise<SiteData> {
  const stream = await streamSite(ctx, opts);
  const environments: SiteEnvironment[] = [];
  for await (const e of stream.environments) environments.push(e);
  return {
    generatedAt: stream.generatedAt,
    environments,
    attention: environments.flatMap(attentionOf).sort(byAttention),
    ...repoOf(environments),
  };
}

async function gatherEnvironment(
  ctx: OpContext,
  e: Promotion,
  opts: SiteOptions,
  /** Source commits' pull requests, shared by the environments (a commit promoted through five is read once). */
  prs: Map<string, number | undefined>,
): Promise<SiteEnvironment> {
  // Read once: status and the runs see the same refs (a deploy landing meanwhile shows in neither).
  const loaded = await loadEnvironment(ctx, e.name, () => true);
  const { state } = loaded;
  const st = await status(ctx, { environment: e.name, loaded });
  // One walk of the history for every run (not one per run, as `runs show` would take).
  const { entries, problems } = await readRuns(ctx, e.name, { limit: SITE_RUNS_MAX }, state);
  const runs: SiteRun[] = [];
  for (const entry of entries)
    runs.push(await gatherRun(ctx, entry, opts, await pullRequestOf(ctx, entry.source, prs)));
  const observed = st.rows.map((r) => state.observed.get(r.unit));
  return {
    name: e.name,
    ...(e.group ? { group: e.group } : {}),
    after: e.after,
    production: e.production,
    status: { ...st, problems: [...st.problems, ...problems] },
    facets: st.rows.map((r, i) => facetsOf(r.unit, observed[i])),
    ...(opts.outputs ? { outputs: outputsOf(st.rows, observed) } : {}),
    runs,
  };
}

function facetsOf(unit: string, o: ObservedUnit | undefined): SiteUnitFacets {
  const c = o?.condition;
  const d = o?.drift;
  return {
    unit,
    ...(o?.receipt?.at ? { receiptAt: o.receipt.at } : {}),
    ...(c ? { condition: { state: c.state, reason: c.reason, run: c.run, since: c.since } } : {}),
    ...(o?.hold ? { hold: { ...o.hold } } : {}),
    ...(d ? { verified: { state: d.state, detail: d.detail, at: d.at } } : {}),
  };
}

async function gatherRun(ctx: OpContext, entry: RunEntry, opts: SiteOptions, pr?: number): Promise<SiteRun> {
  const facts = Object.fromEntries(runFacts(entry));
  const { record: _r, files: _f, ...line } = entry;
  return {
    line: pr === undefined ? line : { ...line, pr },
    facts,
    states: (facts.states as SiteRun['states']) ?? [],
    units: (facts.units as SiteRunUnit[]) ?? [],
    ...(opts.logs ? { logs: await logsOf(ctx, entry) } : {}),
  };
}

/**
 * The pull request a source commit merged, as GitHub words its merge commits (`Merge pull request
 * #12 from …`) and squash merges (`Title (#12)`); each commit read once, none when this clone
 * lacks it.
 */
async function pullRequestOf(ctx: OpContext, sha: string, seen: Map<string, number | undefined>) {
  if (!seen.has(sha)) {
    const subject = sha ? ((await ctx.repo.readCommit(sha))?.message.split('\n')[0] ?? '') : '';
    const m = /^Merge pull request #(\d+) /.exec(subject) ?? /\(#(\d+)\)$/.exec(subject);
    seen.set(sha, m ? Number(m[1]) : undefined);
  }
  return seen.get(sha);
}

/** The outputs each unit's receipt recorded (sensitive ones never are), in the rows' order. */
function outputsOf(rows: StatusRow[], observed: (ObservedUnit | undefined)[]): SiteEnvironment['outputs'] {
  return rows
    .map((r, i) => ({ unit: r.unit, outputs: observed[i]?.receipt?.outputs ?? {} }))
    .filter((o) => Object.keys(o.outputs).length);
}

/** A status row's state as the site names it: a pending unit awaiting approval is `awaiting-approval`. */
export const rowState = (r: StatusRow) =>
  r.state === 'pending' && r.detail.startsWith('awaiting approval') ? 'awaiting-approval' : r.state;

/** What waits on a person in one environment: units by their state, and dead runs not imported yet. */
export function attentionOf(e: SiteEnvironment): SiteAttention[] {
  const out: SiteAttention[] = [];
  for (const r of e.status.rows) {
    const state = rowState(r);
    if (ATTENTION_ORDER.includes(state)) out.push({ environment: e.name, state, unit: r.unit, detail: r.detail });
  }
  for (const p of e.status.problems)
    if (p.code === 'NYL-RUN-UNIMPORTED')
      out.push({ environment: e.name, state: 'unimported', run: p.subject, detail: p.message });
  return out;
}

export const byAttention = (a: SiteAttention, b: SiteAttention) =>
  ATTENTION_ORDER.indexOf(a.state) - ATTENTION_ORDER.indexOf(b.state);

/** The repository's page on GitHub, from a run's job URL (`…/owner/repo/actions/runs/…`). */
export function repoOf(environments: SiteEnvironment[]): { repoUrl?: string } {
  for (const e of environments)
    for (const r of e.runs) {
      const m = r.line.job ? /^(https:\/\/[^/]+\/[^/]+\/[^/]+)\/actions\/runs\//.exec(r.line.job) : null;
      if (m) return { repoUrl: m[1] as string };
    }
  return {};
}
