import { currentHolder } from '../../state/lease.js';
import { Exit, NylError, problem, worstExit } from '../../util/errors.js';
import { uuid7 } from '../../util/uuid7.js';
import type { OpContext } from '../workspace/workspace.js';
import { groupPrefix } from './members.js';
import { type BatchAsk, continuedBatch, newBatch, type OpenBatch } from './open.js';
import { loadGroup } from './plan.js';
import { expiredBatches, readBatch } from './record.js';
import type { BatchEntryReport, BatchReport } from './report.js';
import { type BatchRun, runEnvironment } from './run-environment.js';
import { flush, type Session } from './session.js';
import { notABatchToken, parseBatchToken } from './token.js';

export interface GroupReconcileOptions {
  group: string;
  /** The batch token `nyl plan --group` printed. */
  plan: string;
  failed?: boolean;
  /** --allow-config-change, for every environment of the batch. */
  allowConfigChange?: boolean;
  parallelism?: number;
}

/**
 * `nyl reconcile --group G --plan <batch token>`: the batch recorded on the group's ref, then each
 * environment reconciled in promotion order with its own plan token, the record updated before and
 * after each one. A repeated request continues the batch: environments done are not run again.
 * An environment that runs and fails (or is refused by its promotion gate) does not stop the batch;
 * a held lease, a cancel, a lost lease or write, or another request writing the record does.
 * Phases: open the batch (new, or the recorded one continued) → each environment → the report.
 */
export async function reconcileGroup(ctx: OpContext, opts: GroupReconcileOptions): Promise<BatchReport> {
  const failed = opts.failed === true;
  const parsed = parseBatchToken(opts.plan);
  if (!parsed) throw new NylError(notABatchToken(opts.group, opts.plan, failed));
  const { cfg, members } = await loadGroup(ctx, opts.group);
  const read = await readBatch(ctx, groupPrefix(cfg, opts.group), opts.group, parsed.id);
  const ask: BatchAsk = {
    group: opts.group,
    token: opts.plan,
    failed,
    holder: currentHolder().id,
    request: uuid7(ctx.now()),
    base: { batch: true, operation: 'reconcile', group: opts.group, token: opts.plan, source: cfg.source, failed },
  };
  const open = read.doc ? await continuedBatch(ctx, cfg, read.doc, ask) : await newBatch(ctx, cfg, members, ask);
  if (!('doc' in open)) return open;
  const b: BatchRun = {
    s: await session(ctx, ask, open, read),
    open,
    opts,
    failed,
    id: parsed.id,
    problems: [],
    stopped: false,
    busy: false,
  };
  for (const [i, e] of open.doc.environments.entries()) await runEnvironment(b, e, i);
  if (!b.busy && !(await flush(b.s, b.problems))) b.busy = true;
  return batchReport(b, ask);
}

/** The request's session with the record: a new batch is written first, with expired ones deleted. */
async function session(
  ctx: OpContext,
  ask: BatchAsk,
  open: OpenBatch,
  read: Awaited<ReturnType<typeof readBatch>>,
): Promise<Session> {
  return {
    ctx,
    ref: read.ref,
    tip: read.tip,
    doc: open.doc,
    request: ask.request,
    holder: ask.holder,
    dirty: !read.doc || open.reports.size > 0,
    also: read.doc ? [] : await expiredBatches(ctx, read.others),
    notes: read.doc ? [...open.reports.keys()].map((env) => `${env} found done`) : ['recorded'],
  };
}

/** What the request did: each environment's entry, and the batch left incomplete, busy, or done. */
function batchReport(b: BatchRun, ask: BatchAsk): BatchReport {
  const { doc } = b.open;
  const n = doc.environments.length;
  const entries = doc.environments.map((e) => b.open.reports.get(e.environment) as BatchEntryReport);
  const left = doc.environments.filter((e) => !e.done).map((e) => e.environment);
  if (left.length && !b.busy)
    b.problems.push(
      problem(
        'NYL-BATCH-INCOMPLETE',
        `batch ${ask.token} is recorded on ${b.s.ref} with ${n - left.length} of ${n} environments done; not done: ${left.join(', ')}`,
        {
          severity: 'warning',
          subject: ask.group,
          exit: Exit.refused,
          fix: `once the cause above is dealt with, run the same \`nyl reconcile --group ${ask.group}${ask.failed ? ' --failed' : ''} --plan ${ask.token}\` again: it runs only the environments not done`,
        },
      ),
    );
  const all = [...entries.flatMap((x) => x.report?.problems ?? []), ...b.problems];
  return {
    ...ask.base,
    outcome: b.busy ? 'busy' : left.length ? 'incomplete' : 'done',
    ref: b.s.ref,
    environments: entries,
    problems: all,
    exit: worstExit([...entries.filter((x) => x.state !== 'not run').map((x) => x.exit), ...all.map((p) => p.exit)]),
  };
}
