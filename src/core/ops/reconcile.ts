import type { ExecuteContext, ExecuteResult, InspectResult } from '../drivers/driver.js';
import { driverFor } from '../drivers/index.js';
import { type DesiredUnit, timeoutMs } from '../resolve/desired.js';
import type { Selection } from '../resolve/select.js';
import type { Checkpoint, Condition, ObservedUnit, Receipt } from '../state/documents.js';
import { FILES } from '../state/documents.js';
import { GRACE_MS, leaseVerdict, RESOLUTION_TIMEOUT_MS } from '../state/lease.js';
import { Backoff } from '../util/backoff.js';
import { prettyJson } from '../util/canonical.js';
import { crashPoint } from '../util/crash.js';
import { Exit, NylError, type Problem, problem } from '../util/errors.js';
import { masker } from '../util/mask.js';
import { mapPool } from '../util/pool.js';
import { isoTime } from '../util/time.js';
import { type DecideOptions, WHY_TEXT } from './decide.js';
import { type Evaluation, evaluateAll, evaluateUnit, uidFor } from './evaluate.js';
import { leaseHeldProblem } from './lease-problems.js';
import { transitionMessage } from './message.js';
import { withoutSecretOutputs } from './outputs.js';
import { checkToken, computePlan } from './plan.js';
import { promotionGate, refusePending } from './promotion.js';
import { exitFor, type OpReport, type RunReport, type UnitRow } from './report.js';
import { startRun } from './run-start.js';
import { judgeSource, type SourceVerdict } from './source-order.js';
import { loadTakingOver } from './takeover.js';
import { consumedRefs, desiredFiles, importLists, messageUnits, observedFiles, sameFiles } from './transition.js';
import { type Loaded, loadEnvironment, type OpContext } from './workspace.js';

export interface ReconcileOptions {
  environment: string;
  parallelism?: number;
  /** --approve: units whose unsafe execution (drift repair, reapply) a person approves. */
  approve?: string[];
  /** --unit … --reapply --reason: execute these although their receipts are current. */
  reapply?: { units: string[]; reason: string };
  /** --plan: execute exactly the plan this token names, or refuse a stale one. */
  plan?: string;
  /** The rows the plan showed, when known (a PR comment): a stale plan names the units that changed. */
  planRows?: Pick<UnitRow, 'unit' | 'result' | 'executionKey'>[];
  /** --allow-older-source --reason: apply a source older than the recorded one, on purpose. */
  allowOlderSource?: { reason: string };
}

export const DEFAULT_PARALLELISM = 4;

interface Outcome {
  row: UnitRow;
  evaluation: Evaluation;
  /** New observed document, when this run changes it. */
  observed?: ObservedUnit;
  desired?: DesiredUnit;
}

/** Another run took the lease between our read and our write. */
class LostRace extends Error {}

/**
 * Executes what differs from the recorded state, wave by wave, and lands one transition commit.
 * Losing the race for the lease (nothing executed yet) starts over from a fresh read: under
 * --wait-lease that waits for the winner, otherwise it is NYL-LEASE-HELD naming the winner.
 */
export async function reconcile(ctx: OpContext, opts: ReconcileOptions): Promise<RunReport | OpReport> {
  const until = ctx.now() + (ctx.opts.waitLeaseMs ?? 0);
  const backoff = new Backoff();
  for (let attempt = 0; ; attempt++) {
    if (attempt > 0) await backoff.wait({ until, now: ctx.now, cancellation: ctx.cancellation });
    try {
      return await reconcileOnce(
        attempt === 0 ? ctx : { ...ctx, opts: { ...ctx.opts, waitLeaseMs: Math.max(0, until - ctx.now()) } },
        opts,
      );
    } catch (e) {
      if (!(e instanceof LostRace)) throw e;
      if (ctx.now() >= until) {
        const again = await loadEnvironment(ctx, opts.environment);
        const v = leaseVerdict(again.state, ctx.now());
        if (v.kind === 'held') throw new NylError(leaseHeldProblem(opts.environment, v));
        throw new NylError(
          problem('NYL-LEASE-HELD', `another run took the lease of ${opts.environment} first`, {
            fix: 'run again, or pass --wait-lease <duration>',
            exit: Exit.refused,
          }),
        );
      }
    }
  }
}

