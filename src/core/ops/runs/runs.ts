import type { GithubJob, Holder, RunRecord } from '../../state/documents.js';
import { FILES } from '../../state/documents.js';
import { countResults } from '../../state/history.js';
import { type HistoryItem, readEndedRecord, walkHistory } from '../../state/history-read.js';
import { githubUrl, leaseVerdict } from '../../state/lease.js';
import type { EnvState, RunRefState } from '../../state/read.js';
import { formatDuration } from '../../util/duration.js';
import { Exit, NylError, type Problem, problem } from '../../util/errors.js';
import { masker } from '../../util/mask.js';
import type { OpReport } from '../workspace/report.js';
import { matchesUnit } from '../workspace/unit-names.js';
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
  const why =
    r.phase === 'finished' ? `ended ${r.state}` : `stopped at ${phaseText(r)}; its deadline ${r.deadline} passed`;
  return entryOf(withResults, 'dead', files, `dead, not imported yet (${why})${heartbeat}`, now);
}

function historyEntry(item: HistoryItem, now: number): RunEntry {
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
async function tipRuns(ctx: OpContext, state: EnvState): Promise<RunEntry[]> {
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

async function loadRuns(ctx: OpContext, environment: string) {
  // Listing must work when some state cannot be read: that is when an operator looks.
  const { state } = await loadEnvironment(ctx, environment, () => true);
  return state;
}

const newestFirst = (a: RunEntry, b: RunEntry) => (a.run < b.run ? 1 : a.run > b.run ? -1 : 0);

/** `nyl runs -e ENV [--limit N] [--since DURATION]`. */
export async function listRuns(
  ctx: OpContext,
  opts: { environment: string; limit?: number; sinceMs?: number },
): Promise<OpReport> {
  const env = opts.environment;
  const state = await loadRuns(ctx, env);
  const limit = opts.limit ?? DEFAULT_RUNS_LIMIT;
  const since = opts.sinceMs !== undefined ? ctx.now() - opts.sinceMs : undefined;
  const entries = await tipRuns(ctx, state);
  const problems: Problem[] = [];
  const walk = walkHistory(ctx.repo, ctx.backend, { ref: state.refs.history, tip: state.tips.history }, limit);
  const known = new Set(entries.map((e) => e.run));
  let fromHistory = 0;
  while (fromHistory < limit) {
    const next = await walk.next();
    if (next.done) {
      if (next.value.unreadable) problems.push(unreadableHistory(env, next.value.unreadable));
      break;
    }
    const e = historyEntry(next.value, ctx.now());
    if (since !== undefined && Date.parse(e.startedAt) < since) break;
    // A retired run is in history (imported) and kept as evidence: one line, its history.
    if (known.has(e.run)) {
      const i = entries.findIndex((x) => x.run === e.run);
      entries[i] = { ...e, detail: `${e.detail}; evidence kept`.replace(/^; /, '') };
    } else entries.push(e);
    known.add(e.run);
    fromHistory++;
  }
  const listed = entries
    .filter((e) => since === undefined || Date.parse(e.startedAt) >= since)
    .sort(newestFirst)
    .slice(0, limit);
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

/** Finds one run: at the tips first, then along history (as deep as it takes). */
async function findRun(ctx: OpContext, environment: string, run: string): Promise<RunEntry> {
  const state = await loadRuns(ctx, environment);
  const atTips = (await tipRuns(ctx, state)).filter((e) => e.run === run || e.run.startsWith(run));
  const walk = walkHistory(ctx.repo, ctx.backend, { ref: state.refs.history, tip: state.tips.history }, 50);
  for (;;) {
    const next = await walk.next();
    if (next.done) break;
    const r = next.value.record.run;
    if (r === run || r.startsWith(run)) {
      const h = historyEntry(next.value, ctx.now());
      // Evidence logs may hold late checkpoints' output: they join the history's.
      const ev = atTips.find((e) => e.place === 'evidence');
      if (ev) for (const [p, oid] of ev.files) if (!h.files.has(p)) h.files.set(p, oid);
      return h;
    }
  }
  const found = atTips.sort((a, b) => (a.place === 'evidence' ? 1 : b.place === 'evidence' ? -1 : 0))[0];
  if (found) return found;
  throw new NylError(
    problem('NYL-RUN-UNKNOWN', `${environment} has no run ${run}`, {
      subject: run,
      exit: Exit.failed,
      fix: `\`nyl runs -e ${environment}\` lists its runs`,
    }),
  );
}

/** `nyl runs show -e ENV RUN`: the full record. */
export async function showRun(ctx: OpContext, opts: { environment: string; run: string }): Promise<OpReport> {
  const e = await findRun(ctx, opts.environment, opts.run);
  const r = e.record;
  const units = Object.entries(r.results ?? {}).map(([unit, u]) => ({ unit, ...u }));
  return {
    operation: 'runs show',
    environment: opts.environment,
    outcome: e.state,
    facts: [
      ['run', r.run],
      ['operation', r.operation],
      ['state', r.state],
      ['where', e.place],
      ...(e.detail ? [['detail', e.detail] as [string, unknown]] : []),
      ['started', r.startedAt],
      ...(r.finishedAt ? [['finished', r.finishedAt] as [string, unknown]] : []),
      ...(e.durationMs !== undefined ? [['duration', formatDuration(e.durationMs)] as [string, unknown]] : []),
      ['who', e.job ? `${e.who} ${e.job}` : e.who],
      ['holder', r.holder.id],
      ['source', r.source],
      ...(r.importedBy ? [['importedBy', r.importedBy] as [string, unknown]] : []),
      ...(r.imported?.length ? [['imported', r.imported] as [string, unknown]] : []),
      ...(r.ended ? [['ended', r.ended] as [string, unknown]] : []),
      ['states', r.states ?? [{ state: r.state, at: r.updatedAt }]],
      ...(r.running ? [['running', r.running] as [string, unknown]] : []),
      ['units', units],
    ],
    problems: [],
    exit: Exit.ok,
  };
}

/** `nyl runs logs -e ENV RUN [--unit U]`: each unit's kept log (or last heartbeat tail). */
export async function runLogs(
  ctx: OpContext,
  opts: { environment: string; run: string; unit?: string },
): Promise<OpReport> {
  const e = await findRun(ctx, opts.environment, opts.run);
  const logs: { unit: string; result?: string; kind: 'log' | 'tail'; text: string }[] = [];
  const paths = [...e.files.keys()].sort();
  for (const p of paths) {
    const m = /^units\/(.+)\/(log|tail)\.txt$/.exec(p);
    if (!m) continue;
    const unit = m[1] as string;
    if (opts.unit && !matchesUnit(unit, opts.unit)) continue;
    const kind = m[2] as 'log' | 'tail';
    if (kind === 'tail' && e.files.has(FILES.runLog(unit))) continue;
    const o = await ctx.repo.readObject(e.files.get(p) as string);
    logs.push({
      unit,
      result: e.record.results?.[unit]?.result,
      kind,
      text: masker.mask(o?.body.toString('utf8') ?? ''),
    });
  }
  if (opts.unit && !logs.length)
    throw new NylError(
      problem('NYL-LOG-NONE', `run ${e.run} kept no log of unit ${opts.unit}`, {
        subject: opts.unit,
        exit: Exit.failed,
        fix: `\`nyl runs show -e ${opts.environment} ${e.run}\` lists its units`,
      }),
    );
  return {
    operation: 'runs logs',
    environment: opts.environment,
    outcome: `${logs.length} log${logs.length === 1 ? '' : 's'}`,
    facts: [
      ['run', e.run],
      ['logs', logs],
    ],
    problems: [],
    exit: Exit.ok,
  };
}
