import type { GithubJob, Holder, RunRecord } from '../../state/documents.js';
import { FILES } from '../../state/documents.js';
import { countResults } from '../../state/history.js';
import { type HistoryItem, readEndedRecord, walkHistory } from '../../state/history-read.js';
import { githubUrl, type LeaseVerdict, leaseVerdict } from '../../state/lease.js';
import type { EnvState, RunRefState } from '../../state/read.js';
import { formatDuration } from '../../util/duration.js';
import { Exit, type Problem, problem } from '../../util/errors.js';
import type { OpReport } from '../workspace/report.js';
import { loadEnvironment, type OpContext } from '../workspace/workspace.js';

/**
 * `nyl runs`: the environment's runs, newest first — live and dead run refs, evidence refs, runs
 * ended without the lease (superseded, refused), and the history ref's ended runs — read from git
 * alone (DESIGN §8, seed 003: no hidden runtime state). Listing reads the tips, then only as much
 * history as `--limit`/`--since` need.
 */

/** Where a run's record was found, which says how alive it is. */
export type RunPlace = 'live' | 'dead' | 'evidence' | 'ended' | 'history';

export interface RunEntry {
  run: string;
  operation: string;
  state: string;
  place: RunPlace;
  startedAt: string;
  finishedAt?: string;
  durationMs?: number;
  who: string;
  job?: string;
  source: string;
  counts: Record<string, number>;
  /** Phase and heartbeat of a live or dead run; why an ended one ended; who imported it. */
  detail: string;
  record: RunRecord;
  /** Log files of its units (blob ids by path), as its ref or history commit holds them. */
  files: Map<string, string>;
}

export const DEFAULT_RUNS_LIMIT = 20;

function whoOf(h: Holder): { who: string; job?: string } {
  const g: GithubJob | undefined = h.github;
  return { who: h.actor ?? h.id, ...(g ? { job: githubUrl(g) } : h.workflowRun ? { job: h.workflowRun } : {}) };
}

function entryOf(record: RunRecord, place: RunPlace, files: Map<string, string>, detail: string, now: number) {
  const end = record.finishedAt ? Date.parse(record.finishedAt) : place === 'live' ? now : undefined;
  const started = Date.parse(record.startedAt);
  return {
    run: record.run,
    operation: record.operation,
    state: record.state,
    place,
    startedAt: record.startedAt,
    ...(record.finishedAt ? { finishedAt: record.finishedAt } : {}),
    ...(end !== undefined && !Number.isNaN(started) ? { durationMs: Math.max(0, end - started) } : {}),
    ...whoOf(record.holder),
    source: record.source,
    counts: countResults(record.results ?? {}),
    detail,
    record,
    files,
  } satisfies RunEntry;
}

function ago(ms: number): string {
  return `${formatDuration(Math.max(0, Math.round(ms / 1000) * 1000))} ago`;
}

/** What a run ref's record says of where it got to. */
function phaseText(r: RunRecord): string {
  if (r.phase === 'wave' && r.wave !== undefined)
    return `wave ${r.wave + 1}${r.executing.length ? `: ${r.executing.join(', ')}` : ''}`;
  return r.phase;
}

/** Why a run that had not finished holds the environment no more: its lease was broken or taken, or its deadline passed. */
function lostBecause(held: LeaseVerdict, r: RunRecord): string {
  if (held.kind === 'broken' && held.run === r.run) return 'its lease was broken';
  if (held.kind === 'held' || held.kind === 'free') return 'another run has the lease since';
  return `its deadline ${r.deadline} passed`;
}

function refEntry(state: EnvState, ref: RunRefState, place: 'run' | 'evidence', now: number): RunEntry {
  const r = ref.record;
  const files = new Map<string, string>();
  for (const [u, oid] of ref.logs) files.set(FILES.runLog(u), oid);
  for (const [u, oid] of ref.tails) files.set(FILES.runTail(u), oid);
  const checkpointed = Object.fromEntries(
    [...ref.checkpoints].map(([u, c]) => [u, { result: c.result, kind: c.kind, durationMs: c.durationMs }]),
  );
  const withResults = { ...r, results: r.results ?? checkpointed };
  if (place === 'evidence') return entryOf(withResults, 'evidence', files, 'evidence: kept for an uncertain unit', now);
  const held = leaseVerdict(state, now);
  const beat = Date.parse(r.updatedAt);
  const heartbeat = Number.isNaN(beat) ? '' : `; heartbeat ${ago(now - beat)}`;
  if (held.kind === 'held' && held.run === r.run && r.phase !== 'finished')
    return entryOf(withResults, 'live', files, `live, ${phaseText(r)}${heartbeat}`, now);
  const why = r.phase === 'finished' ? `ended ${r.state}` : `stopped at ${phaseText(r)}; ${lostBecause(held, r)}`;
  return entryOf(withResults, 'dead', files, `dead, not imported yet (${why})${heartbeat}`, now);
}

export function historyEntry(item: HistoryItem, now: number): RunEntry {
  const r = item.record;
  const detail = r.ended
    ? `${r.ended.code}`
    : r.importedBy
      ? `imported by ${r.importedBy}`
      : r.imported?.length
        ? `imported ${r.imported.join(', ')}`
        : '';
  return entryOf(r, 'history', item.files, detail, now);
}