async function reconcileOnce(ctx: OpContext, opts: ReconcileOptions): Promise<RunReport | OpReport> {
  const env = opts.environment;
  // A source older than the environment's is not applied: checked before the lease is waited for.
  let source: SourceVerdict | undefined;
  const gate = async (l: Loaded) => {
    source = await judgeSource(ctx.repo, ctx.backend, {
      environment: env,
      source: l.cfg.source,
      recorded: l.state.recordedSource,
      strict: l.sel.sourceOrder === 'strict',
      allowOlder: opts.allowOlderSource !== undefined,
    });
    // A promotion gate: the environments before this one have the source, sound (and verified).
    if (!source.superseded) refusePending(l.sel, await promotionGate(ctx, l.cfg, l.sel, l.cfg.source));
    return { stop: source.superseded, problems: source.problems };
  };
  // Take over from dead runs first: what they recorded is imported, what they did not, uncertain.
  const loaded = await loadTakingOver(ctx, env, gate);
  if (loaded.stopped) return superseded(env, loaded.stopped);
  const { cfg, sel, original, verdict, takeover, imp, state, problems } = loaded;

  for (const u of [...(opts.approve ?? []), ...(opts.reapply?.units ?? [])])
    if (!sel.units.has(u))
      throw new NylError(
        problem('NYL-UNIT-UNKNOWN', `${env} has no unit ${u}`, {
          subject: u,
          fix: `units of ${env}: ${[...sel.units.keys()].join(', ')}`,
        }),
      );
  let planApproved = false;
  /** With --plan: each unit's row in the approved plan; nothing the plan did not list runs. */
  let planned: Map<string, string> | undefined;
  if (opts.plan) {
    const current = computePlan(sel, original, ctx.now());
    const stale = checkToken(env, opts.plan, current, opts.planRows);
    if (stale) throw new NylError(stale);
    planApproved = true;
    planned = new Map(current.rows.map((r) => [r.unit, r.result]));
  }
  const decideOpts: DecideOptions = {
    driftRepair: sel.driftRepair,
    approved: new Set(opts.approve ?? []),
    reapply: new Set(opts.reapply?.units ?? []),
    planApproved,
  };

  // Units that left the configuration are reported until torn down or forgotten, never dropped.
  const removed: UnitRow[] = [...state.observed.values()]
    .filter((o) => !sel.units.has(o.name))
    .map((o) => ({
      unit: o.name,
      kind: o.kind,
      // An uncertain unit stays uncertain (and the exit code says so) even out of the configuration.
      result: o.condition?.state === 'uncertain' ? 'uncertain' : 'removed',
      detail: `${o.condition?.state === 'uncertain' ? `${o.condition.reason}; ` : ''}no longer in the configuration; its state is kept until \`nyl teardown -e ${env}\` or \`nyl state forget -e ${env} --unit ${o.name}\``,
    }));

  // Nothing to do: one read, no lease, no write.
  const pre = evaluateAll(sel, state, decideOpts);
  const preDesired = new Map<string, DesiredUnit>();
  for (const [n, e] of pre) if (e.desired) preDesired.set(n, e.desired);
  const anyExecute = [...pre.values()].some((e) => ['execute', 'pending', 'inspect'].includes(e.evaluation.action));
  if (!takeover && !anyExecute && sameFiles(ctx.repo, desiredFiles(sel, preDesired, state), state.desiredFiles)) {
    const rows = [...pre.values()].map((e) => staticRow(e.name, e.kind, e.evaluation));
    return report(sel, env, cfg.source, undefined, [...rows, ...removed], undefined, state.tips.observed, problems);
  }

  const { run, session, record } = await startRun(
    ctx,
    original,
    verdict,
    'reconcile',
    { source: cfg.source, state: 'claimed', phase: 'resolution', executing: [] },
    RESOLUTION_TIMEOUT_MS + GRACE_MS,
  );

  const mask = masker.mask;
  /** What a driver gets to execute or inspect a unit in this run. */
  const driverContext = (unit: DesiredUnit): ExecuteContext => ({
    environment: env,
    run,
    unit,
    cwd: ctx.repo.root,
    timeoutMs: timeoutMs(unit),
    cancellation: ctx.cancellation,
    mask,
    local: ctx.opts.local,
  });
  const outcomes = new Map<string, Outcome>();
  const whyOf = new Map<string, Extract<Evaluation, { action: 'execute' }>>();
  const newOutputs = new Map<string, Record<string, string>>();
  // Log tails kept on observed: imported executions' (from the dead run's ref), and this run's.
  const logs = new Map<string, string | { oid: string }>([...(imp?.logs ?? [])].map(([n, oid]) => [n, { oid }]));
  let acquired = false;
  let pendingCheckpoints: Checkpoint[] = [];
  const stage = () => {
    for (const c of pendingCheckpoints) session.runFiles.set(FILES.runCheckpoint(c.name), Buffer.from(prettyJson(c)));
    pendingCheckpoints = [];
  };

  const write = async (deadlineMs: number) => {
    const t = ctx.now();
    record.updatedAt = isoTime(t);
    record.deadline = isoTime(t + deadlineMs);
    stage();
    if (acquired) {
      crashPoint('before-checkpoint');
      await session.checkpoint(record, deadlineMs, t);
      crashPoint('after-checkpoint');
      return;
    }
    crashPoint('before-lease');
    if (!(await session.acquire(record, deadlineMs, t))) {
      // Lost the race for the lease: nothing executed yet, so start over (waiting) or say who won.
      throw new LostRace();
    }
    acquired = true;
    crashPoint('after-lease');
  };

  try {
    const dynamicOutcome = (dep: string): Evaluation | undefined => outcomes.get(dep)?.evaluation;
    const outputsOf = (dep: string) => newOutputs.get(dep) ?? state.observed.get(dep)?.receipt?.outputs;

    for (let w = 0; w < sel.waves.length; w++) {
      const toRun: { name: string; desired: DesiredUnit; why: string; prior?: ObservedUnit }[] = [];
      const toInspect: { name: string; desired: DesiredUnit; prior?: ObservedUnit }[] = [];
      for (const name of sel.waves[w] as string[]) {
        const ev = evaluateUnit(
          sel,
          state,
          name,
          dynamicOutcome,
          outputsOf,
          uidFor(state, name),
          decideOpts,
          (d) => outcomes.get(d)?.observed?.receipt?.artifacts,
        );
        if (ev.evaluation.action === 'execute' && ev.desired && planned && !inPlan(planned.get(name), ev.evaluation)) {
          const reason = `not in the approved plan ${opts.plan}: review it again with \`nyl plan -e ${env}\``;
          outcomes.set(name, {
            row: { unit: name, kind: ev.kind, result: 'awaiting-approval', detail: reason },
            evaluation: { action: 'awaiting-approval', why: ev.evaluation.why, reason },
            desired: ev.desired,
          });
          continue;
        }
        if (ev.evaluation.action === 'execute' && ev.desired) {
          toRun.push({ name, desired: ev.desired, why: ev.evaluation.why, prior: ev.observed });
          whyOf.set(name, ev.evaluation);
          continue;
        }
        if (ev.evaluation.action === 'inspect' && ev.desired) {
          toInspect.push({ name, desired: ev.desired, prior: ev.observed });
          continue;
        }
        const imported = imp?.rows.get(name);
        let row = staticRow(name, ev.kind, ev.evaluation);
        // An import shows as such, unless the unit's state says more (failed, blocked, ...).
        if (imported && (row.result === 'current' || row.result === imported.result)) row = imported;
        const o: Outcome = { row, evaluation: ev.evaluation, desired: ev.desired };
        if (ev.evaluation.action === 'invalid')
          o.observed = {
            schema: 'nyl.observed-unit/v1',
            name,
            kind: ev.kind,
            uid: uidFor(state, name),
            receipt: ev.observed?.receipt,
            condition: {
              state: 'failed',
              reason: ev.evaluation.reason,
              run,
              since: isoTime(ctx.now()),
              retryable: true,
            },
            lastRun: run,
          };
        outcomes.set(name, o);
      }
      // Uncertain units whose kind can observe its effects: applied is recovered, not applied runs again.
      await mapPool(toInspect, opts.parallelism ?? DEFAULT_PARALLELISM, async (t) => {
        // After a cancel nothing more is asked: the unit stays uncertain for the next run.
        if (ctx.cancellation.requested) {
          const reason = t.prior?.condition?.reason ?? 'uncertain';
          outcomes.set(t.name, {
            row: { unit: t.name, kind: t.desired.kind, result: 'uncertain', detail: reason },
            evaluation: { action: 'wait', state: 'uncertain', reason },
            desired: t.desired,
          });
          return;
        }
        const driver = driverFor(t.desired.kind);
        const ictx = driverContext(t.desired);
        const r: InspectResult = driver.inspect
          ? await driver.inspect(ictx).catch((e: unknown) => ({
              status: 'unknown' as const,
              reason: `inspect failed: ${(e as Error)?.message ?? e}`,
              log: '',
            }))
          : { status: 'unknown', reason: 'its kind cannot inspect', log: '' };
        if (r.status === 'not-applied') {
          toRun.push({ name: t.name, desired: t.desired, why: 'recover', prior: t.prior });
          return;
        }
        if (r.status === 'applied') {
          const o = outcomeOf(
            { ...t, why: 'recover' },
            withoutSecretOutputs({
              status: 'succeeded' as const,
              outputs: { ...t.prior?.receipt?.outputs, ...r.outputs },
              artifacts: r.artifacts,
              log: r.log,
              durationMs: 0,
            }),
            run,
            ctx.now(),
            cfg.source,
          );
          o.row.detail = 'inspect: applied';
          outcomes.set(t.name, o);
          newOutputs.set(t.name, o.observed?.receipt?.outputs ?? {});
          return;
        }
        const reason = `${t.prior?.condition?.reason ?? 'uncertain'}; ${r.reason}`;
        outcomes.set(t.name, {
          row: { unit: t.name, kind: t.desired.kind, result: 'uncertain', detail: reason },
          evaluation: { action: 'wait', state: 'uncertain', reason },
          desired: t.desired,
        });
      });
      toRun.sort((a, b) => (a.name < b.name ? -1 : 1));
      if (!toRun.length) continue;
      if (ctx.cancellation.requested) {
        for (const t of toRun) outcomes.set(t.name, notStarted(t.name, t.desired));
        continue;
      }
      // Before a unit starts, the run ref records its desired document and uid.
      for (const t of toRun) session.runFiles.set(FILES.runDesired(t.name), Buffer.from(prettyJson(t.desired)));
      record.state = 'executing';
      record.phase = 'wave';
      record.wave = w;
      record.executing = toRun.map((t) => t.name);
      await write(Math.max(...toRun.map((t) => timeoutMs(t.desired))) + GRACE_MS);

      let finished = 0;
      await mapPool(toRun, opts.parallelism ?? DEFAULT_PARALLELISM, async (t) => {
        // A cancel, or a lease found lost by the heartbeat, stops units waiting for a slot: they never started.
        if (ctx.cancellation.requested || session.heartbeatFailure !== undefined) {
          outcomes.set(t.name, notStarted(t.name, t.desired));
          return;
        }
        const started = ctx.now();
        ctx.onEvent({ type: 'unit-start', unit: t.name, kind: t.desired.kind, at: started });
        const executed = await safeExecute(() => driverFor(t.desired.kind).execute(driverContext(t.desired)));
        const result = executed.status === 'succeeded' ? withoutSecretOutputs(executed) : executed;
        const o = outcomeOf(t, result, run, ctx.now(), cfg.source);
        outcomes.set(t.name, o);
        if (result.status === 'succeeded') newOutputs.set(t.name, result.outputs);
        pendingCheckpoints.push(checkpointOf(t.desired, result, ctx.now(), cfg.source));
        session.runFiles.set(FILES.runLog(t.name), Buffer.from(result.log));
        logs.set(t.name, result.log);
        ctx.onEvent({
          type: 'unit-finish',
          unit: t.name,
          kind: t.desired.kind,
          result: o.row.result,
          durationMs: result.durationMs,
        });
        if (++finished === 1) crashPoint('mid-wave');
      });
      await session.settleHeartbeat();
      record.executing = [];
    }

    const rows = sel.waves.flat().map((n) => (outcomes.get(n) as Outcome).row);
    if (ctx.cancellation.requested) {
      // No transition: the run ref keeps the checkpoints, is marked finished, the lease released.
      if (acquired) {
        stage();
        record.state = 'cancelled';
        record.phase = 'finished';
        record.finishedAt = isoTime(ctx.now());
        await session.finish(record, ctx.now());
      }
      const r = report(sel, env, cfg.source, acquired ? run : undefined, rows, undefined, undefined, problems);
      r.problems.push(
        problem(
          'NYL-RUN-CANCELLED',
          `run ${run} of ${env} was cancelled (${ctx.cancellation.signal}); finished units are checkpointed on its run ref, running ones marked uncertain`,
          {
            subject: env,
            exit: Exit.uncertain,
            fix: acquired
              ? `the next \`nyl reconcile -e ${env}\` takes over at once and imports it`
              : 'nothing was written; run the command again',
          },
        ),
      );
      r.exit = Exit.uncertain;
      return r;
    }

    // The transition: desired documents of this resolution, observed documents changed by this run.
    const desiredDocs = new Map<string, DesiredUnit>();
    for (const name of sel.units.keys()) {
      const d = outcomes.get(name)?.desired ?? pre.get(name)?.desired;
      if (d) desiredDocs.set(name, d);
    }
    // Compared as recorded (a new commit alone changes nothing); written with this run's source.
    const dFiles = desiredFiles(sel, desiredDocs, state);
    const changed = new Map<string, ObservedUnit>(imp?.observed ?? []);
    for (const [name, o] of outcomes) if (o.observed) changed.set(name, o.observed);
    const desiredChanged = !sameFiles(ctx.repo, dFiles, state.desiredFiles);

    if (!changed.size && !desiredChanged && !takeover) {
      if (acquired) await session.land([], ctx.now());
      return report(
        sel,
        env,
        cfg.source,
        acquired ? run : undefined,
        [...rows, ...removed],
        undefined,
        state.tips.observed,
        problems,
      );
    }
    if (!acquired) await write(RESOLUTION_TIMEOUT_MS + GRACE_MS);
    stage();
    // Executions by reason, for the transition's lists: drift repairs, reapplies, approvals.
    const done = (n: string) => ['executed', 'recovered'].includes(outcomes.get(n)?.row.result ?? '');
    const ran = (why: string) => [...whyOf].filter(([n, e]) => e.why === why && done(n)).map(([n]) => n);
    const approvedUnits = [...whyOf].filter(([n, e]) => e.approvedBy && done(n)).map(([n]) => n);
    const sig = await ctx.repo.signature();
    const who = `${sig.name} <${sig.email}>`;

    const message = transitionMessage({
      operation: 'reconcile',
      environment: env,
      units: messageUnits([...rows, ...removed.filter((r) => r.result !== 'removed')], run),
      results: [...rows, ...removed.filter((r) => r.result !== 'removed')].map((r) => r.result),
      lists: [...importLists(imp, rows), ['driftRepaired', ran('drift')]],
      // Exactly the seed's body: the run is in every receipt it wrote, the source in the desired ref.
      extra: [
        ['leaseBroken', imp?.leaseBroken],
        [
          'reapplied',
          ran('reapply').length ? { by: who, reason: opts.reapply?.reason, units: ran('reapply') } : undefined,
        ],
        ['approved', approvedUnits.length ? { by: who, at: isoTime(ctx.now()), units: approvedUnits } : undefined],
        [
          'olderSource',
          source?.olderSource
            ? { by: who, reason: opts.allowOlderSource?.reason, recorded: source.olderSource.recorded }
            : undefined,
        ],
      ],
    });
    const updates = [];
    if (desiredChanged)
      updates.push({
        ref: state.refs.desired,
        old: state.tips.desired,
        files: desiredFiles(sel, desiredDocs, state, cfg.source),
        message,
      });
    // Observed changes only with a result (or an import, which records a lease break even when empty).
    if (changed.size || takeover)
      updates.push({
        ref: state.refs.observed,
        old: state.tips.observed,
        files: observedFiles(state, changed, logs),
        message,
      });
    crashPoint('before-transition');
    const landedState = new Map([...state.observed, ...changed]);
    const landed = await session.land(updates, ctx.now(), consumedRefs(original, imp, landedState));
    crashPoint('after-transition');
    for (const id of landed.late)
      problems.push(
        problem(
          'NYL-RUN-LATE-CHECKPOINT',
          `run ${id} wrote to its run ref while this run took it over; it is kept as evidence`,
          {
            severity: 'warning',
            subject: id,
            exit: Exit.uncertain,
            fix: `see \`git show ${state.refs.evidence(id)}\`; \`nyl recover -e ${env} --unit <unit> --accept ${id} --reason <text>\` adopts one of its checkpoints`,
          },
        ),
      );
    return report(
      sel,
      env,
      cfg.source,
      run,
      [...rows, ...removed],
      landed.tips.get(state.refs.desired),
      landed.tips.get(state.refs.observed) ?? state.tips.observed,
      problems,
    );
  } catch (e) {
    // The lease is gone: what finished is still recorded on this run's own ref, as evidence.
    if (e instanceof NylError && e.problems.some((p) => p.code === 'NYL-LEASE-LOST')) {
      stage();
      // This run stops here: its ref says so (every unit it started is checkpointed by now), and
      // its deadline is not extended, so the next run imports it at once.
      const t = isoTime(ctx.now());
      Object.assign(record, {
        state: 'failed',
        phase: 'finished',
        executing: [],
        deadline: t,
        updatedAt: t,
        finishedAt: t,
      });
      await session.salvage(record).catch(() => 'none');
    } else if (acquired && session.holding && !inDoubt(e)) {
      // Any other failure: record what finished, mark the run finished, release the lease.
      // (Not after a write in doubt: the remote does not answer, and the message says what follows.)
      stage();
      record.state = 'failed';
      record.phase = 'finished';
      record.executing = [];
      record.finishedAt = isoTime(ctx.now());
      await session.finish(record, ctx.now()).catch(() => undefined);
    }
    throw e;
  }
}

