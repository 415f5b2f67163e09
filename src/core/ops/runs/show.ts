import { FILES } from '../../state/documents.js';
import { walkHistory } from '../../state/history-read.js';
import { formatDuration } from '../../util/duration.js';
import { Exit, NylError, problem } from '../../util/errors.js';
import { masker } from '../../util/mask.js';
import type { OpReport } from '../workspace/report.js';
import { matchesUnit } from '../workspace/unit-names.js';
import type { OpContext } from '../workspace/workspace.js';
import { historyEntry, loadRuns, type RunEntry, tipRuns } from './runs.js';

/**
 * One run: `nyl runs show` (its full record) and `nyl runs logs` (its units' kept logs). Each
 * reads from an entry `runs.ts` found, so a reader of many runs (the site) walks history once
 * and asks these for every entry.
 */

/** A unit's kept log (or the last heartbeat's tail of a killed unit), masked. */
export interface RunLog {
  unit: string;
  result?: string;
  kind: 'log' | 'tail';
  text: string;
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

const fact = (k: string, v: unknown): [string, unknown][] => (v === undefined ? [] : [[k, v]]);

/** What `runs show` says of a run, in its order. */
export function runFacts(e: RunEntry): [string, unknown][] {
  const r = e.record;
  const units = Object.entries(r.results ?? {}).map(([unit, u]) => ({ unit, ...u }));
  return [
    ['run', r.run],
    ['operation', r.operation],
    ['state', r.state],
    ['where', e.place],
    ...fact('detail', e.detail || undefined),
    ['started', r.startedAt],
    ...fact('finished', r.finishedAt),
    ...fact('duration', e.durationMs !== undefined ? formatDuration(e.durationMs) : undefined),
    ['who', e.job ? `${e.who} ${e.job}` : e.who],
    ['holder', r.holder.id],
    ['source', r.source],
    ...fact('importedBy', r.importedBy),
    ...fact('imported', r.imported?.length ? r.imported : undefined),
    ...fact('ended', r.ended),
    ['states', r.states ?? [{ state: r.state, at: r.updatedAt }]],
    ...fact('running', r.running),
    ['units', units],
  ];
}

/** `nyl runs show -e ENV RUN`: the full record. */
export async function showRun(ctx: OpContext, opts: { environment: string; run: string }): Promise<OpReport> {
  const e = await findRun(ctx, opts.environment, opts.run);
  return {
    operation: 'runs show',
    environment: opts.environment,
    outcome: e.state,
    facts: runFacts(e),
    problems: [],
    exit: Exit.ok,
  };
}

/** A run's kept logs (a unit's tail only where it kept no log), each blob read once, masked. */
export async function logsOf(ctx: OpContext, e: RunEntry, unit?: string): Promise<RunLog[]> {
  const logs: RunLog[] = [];
  for (const p of [...e.files.keys()].sort()) {
    const m = /^units\/(.+)\/(log|tail)\.txt$/.exec(p);
    if (!m) continue;
    const name = m[1] as string;
    if (unit && !matchesUnit(name, unit)) continue;
    const kind = m[2] as 'log' | 'tail';
    if (kind === 'tail' && e.files.has(FILES.runLog(name))) continue;
    const o = await ctx.repo.readObject(e.files.get(p) as string);
    const result = e.record.results?.[name]?.result;
    logs.push({ unit: name, ...(result ? { result } : {}), kind, text: masker.mask(o?.body.toString('utf8') ?? '') });
  }
  return logs;
}

/** `nyl runs logs -e ENV RUN [--unit U]`: each unit's kept log (or last heartbeat tail). */
export async function runLogs(
  ctx: OpContext,
  opts: { environment: string; run: string; unit?: string },
): Promise<OpReport> {
  const e = await findRun(ctx, opts.environment, opts.run);
  const logs = await logsOf(ctx, e, opts.unit);
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
