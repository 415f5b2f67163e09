import type { RefUpdate } from '../../git/repo.js';
import { currentHolder } from '../../state/lease.js';
import { Exit, type ExitCode, NylError, type Problem, problem, worstExit } from '../../util/errors.js';
import { isoTime } from '../../util/time.js';
import { uuid7 } from '../../util/uuid7.js';
import { reconcile } from '../reconcile/reconcile.js';
import type { OpReport, RunReport } from '../workspace/report.js';
import type { OpContext } from '../workspace/workspace.js';
import { exitOfRecord, landedSince } from './adopt.js';
import { groupPrefix } from './members.js';
import { type EnvPlan, loadGroup, planEach } from './plan.js';
import { type BatchDoc, type BatchEntry, expiredBatches, readBatch, writeBatch } from './record.js';
import type { BatchEntryReport, BatchReport } from './report.js';
import { checkBatchToken, notABatchToken, parseBatchToken, staleEntries } from './token.js';

export interface GroupReconcileOptions {
  group: string;
  /** The batch token `nyl plan --group` printed. */
  plan: string;
  failed?: boolean;
  /** --allow-config-change, for every environment of the batch. */
  allowConfigChange?: boolean;
  parallelism?: number;
}

const WORDS: Record<number, string> = { 0: 'success', 1: 'failed', 2: 'refused', 3: 'drift', 4: 'uncertain' };
const word = (exit: number) => WORDS[exit] ?? 'failed';

/** What one request does with the batch: the record, its tip, and who this request is. */
interface Session {
  ctx: OpContext;
  ref: string;
  tip: string | undefined;
  doc: BatchDoc;
  request: string;
  holder: string;
  /** Changes not written yet (the record is written before each environment and at the end). */
  dirty: boolean;
  /** Refs deleted with the first write (expired batches of the group). */
  also: RefUpdate[];
  /** What the next write records, for its commit message (`e1 success, start e2`). */
  notes: string[];
}

/**
 * `nyl reconcile --group G --plan <batch token>`: the batch recorded on the group's ref, then each
 * environment reconciled in promotion order with its own plan token, the record updated before and
 * after each one. A repeated request continues the batch: environments done are not run again.
 * An environment that runs and fails (or is refused by its promotion gate) does not stop the batch;
 * a held lease, a cancel, a lost lease or write, or another request writing the record does.
 */