/** A reconcile that did not apply an older source: nothing taken, nothing executed, exit 0. */
function superseded(env: string, s: NonNullable<SourceVerdict['superseded']>): OpReport {
  return {
    operation: 'reconcile',
    environment: env,
    outcome: 'superseded',
    facts: [
      ['source', s.source],
      ['recorded', s.recorded],
    ],
    problems: [s.problem],
    exit: Exit.ok,
  };
}

/** A write whose outcome could not be told: nothing more is sent (the remote does not answer). */
export function inDoubt(e: unknown): boolean {
  return e instanceof NylError && e.problems.some((p) => p.code === 'NYL-WRITE-IN-DOUBT');
}

/**
 * Whether an approved plan lets a unit execute now: it listed it as executing, inspecting or
 * awaiting approval (the token approves that); a `maybe` only when its inputs did change, and
 * for nothing else (a maybe was approved for nothing).
 */
function inPlan(row: string | undefined, e: Extract<Evaluation, { action: 'execute' }>): boolean {
  if (row === 'execute' || row === 'inspect' || row === 'awaiting-approval') return true;
  return row === 'maybe' && e.why === 'changed' && e.approvedBy === undefined;
}

/**
 * A driver that throws (a bug, a spawn error) must not take the run down with units still
 * running: its unit is uncertain, the others finish and are checkpointed.
 */
