import { Exit, NylError, type Problem, worstExit } from '../../util/errors.js';
import { isoTime } from '../../util/time.js';
import { reconcile } from '../reconcile/reconcile.js';
import type { OpReport, RunReport } from '../workspace/report.js';
import type { OpContext } from '../workspace/workspace.js';
import { doneOf, notRun, recordedEntry, word } from './entries.js';
import type { OpenBatch } from './open.js';
import type { BatchEntry } from './record.js';
import { flush, type Session } from './session.js';

/** What the environment loop carries: the session, the open batch, what it says, whether it stops. */
export interface BatchRun {
  s: Session;
  open: OpenBatch;
  opts: { parallelism?: number; allowConfigChange?: boolean };
  failed: boolean;
  /** The batch's id, for progress notes. */
  id: string;
  problems: Problem[];
  stopped: boolean;
  busy: boolean;
}

type Outcome = { report?: RunReport | OpReport; problems: Problem[]; goOn: boolean; leaseHeld?: boolean };

/**
 * One environment of the batch, in promotion order: done already, or not run (the batch stopped),
 * or recorded as started, the record written, then reconciled with its own plan token and what
 * came of it recorded.
 */
export async function runEnvironment(b: BatchRun, e: BatchEntry, i: number): Promise<void> {
  const { s, open } = b;
  const { ctx } = s;
  if (e.done) {
    if (!open.reports.has(e.environment)) open.reports.set(e.environment, recordedEntry(e));
    return;
  }
  const token = open.tokens.get(e.environment) as string;
  if (b.stopped || ctx.cancellation.requested) return void open.reports.set(e.environment, notRun(e, token));
  markStarted(s, e, token);
  if (!(await flush(s, b.problems))) {
    b.busy = b.stopped = true;
    return void open.reports.set(e.environment, notRun(e, token));
  }
  const n = s.doc.environments.length;
  ctx.onEvent({ type: 'note', text: `batch ${b.id}: reconciling ${e.environment} (${i + 1} of ${n})` });
  const resumed = open.resumed.has(e.environment);
  const outcome = await reconcileOne(ctx, e.environment, token, b.opts, b.failed, resumed);
  if (outcome.report && !ctx.cancellation.requested) recordRan(b, e, token, outcome.report);
  else recordRefused(b, e, token, outcome);
}

/** The record says the batch started it, and with which token (its run, once landed, keeps it). */
function markStarted(s: Session, e: BatchEntry, token: string): void {
  if (!e.started) {
    e.started = { at: isoTime(s.ctx.now()), request: s.request };
    s.dirty = true;
    s.notes.push(`start ${e.environment}`);
  }
  if (token !== e.plan && !e.tokens?.includes(token)) {
    e.tokens = [...(e.tokens ?? []), token];
    s.dirty = true;
  }
}

function recordRan(b: BatchRun, e: BatchEntry, token: string, report: RunReport | OpReport): void {
  const at = isoTime(b.s.ctx.now());
  const resumed = b.open.resumed.has(e.environment);
  e.done = doneOf(report, at);
  delete e.last;
  b.s.dirty = true;
  b.s.notes.push(`${e.environment} ${e.done.result}`);
  b.open.reports.set(e.environment, {
    environment: e.environment,
    token,
    state: 'ran',
    created: true,
    run: e.done.run,
    result: e.done.result,
    exit: e.done.exit,
    at,
    detail: e.done.detail ?? (resumed && !e.last ? 'continued after its interrupted run' : undefined),
    report,
  });
}

function recordRefused(b: BatchRun, e: BatchEntry, token: string, outcome: Outcome): void {
  const { ctx } = b.s;
  const at = isoTime(ctx.now());
  const ps = outcome.report?.problems ?? outcome.problems;
  const first = ps[0];
  const exit = outcome.report?.exit ?? worstExit(ps.map((p) => p.exit));
  const result = ctx.cancellation.requested ? 'cancelled' : word(exit);
  // A held lease may be another request of this batch at work: its record is left as it is.
  if (!outcome.leaseHeld) {
    e.last = { result, exit, ...(first ? { code: first.code } : {}), message: first?.message ?? result, at };
    b.s.dirty = true;
    b.s.notes.push(`${e.environment} ${result}`);
  }
  b.open.reports.set(e.environment, {
    environment: e.environment,
    token,
    state: 'refused',
    created: false,
    result,
    exit,
    at,
    detail: first ? `${first.code}: ${first.message.split('\n')[0]}` : undefined,
    ...(outcome.report ? { report: outcome.report } : {}),
  });
  if (!outcome.report) b.problems.push(...ps);
  // A refusal of this environment alone (its promotion gate, its plan) lets the batch go on.
  if (ctx.cancellation.requested || !outcome.goOn) b.stopped = true;
}

/** One environment reconciled with its own plan token; a refusal or error is kept, not thrown. */
async function reconcileOne(
  ctx: OpContext,
  environment: string,
  token: string,
  opts: BatchRun['opts'],
  failed: boolean,
  resumed: boolean,
): Promise<Outcome> {
  try {
    const report = await reconcile(ctx, {
      environment,
      plan: token,
      ...(opts.parallelism !== undefined ? { parallelism: opts.parallelism } : {}),
      ...(failed ? { failed } : {}),
      ...(opts.allowConfigChange || resumed ? { allowConfigChange: true } : {}),
    });
    return { report, problems: [], goOn: true };
  } catch (e) {
    if (!(e instanceof NylError)) throw e;
    // A held lease may be another request of this very batch: stop rather than go around it.
    const held = e.problems.some((p) => p.code === 'NYL-LEASE-HELD');
    // In a batch every problem says which environment it is of.
    const problems = e.problems.map((p) => (p.subject ? p : { ...p, subject: environment }));
    return { problems, goOn: e.exit === Exit.refused && !held, leaseHeld: held };
  }
}