export async function reconcileGroup(ctx: OpContext, opts: GroupReconcileOptions): Promise<BatchReport> {
  const failed = opts.failed === true;
  const parsed = parseBatchToken(opts.plan);
  if (!parsed) throw new NylError(notABatchToken(opts.group, opts.plan, failed));
  const { cfg, members } = await loadGroup(ctx, opts.group);
  const read = await readBatch(ctx, groupPrefix(cfg, opts.group), opts.group, parsed.id);
  const base = {
    batch: true as const,
    operation: 'reconcile' as const,
    group: opts.group,
    token: opts.plan,
    source: cfg.source,
    failed,
  };
  const request = uuid7(ctx.now());
  const holder = currentHolder().id;
  /** The plan token each environment left to run is reconciled with. */
  const tokens = new Map<string, string>();
  const reports = new Map<string, BatchEntryReport>();
  /**
   * Environments a request of this batch went to reconcile before, planned with no configuration
   * change: a recovery run's check would count the batch's own interrupted attempt (which recorded
   * no revision) as one, but the configuration is the one the batch was planned with.
   */
  const resumed = new Set<string>();
  let doc: BatchDoc;

  if (!read.doc) {
    const plans = await planEach(ctx, cfg, members, failed);
    const stale = checkBatchToken(opts.plan, { group: opts.group, failed, plans });
    if (stale) throw new NylError(stale);
    // Nothing to execute anywhere: one read, no record, no lease (as a reconcile with nothing to do).
    if (!plans.some((p) => p.needsRun)) return nothingToDo(base, plans);
    const now = isoTime(ctx.now());
    doc = {
      schema: 'nyl.batch/v1',
      token: opts.plan,
      group: opts.group,
      failed,
      source: cfg.source,
      createdAt: now,
      createdBy: holder,
      updatedAt: now,
      updatedBy: { request, holder },
      environments: plans.map((p) => ({
        environment: p.environment,
        plan: p.token,
        desired: p.desired,
        observed: p.observed,
        config: p.config,
        ...(p.configChanged ? { configChanged: true } : {}),
      })),
    };
    for (const p of plans) tokens.set(p.environment, p.token);
  } else {
    doc = read.doc;
    refuseMismatch(doc, opts.group, opts.plan, failed);
    const left = doc.environments.filter((e) => !e.done);
    if (left.length) {
      const plans = await planEach(
        ctx,
        cfg,
        left.map((e) => e.environment),
        failed,
      );
      const stale: string[] = [];
      for (const [i, e] of left.entries()) {
        const verdict = await judge(ctx, e, plans[i] as EnvPlan);
        if (verdict.kind === 'run') {
          tokens.set(e.environment, verdict.token);
          if (e.started && !e.configChanged) resumed.add(e.environment);
        } else if (verdict.kind === 'adopt') {
          e.done = verdict.done;
          delete e.last;
          reports.set(e.environment, recordedEntry(e, 'the batch lost track of this run; found in the run history'));
        } else stale.push(e.environment);
      }
      if (stale.length) throw new NylError(staleEntries(opts.group, opts.plan, failed, stale));
    }
  }

  const s: Session = {
    ctx,
    ref: read.ref,
    tip: read.tip,
    doc,
    request,
    holder,
    dirty: !read.doc || reports.size > 0,
    also: read.doc ? [] : await expiredBatches(ctx, read.others),
    notes: read.doc ? [...reports.keys()].map((env) => `${env} found done`) : ['recorded'],
  };
  const problems: Problem[] = [];
  let stopped = false;
  let busy = false;
  const n = doc.environments.length;
  for (const [i, e] of doc.environments.entries()) {
    if (e.done) {
      if (!reports.has(e.environment)) reports.set(e.environment, recordedEntry(e));
      continue;
    }
    if (stopped || ctx.cancellation.requested) {
      reports.set(e.environment, notRun(e, tokens.get(e.environment)));
      continue;
    }
    const token = tokens.get(e.environment) as string;
    if (!e.started) {
      e.started = { at: isoTime(ctx.now()), request };
      s.dirty = true;
      s.notes.push(`start ${e.environment}`);
    }
    // Its run, once landed, is known by the plan token it executed (its record keeps it).
    if (token !== e.plan && !e.tokens?.includes(token)) {
      e.tokens = [...(e.tokens ?? []), token];
      s.dirty = true;
    }
    if (!(await flush(s, problems))) {
      busy = stopped = true;
      reports.set(e.environment, notRun(e, tokens.get(e.environment)));
      continue;
    }
    ctx.onEvent({ type: 'note', text: `batch ${parsed.id}: reconciling ${e.environment} (${i + 1} of ${n})` });
    const outcome = await reconcileOne(ctx, e.environment, token, opts, failed, resumed.has(e.environment));
    const at = isoTime(ctx.now());
    if (outcome.report && !ctx.cancellation.requested) {
      e.done = doneOf(outcome.report, at);
      delete e.last;
      s.dirty = true;
      s.notes.push(`${e.environment} ${e.done.result}`);
      reports.set(e.environment, {
        environment: e.environment,
        token,
        state: 'ran',
        created: true,
        run: e.done.run,
        result: e.done.result,
        exit: e.done.exit,
        at,
        detail:
          e.done.detail ?? (resumed.has(e.environment) && !e.last ? 'continued after its interrupted run' : undefined),
        report: outcome.report,
      });
      continue;
    }
    const ps = outcome.report?.problems ?? outcome.problems;
    const first = ps[0];
    const exit = outcome.report?.exit ?? worstExit(ps.map((p) => p.exit));
    const result = ctx.cancellation.requested ? 'cancelled' : word(exit);
    // A held lease may be another request of this batch at work: its record is left as it is.
    if (!outcome.leaseHeld) {
      e.last = {
        result,
        exit,
        ...(first ? { code: first.code } : {}),
        message: first?.message ?? result,
        at,
      };
      s.dirty = true;
      s.notes.push(`${e.environment} ${result}`);
    }
    reports.set(e.environment, {
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
    if (!outcome.report) problems.push(...ps);
    // A refusal of this environment alone (its promotion gate, its plan) lets the batch go on.
    if (ctx.cancellation.requested || !outcome.goOn) stopped = true;
  }
  if (!busy && !(await flush(s, problems))) busy = true;

  const entries = doc.environments.map((e) => reports.get(e.environment) as BatchEntryReport);
  const left = doc.environments.filter((e) => !e.done).map((e) => e.environment);
  if (left.length && !busy)
    problems.push(
      problem(
        'NYL-BATCH-INCOMPLETE',
        `batch ${opts.plan} is recorded on ${s.ref} with ${n - left.length} of ${n} environments done; not done: ${left.join(', ')}`,
        {
          severity: 'warning',
          subject: opts.group,
          exit: Exit.refused,
          fix: `once the cause above is dealt with, run the same \`nyl reconcile --group ${opts.group}${failed ? ' --failed' : ''} --plan ${opts.plan}\` again: it runs only the environments not done`,
        },
      ),
    );
  const own = entries.flatMap((x) => x.report?.problems ?? []);
  const all = [...own, ...problems];
  return {
    ...base,
    outcome: busy ? 'busy' : left.length ? 'incomplete' : 'done',
    ref: s.ref,
    environments: entries,
    problems: all,
    exit: worstExit([...entries.filter((x) => x.state !== 'not run').map((x) => x.exit), ...all.map((p) => p.exit)]),
  };
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

/** Writes the record when it changed; false when another request wrote it first (said in `problems`). */
async function flush(s: Session, problems: Problem[]): Promise<boolean> {
  if (!s.dirty) return true;
  const done = s.doc.environments.filter((e) => e.done).length;
  const message = `${s.notes.join(', ')} (${done} of ${s.doc.environments.length} done)`;
  s.doc.updatedAt = isoTime(s.ctx.now());
  s.doc.updatedBy = { request: s.request, holder: s.holder };
  const id = s.ref.slice(s.ref.lastIndexOf('/') + 1);
  const next = await writeBatch(s.ctx, {
    ref: s.ref,
    old: s.tip,
    doc: s.doc,
    message: `nyl: batch ${id} of ${s.doc.group}: ${message}`,
    also: s.also,
  });
  if (next) {
    s.tip = next;
    s.dirty = false;
    s.also = [];
    s.notes = [];
    return true;
  }
  problems.push(await busyProblem(s));
  return false;
}

async function busyProblem(s: Session): Promise<Problem> {
  const g = s.doc.group;
  let who = 'another request';
  try {
    const prefix = s.ref.slice(0, s.ref.indexOf('/_groups/'));
    const again = await readBatch(s.ctx, prefix, g, s.ref.slice(s.ref.lastIndexOf('/') + 1));
    if (again.doc) who = `another request (${again.doc.updatedBy.holder}, which wrote it at ${again.doc.updatedAt})`;
  } catch {
    /* the record cannot be read now: say what is known */
  }
  return problem(
    'NYL-BATCH-BUSY',
    `${who} is running batch ${s.doc.token}: the batch record ${s.ref} changed while this request ran; this request stops here (what it ran so far is kept on each environment's refs)`,
    {
      subject: g,
      exit: Exit.refused,
      fix: `let the other request finish (\`git log ${s.ref}\` shows its progress); if it died, run the same \`nyl reconcile --group ${g}${s.doc.failed ? ' --failed' : ''} --plan ${s.doc.token}\` again: it continues without running environments done`,
    },
  );
}

/** One environment reconciled with its own plan token; a refusal or error is kept, not thrown. */
async function reconcileOne(
  ctx: OpContext,
  environment: string,
  token: string,
  opts: GroupReconcileOptions,
  failed: boolean,
  resumed: boolean,
): Promise<{ report?: RunReport | OpReport; problems: Problem[]; goOn: boolean; leaseHeld?: boolean }> {
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

function doneOf(r: RunReport | OpReport, at: string): NonNullable<BatchEntry['done']> {
  if ('outcome' in r) {
    const run = r.facts.find(([k]) => k === 'run')?.[1];
    return {
      ...(typeof run === 'string' && run ? { run } : {}),
      result: r.outcome === 'superseded' ? 'superseded' : word(r.exit),
      exit: r.exit,
      at,
      detail: r.outcome,
    };
  }
  return {
    ...(r.run ? { run: r.run } : {}),
    result: word(r.exit),
    exit: r.exit,
    at,
    ...(r.run ? {} : { detail: 'nothing to do' }),
  };
}

function recordedEntry(e: BatchEntry, detail?: string): BatchEntryReport {
  const d = e.done as NonNullable<BatchEntry['done']>;
  return {
    environment: e.environment,
    token: e.plan,
    state: 'recorded',
    created: false,
    run: d.run,
    result: d.result,
    exit: d.exit as ExitCode,
    at: d.at,
    detail: detail ?? d.detail ?? `recorded at ${d.at}`,
  };
}

function notRun(e: BatchEntry, token: string | undefined): BatchEntryReport {
  return {
    environment: e.environment,
    ...(token ? { token } : {}),
    state: 'not run',
    created: false,
    result: e.last?.result ?? 'not run',
    exit: Exit.ok,
    detail: e.last ? `last attempt: ${e.last.code ?? e.last.result} at ${e.last.at}` : undefined,
  };
}

function nothingToDo(base: Omit<BatchReport, 'outcome' | 'environments' | 'problems' | 'exit'>, plans: EnvPlan[]) {
  const problems = plans.flatMap((p) => p.report.problems);
  return {
    ...base,
    outcome: 'nothing to do',
    environments: plans.map(
      (p): BatchEntryReport => ({
        environment: p.environment,
        token: p.token,
        state: 'current',
        result: word(p.report.exit),
        exit: p.report.exit,
        detail: 'nothing to do',
        report: { ...p.report, operation: 'reconcile', extra: [] },
      }),
    ),
    problems,
    exit: worstExit(plans.map((p) => p.report.exit)),
  } satisfies BatchReport;
}