export async function safeExecute(fn: () => Promise<ExecuteResult>): Promise<ExecuteResult> {
  try {
    return await fn();
  } catch (e) {
    return {
      status: 'uncertain',
      reason: `its driver failed: ${(e as Error)?.message ?? e}; its effects are unknown`,
      log: '',
      durationMs: 0,
    };
  }
}

function notStarted(name: string, desired: DesiredUnit): Outcome {
  return {
    row: { unit: name, kind: desired.kind, result: 'skipped', detail: 'not started: the run was cancelled' },
    evaluation: { action: 'blocked', on: '', reason: 'the run was cancelled' },
    desired,
  };
}

function staticRow(unit: string, kind: string, e: Evaluation): UnitRow {
  switch (e.action) {
    case 'current':
      return { unit, kind, result: 'current', detail: '' };
    case 'wait':
      return { unit, kind, result: e.state, detail: e.reason };
    case 'blocked':
      return { unit, kind, result: 'blocked', detail: e.reason };
    case 'invalid':
      return { unit, kind, result: 'failed', detail: e.reason };
    case 'pending':
      return { unit, kind, result: 'pending', detail: `inputs known after ${e.on.join(', ')} executes` };
    case 'execute':
      return { unit, kind, result: 'execute', detail: WHY_TEXT[e.why] };
    case 'inspect':
      return { unit, kind, result: 'inspect', detail: 'uncertain; its driver checks whether it was applied' };
    case 'awaiting-approval':
      return { unit, kind, result: 'awaiting-approval', detail: e.reason };
    case 'held':
      return { unit, kind, result: 'held', detail: e.reason };
    case 'drifted':
      return { unit, kind, result: 'drifted', detail: e.reason };
  }
}