/** The runs found at the tips: live and dead run refs, evidence refs, ended refs. */
export async function tipRuns(ctx: OpContext, state: EnvState): Promise<RunEntry[]> {
  const now = ctx.now();
  const out: RunEntry[] = [];
  for (const r of state.runs.values()) out.push(refEntry(state, r, 'run', now));
  for (const r of state.evidence.values()) out.push(refEntry(state, r, 'evidence', now));
  const ended = await Promise.all(
    [...state.tips.ended].map(async ([, tip]) => ({ record: await readEndedRecord(ctx.repo, tip), tip })),
  );
  for (const e of ended) if (e.record) out.push(entryOf(e.record, 'ended', new Map(), e.record.ended?.code ?? '', now));
  return out;
}

export async function loadRuns(ctx: OpContext, environment: string) {
  // Listing must work when some state cannot be read: that is when an operator looks.
  const { state } = await loadEnvironment(ctx, environment, () => true);
  return state;
}

const newestFirst = (a: RunEntry, b: RunEntry) => (a.run < b.run ? 1 : a.run > b.run ? -1 : 0);

/** The runs `nyl runs` lists and the problems met reading them (history commits that cannot be read). */
export interface RunsRead {
  entries: RunEntry[];
  problems: Problem[];
}

/**
 * The environment's runs, newest first, with their records and files: the tips, then history as
 * deep as `limit`/`since` need, each history commit read once. A retired run (imported into
 * history, its evidence kept) is one entry: its history, with the evidence's logs it lacks.
 */
export async function readRuns(
  ctx: OpContext,
  env: string,
  opts: { limit: number; sinceMs?: number },
  /** The environment's state when the caller has read it already. */
  read?: EnvState,
): Promise<RunsRead> {
  const state = read ?? (await loadRuns(ctx, env));
  const since = opts.sinceMs !== undefined ? ctx.now() - opts.sinceMs : undefined;
  const entries = await tipRuns(ctx, state);
  const problems: Problem[] = [];
  const walk = walkHistory(ctx.repo, ctx.backend, { ref: state.refs.history, tip: state.tips.history }, opts.limit);
  const known = new Map(entries.map((e, i) => [e.run, i]));
  for (let fromHistory = 0; fromHistory < opts.limit; fromHistory++) {
    const next = await walk.next();
    if (next.done) {
      if (next.value.unreadable) problems.push(unreadableHistory(env, next.value.unreadable));
      break;
    }
    const e = historyEntry(next.value, ctx.now());
    if (since !== undefined && Date.parse(e.startedAt) < since) break;
    const i = known.get(e.run);
    if (i === undefined) known.set(e.run, entries.push(e) - 1);
    else entries[i] = retired(e, entries[i] as RunEntry);
  }
  const listed = entries
    .filter((e) => since === undefined || Date.parse(e.startedAt) >= since)
    .sort(newestFirst)
    .slice(0, opts.limit);
  return { entries: listed, problems };
}

/** A run in history whose evidence is kept: its history line, with the evidence logs it lacks (late checkpoints' output). */
function retired(h: RunEntry, tip: RunEntry): RunEntry {
  const files = new Map(h.files);
  if (tip.place === 'evidence') for (const [p, oid] of tip.files) if (!files.has(p)) files.set(p, oid);
  return { ...h, files, detail: `${h.detail}; evidence kept`.replace(/^; /, '') };
}

/** `nyl runs -e ENV [--limit N] [--since DURATION]`. */
export async function listRuns(
  ctx: OpContext,
  opts: { environment: string; limit?: number; sinceMs?: number },
): Promise<OpReport> {
  const env = opts.environment;
  const { entries: listed, problems } = await readRuns(ctx, env, {
    limit: opts.limit ?? DEFAULT_RUNS_LIMIT,
    ...(opts.sinceMs !== undefined ? { sinceMs: opts.sinceMs } : {}),
  });
  return {
    operation: 'runs',
    environment: env,
    outcome: `${listed.length} run${listed.length === 1 ? '' : 's'}`,
    facts: [['runs', listed.map(jsonEntry)]],
    table: {
      header: ['RUN', 'OPERATION', 'STATE', 'STARTED', 'DURATION', 'WHO', 'SOURCE', 'RESULTS', 'DETAIL'],
      rows: listed.map((e) => [
        e.run,
        e.operation,
        e.state,
        e.startedAt.replace(/\.\d+Z$/, 'Z'),
        e.durationMs !== undefined ? formatDuration(e.durationMs) : '',
        e.job ? `${e.who} ${e.job}` : e.who,
        e.source.slice(0, 12),
        countsText(e.counts),
        e.detail,
      ]),
    },
    problems,
    exit: Exit.ok,
  };
}

function countsText(c: Record<string, number>): string {
  return Object.entries(c)
    .map(([k, v]) => `${v} ${k}`)
    .join(', ');
}

/** A run as --json lists it: typed, without its file ids. */
function jsonEntry(e: RunEntry) {
  const { record: _r, files: _f, ...rest } = e;
  return rest;
}

function unreadableHistory(env: string, n: number): Problem {
  return problem(
    'NYL-STATE-UNREADABLE',
    `${n} commit${n === 1 ? '' : 's'} of the run history of ${env} cannot be read`,
    {
      severity: 'warning',
      subject: env,
      exit: Exit.ok,
      fix: 'they are skipped; the state refs are not affected',
    },
  );
}
