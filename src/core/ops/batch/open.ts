import type { Config } from '../../config/model.js';
import { Exit, NylError, problem } from '../../util/errors.js';
import { isoTime } from '../../util/time.js';
import type { OpContext } from '../workspace/workspace.js';
import { exitOfRecord, landedSince } from './adopt.js';
import { nothingToDo, recordedEntry, word } from './entries.js';
import { type EnvPlan, planEach } from './plan.js';
import type { BatchDoc, BatchEntry } from './record.js';
import type { BatchEntryReport, BatchReport } from './report.js';
import { checkBatchToken, staleEntries } from './token.js';

/** What a request asks of a batch, and what it answers with whatever happens. */
export interface BatchAsk {
  group: string;
  token: string;
  failed: boolean;
  holder: string;
  request: string;
  base: Omit<BatchReport, 'outcome' | 'environments' | 'problems' | 'exit'>;
}

/** A batch ready to run: its record, each environment's plan token, and what is known of some already. */
export interface OpenBatch {
  doc: BatchDoc;
  /** The plan token each environment left to run is reconciled with. */
  tokens: Map<string, string>;
  reports: Map<string, BatchEntryReport>;
  /**
   * Environments a request of this batch went to reconcile before, planned with no configuration
   * change: a recovery run's check would count the batch's own interrupted attempt (which recorded
   * no revision) as one, but the configuration is the one the batch was planned with.
   */
  resumed: Set<string>;
}

/** A new batch: every environment planned now must be what the token names. */
export async function newBatch(
  ctx: OpContext,
  cfg: Config,
  members: string[],
  ask: BatchAsk,
): Promise<OpenBatch | BatchReport> {
  const plans = await planEach(ctx, cfg, members, ask.failed);
  const stale = checkBatchToken(ask.token, { group: ask.group, failed: ask.failed, plans });
  if (stale) throw new NylError(stale);
  // Nothing to execute anywhere: one read, no record, no lease (as a reconcile with nothing to do).
  if (!plans.some((p) => p.needsRun)) return nothingToDo(ask.base, plans);
  const now = isoTime(ctx.now());
  const doc: BatchDoc = {
    schema: 'nyl.batch/v1',
    token: ask.token,
    group: ask.group,
    failed: ask.failed,
    source: cfg.source,
    createdAt: now,
    createdBy: ask.holder,
    updatedAt: now,
    updatedBy: { request: ask.request, holder: ask.holder },
    environments: plans.map((p) => ({
      environment: p.environment,
      plan: p.token,
      desired: p.desired,
      observed: p.observed,
      config: p.config,
      ...(p.configChanged ? { configChanged: true } : {}),
    })),
  };
  return { doc, tokens: new Map(plans.map((p) => [p.environment, p.token])), reports: new Map(), resumed: new Set() };
}

/** A recorded batch continued: each environment not done is judged against its plan now. */
export async function continuedBatch(ctx: OpContext, cfg: Config, doc: BatchDoc, ask: BatchAsk): Promise<OpenBatch> {
  refuseMismatch(doc, ask.group, ask.token, ask.failed);
  const open: OpenBatch = { doc, tokens: new Map(), reports: new Map(), resumed: new Set() };
  const left = doc.environments.filter((e) => !e.done);
  if (!left.length) return open;
  const plans = await planEach(
    ctx,
    cfg,
    left.map((e) => e.environment),
    ask.failed,
  );
  const stale: string[] = [];
  for (const [i, e] of left.entries()) {
    const verdict = await judge(ctx, e, plans[i] as EnvPlan);
    if (verdict.kind === 'run') {
      open.tokens.set(e.environment, verdict.token);
      if (e.started && !e.configChanged) open.resumed.add(e.environment);
    } else if (verdict.kind === 'adopt') {
      e.done = verdict.done;
      delete e.last;
      open.reports.set(e.environment, recordedEntry(e, 'the batch lost track of this run; found in the run history'));
    } else stale.push(e.environment);
  }
  if (stale.length) throw new NylError(staleEntries(ask.group, ask.token, ask.failed, stale));
  return open;
}

/** The batch of a recorded token must be the batch asked for. */
function refuseMismatch(doc: BatchDoc, group: string, token: string, failed: boolean): void {
  if (doc.token === token && doc.group === group && doc.failed === failed) return;
  const why =
    doc.token !== token || doc.group !== group
      ? `its record holds batch ${doc.token} of group ${doc.group}`
      : `it was planned ${doc.failed ? 'with' : 'without'} --failed`;
  throw new NylError(
    problem('NYL-BATCH-STALE', `batch ${token} cannot go on: ${why}; nothing was executed`, {
      subject: group,
      exit: Exit.refused,
      fix: `run \`nyl reconcile --group ${doc.group}${doc.failed ? ' --failed' : ''} --plan ${doc.token}\` to continue that batch, or plan a new one with \`nyl plan --group ${group}\``,
    }),
  );
}

type Verdict =
  | { kind: 'run'; token: string }
  | { kind: 'adopt'; done: NonNullable<BatchEntry['done']> }
  | { kind: 'stale' };

/**
 * An environment the batch has not done yet. Its plan as recorded: it runs. Otherwise, when the
 * batch had started it: the state it was planned from, untouched but for that interrupted run's own
 * leftovers (same tips, same configuration) — it runs, its reconcile importing the dead run first;
 * or a reconcile of one of its tokens that landed since the batch started it — that run is its
 * result. Anything else changed it: the batch is stale.
 */
async function judge(ctx: OpContext, e: BatchEntry, p: EnvPlan): Promise<Verdict> {
  if (p.token === e.plan) return { kind: 'run', token: p.token };
  if (!e.started) return { kind: 'stale' };
  if (p.desired === e.desired && p.observed === e.observed && p.config === e.config)
    return { kind: 'run', token: p.token };
  const r = await landedSince(ctx, p.prefix, e.environment, e.started.at, [e.plan, ...(e.tokens ?? [])]);
  if (!r) return { kind: 'stale' };
  const exit = exitOfRecord(r);
  return {
    kind: 'adopt',
    done: { run: r.run, result: word(exit), exit, at: r.finishedAt ?? r.updatedAt, detail: 'found in the run history' },
  };
}