function outcomeOf(
  t: { name: string; desired: DesiredUnit; why: string; prior?: ObservedUnit },
  r: ExecuteResult,
  run: string,
  now: number,
  source: string,
): Outcome {
  const at = isoTime(now);
  // Repairs stay on record; observations were about the old receipt; an approval is used up.
  const base: ObservedUnit = {
    schema: 'nyl.observed-unit/v1' as const,
    name: t.name,
    kind: t.desired.kind,
    uid: t.desired.uid,
    lastRun: run,
    ...(t.prior?.repairs ? { repairs: t.prior.repairs } : {}),
  };
  if (r.status === 'succeeded') {
    const receipt: Receipt = {
      executionKey: t.desired.executionKey,
      uid: t.desired.uid,
      run,
      source,
      at,
      outputs: r.outputs,
      artifacts: r.artifacts,
    };
    const result = t.why === 'recover' ? 'recovered' : 'executed';
    return {
      row: {
        unit: t.name,
        kind: t.desired.kind,
        result,
        detail: '',
        durationMs: r.durationMs,
        executionKey: t.desired.executionKey,
      },
      evaluation: { action: 'current' },
      observed: { ...base, receipt },
      desired: t.desired,
    };
  }
  const condition: Condition =
    r.status === 'failed'
      ? {
          state: 'failed',
          reason: r.reason,
          run,
          since: at,
          retryable: r.retryable,
          exitCode: r.exitCode,
          executionKey: t.desired.executionKey,
        }
      : { state: 'uncertain', reason: r.reason, run, since: at, checkpointed: true };
  return {
    row: {
      unit: t.name,
      kind: t.desired.kind,
      result: r.status === 'failed' ? 'failed' : 'uncertain',
      detail: r.reason,
      durationMs: r.durationMs,
    },
    evaluation: { action: 'wait', state: condition.state, reason: r.reason },
    observed: {
      ...base,
      receipt: t.prior?.receipt,
      condition,
      ...(t.prior?.drift ? { drift: t.prior.drift } : {}),
    },
    desired: t.desired,
  };
}

function checkpointOf(d: DesiredUnit, r: ExecuteResult, now: number, source: string): Checkpoint {
  const c: Checkpoint = {
    schema: 'nyl.checkpoint/v1',
    name: d.name,
    kind: d.kind,
    uid: d.uid,
    executionKey: d.executionKey,
    source,
    result: r.status,
    at: isoTime(now),
    durationMs: r.durationMs,
  };
  if (r.status === 'succeeded') {
    c.outputs = r.outputs;
    c.artifacts = r.artifacts;
  } else {
    c.reason = r.reason;
    if (r.status === 'failed') {
      c.exitCode = r.exitCode;
      c.retryable = r.retryable;
    }
  }
  return c;
}

function report(
  sel: Selection,
  environment: string,
  source: string,
  run: string | undefined,
  rows: UnitRow[],
  desired: string | undefined,
  observed: string | undefined,
  problems: Problem[],
): RunReport {
  // Uncertain and failed units speak through the table (as in seed 000); `nyl status` explains them.
  return {
    operation: 'reconcile',
    environment,
    run,
    source,
    desired,
    observed,
    rows,
    problems,
    exit: exitFor(rows, problems, ['awaiting-approval']),
    graph: {
      waves: sel.waves,
      edges: [...sel.units.values()].flatMap((u) => u.deps.map((d) => [d, u.doc.name] as [string, string])),
    },
  };
}

export function uncertainProblem(env: string, unit: string, reason: string): Problem {
  return problem('NYL-UNIT-UNCERTAIN', `unit ${unit} is uncertain: ${reason}`, {
    severity: 'warning',
    subject: unit,
    exit: Exit.uncertain,
    fix: `check what the execution did; a unit whose recovery policy converges runs again in the next nyl reconcile, otherwise run \`nyl recover -e ${env} --unit ${unit} --retry --reason <text>\` once it is safe to run it again`,
  });
}
