import type { ExecuteResult } from '../drivers/driver.js';
import { driverFor } from '../drivers/index.js';
import type { TreeFiles } from '../git/repo.js';
import { type DesiredUnit, timeoutMs } from '../resolve/desired.js';
import type { Selection } from '../resolve/select.js';
import type { Checkpoint, Condition, ObservedUnit, Receipt, RunRecord } from '../state/documents.js';
import { FILES } from '../state/documents.js';
import { currentHolder, GRACE_MS, leaseVerdict, RESOLUTION_TIMEOUT_MS } from '../state/lease.js';
import { RunSession } from '../state/run-session.js';
import { prettyJson } from '../util/canonical.js';
import { Exit, type ExitCode, NylError, type Problem, problem, worstExit } from '../util/errors.js';
import { secretMasker } from '../util/mask.js';
import { mapPool } from '../util/pool.js';
import { uuid7 } from '../util/uuid7.js';
import { WHY_TEXT } from './decide.js';
import { type Evaluation, evaluateAll, evaluateUnit, uidFor } from './evaluate.js';
import { leaseHeldProblem } from './lease-problems.js';
import { transitionMessage } from './message.js';
import type { RunReport, UnitRow } from './report.js';
import { loadEnvironment, type OpContext } from './workspace.js';

export interface ReconcileOptions {
  environment: string;
  parallelism?: number;
}

export const DEFAULT_PARALLELISM = 4;

interface Outcome {
  row: UnitRow;
  evaluation: Evaluation;
  /** New observed document, when this run changes it. */
  observed?: ObservedUnit;
  desired?: DesiredUnit;
}

function desiredFiles(sel: Selection, docs: Map<string, DesiredUnit>): TreeFiles {
  const files: TreeFiles = new Map();
  files.set(
    FILES.environment,
    Buffer.from(prettyJson({ schema: 'nyl.environment/v1', environment: sel.environment, waves: sel.waves })),
  );
  for (const [name, d] of docs) files.set(FILES.unit(name), Buffer.from(prettyJson(d)));
  return files;
}

function sameFiles(repoHash: (b: Buffer) => string, files: TreeFiles, old: Map<string, string>): boolean {
  if (files.size !== old.size) return false;
  for (const [p, c] of files) {
    const oid = Buffer.isBuffer(c) ? repoHash(c) : c.oid;
    if (old.get(p) !== oid) return false;
  }
  return true;
}

/** Executes what differs from the recorded state, wave by wave, and lands one transition commit. */
export async function reconcile(ctx: OpContext, opts: ReconcileOptions): Promise<RunReport> {
  const { cfg, sel, state } = await loadEnvironment(ctx, opts.environment);
  const env = opts.environment;
  const now = ctx.now();
  const verdict = leaseVerdict(state, now);
  if (verdict.kind === 'held') throw new NylError(leaseHeldProblem(env, verdict));
  if (verdict.kind !== 'free' || [...state.runs.values()].length)
    throw new NylError(
      problem(
        'NYL-RUN-UNIMPORTED',
        `${env} has run refs left by a run that did not finish; taking them over is not supported by this build`,
        {
          subject: env,
          fix: `inspect them with \`git for-each-ref ${sel.prefix}/${env}/runs\``,
          exit: Exit.uncertain,
        },
      ),
    );

  const hash = (b: Buffer) => {
    const batch = ctx.repo.batch();
    return batch.add('blob', b);
  };

  // Nothing to do: one read, no lease, no write.
  const pre = evaluateAll(sel, state);
  const preDesired = new Map<string, DesiredUnit>();
  for (const [n, e] of pre) if (e.desired) preDesired.set(n, e.desired);
  const anyExecute = [...pre.values()].some(
    (e) => e.evaluation.action === 'execute' || e.evaluation.action === 'pending',
  );
  const desiredUnchanged =
    preDesired.size === sel.units.size && sameFiles(hash, desiredFiles(sel, preDesired), state.desiredFiles);
  if (!anyExecute && desiredUnchanged) {
    const rows = [...pre.values()].map((e) => staticRow(e.name, e.kind, e.evaluation));
    return finishReport('reconcile', env, cfg.source, undefined, rows, state.tips.desired, state.tips.observed, false);
  }

  const run = uuid7();
  const holder = currentHolder();
  const session = new RunSession(ctx.repo, ctx.backend, state, run, 'reconcile', holder, await ctx.repo.signature());
  const record: RunRecord = {
    schema: 'nyl.run/v1',
    run,
    environment: env,
    operation: 'reconcile',
    state: 'claimed',
    holder,
    source: cfg.source,
    startedAt: new Date(now).toISOString(),
    updatedAt: new Date(now).toISOString(),
    deadline: new Date(now + RESOLUTION_TIMEOUT_MS + GRACE_MS).toISOString(),
    phase: 'resolution',
    executing: [],
  };
  const mask = secretMasker();
  const outcomes = new Map<string, Outcome>();
  const newOutputs = new Map<string, Record<string, string>>();
  let acquired = false;
  let pendingCheckpoints: Checkpoint[] = [];

  const write = async (deadlineMs: number) => {
    const t = ctx.now();
    record.updatedAt = new Date(t).toISOString();
    record.deadline = new Date(t + deadlineMs).toISOString();
    for (const c of pendingCheckpoints) session.runFiles.set(FILES.runCheckpoint(c.name), Buffer.from(prettyJson(c)));
    pendingCheckpoints = [];
    if (!acquired) {
      if (!(await session.acquire(record, deadlineMs, t))) {
        // Lost the race for the lease: say who won.
        const again = await loadEnvironment(ctx, env);
        const v = leaseVerdict(again.state, ctx.now());
        if (v.kind === 'held') throw new NylError(leaseHeldProblem(env, v));
        throw new NylError(
          problem('NYL-LEASE-HELD', `another run took the lease of ${env} first`, {
            fix: 'run again, or pass --wait-lease <duration>',
            exit: Exit.refused,
          }),
        );
      }
      acquired = true;
    } else await session.checkpoint(record, deadlineMs, t);
  };

  const dynamicOutcome = (dep: string): Evaluation | undefined => outcomes.get(dep)?.evaluation;
  const outputsOf = (dep: string) => newOutputs.get(dep) ?? state.observed.get(dep)?.receipt?.outputs;

  for (let w = 0; w < sel.waves.length; w++) {
    const toRun: { name: string; desired: DesiredUnit; why: string; prior?: ObservedUnit }[] = [];
    for (const name of sel.waves[w] as string[]) {
      const ev = evaluateUnit(sel, state, name, dynamicOutcome, outputsOf, uidFor(state, name));
      if (ev.evaluation.action === 'execute' && ev.desired) {
        toRun.push({ name, desired: ev.desired, why: ev.evaluation.why, prior: ev.observed });
        continue;
      }
      outcomes.set(name, {
        row: staticRow(name, ev.kind, ev.evaluation),
        evaluation: ev.evaluation,
        desired: ev.desired,
      });
      if (ev.evaluation.action === 'invalid' && ev.desired === undefined) {
        // An unresolvable unit is a failure of this run, recorded as such.
        outcomes.set(name, {
          row: { unit: name, kind: ev.kind, result: 'failed', detail: ev.evaluation.reason },
          evaluation: ev.evaluation,
          observed: {
            schema: 'nyl.observed-unit/v1',
            name,
            kind: ev.kind,
            uid: uidFor(state, name),
            receipt: ev.observed?.receipt,
            condition: {
              state: 'failed',
              reason: ev.evaluation.reason,
              run,
              since: new Date(ctx.now()).toISOString(),
              retryable: true,
            },
            lastRun: run,
          },
        });
      }
    }
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

    await mapPool(toRun, opts.parallelism ?? DEFAULT_PARALLELISM, async (t) => {
      // A cancel stops units waiting for a slot; they never started, so they made no effect.
      if (ctx.cancellation.requested) {
        outcomes.set(t.name, notStarted(t.name, t.desired));
        return;
      }
      const started = ctx.now();
      ctx.onEvent({ type: 'unit-start', unit: t.name, kind: t.desired.kind, at: started });
      const result = await driverFor(t.desired.kind).execute({
        environment: env,
        run,
        unit: t.desired,
        cwd: ctx.repo.root,
        timeoutMs: timeoutMs(t.desired),
        cancellation: ctx.cancellation,
        mask,
      });
      const o = outcomeOf(t, result, run, ctx.now());
      outcomes.set(t.name, o);
      if (result.status === 'succeeded') newOutputs.set(t.name, result.outputs);
      pendingCheckpoints.push(checkpointOf(t.desired, result, ctx.now()));
      session.runFiles.set(FILES.runLog(t.name), Buffer.from(result.log));
      ctx.onEvent({
        type: 'unit-finish',
        unit: t.name,
        kind: t.desired.kind,
        result: o.row.result,
        durationMs: result.durationMs,
      });
    });
    record.executing = [];
  }

  const rowsNow = () => sel.waves.flat().map((n) => (outcomes.get(n) as Outcome).row);
  if (ctx.cancellation.requested) {
    // No transition: the run ref keeps the checkpoints, is marked finished, the lease released.
    if (acquired) {
      for (const c of pendingCheckpoints) session.runFiles.set(FILES.runCheckpoint(c.name), Buffer.from(prettyJson(c)));
      record.state = 'cancelled';
      record.phase = 'finished';
      record.executing = [];
      record.finishedAt = new Date(ctx.now()).toISOString();
      await session.finish(record, ctx.now());
    }
    const report = finishReport(
      'reconcile',
      env,
      cfg.source,
      acquired ? run : undefined,
      rowsNow(),
      undefined,
      undefined,
      false,
    );
    report.problems.push(
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
    report.exit = Exit.uncertain;
    return report;
  }

  // The transition: desired documents of this resolution, observed documents changed by this run.
  const desiredDocs = new Map<string, DesiredUnit>();
  for (const name of sel.units.keys()) {
    const d = outcomes.get(name)?.desired ?? pre.get(name)?.desired;
    if (d) desiredDocs.set(name, d);
  }
  // Units that could not be resolved keep the desired document they had.
  const dFiles = desiredFiles(sel, desiredDocs);
  for (const name of sel.units.keys()) {
    const p = FILES.unit(name);
    const old = state.desiredFiles.get(p);
    if (!dFiles.has(p) && old) dFiles.set(p, { oid: old });
  }
  const oFiles: TreeFiles = new Map();
  for (const [p, oid] of state.observedFiles) oFiles.set(p, { oid });
  const changed: string[] = [];
  for (const [name, o] of outcomes)
    if (o.observed) {
      oFiles.set(FILES.unit(name), Buffer.from(prettyJson(o.observed)));
      changed.push(name);
    }
  const rows = rowsNow();
  const desiredChanged = !sameFiles(hash, dFiles, state.desiredFiles);

  if (!changed.length && !desiredChanged) {
    if (acquired) {
      record.state = 'succeeded';
      record.phase = 'finished';
      record.finishedAt = new Date(ctx.now()).toISOString();
      await session.land([], ctx.now());
    }
    return finishReport(
      'reconcile',
      env,
      cfg.source,
      acquired ? run : undefined,
      rows,
      undefined,
      state.tips.observed,
      false,
    );
  }
  if (!acquired) await write(RESOLUTION_TIMEOUT_MS + GRACE_MS);

  const unitsMap = new Map<string, Record<string, unknown>>();
  for (const r of rows) {
    if (r.result === 'current') continue;
    const v: Record<string, unknown> = { result: r.result };
    if (r.executionKey) v.executionKey = r.executionKey;
    if (r.result !== 'executed' && r.result !== 'recovered' && r.detail) v.reason = r.detail;
    if (r.run && r.run !== run) v.run = r.run;
    unitsMap.set(r.unit, v);
  }
  const message = transitionMessage({
    operation: 'reconcile',
    environment: env,
    units: unitsMap,
    results: rows.map((r) => r.result),
    lists: [['recovered', rows.filter((r) => r.result === 'recovered').map((r) => r.unit)]],
    extra: [
      ['run', run],
      ['source', cfg.source],
    ],
  });
  const updates = [];
  if (desiredChanged) updates.push({ ref: state.refs.desired, old: state.tips.desired, files: dFiles, message });
  updates.push({ ref: state.refs.observed, old: state.tips.observed, files: oFiles, message });
  const tips = await session.land(updates, ctx.now());
  return finishReport(
    'reconcile',
    env,
    cfg.source,
    run,
    rows,
    tips.get(state.refs.desired),
    tips.get(state.refs.observed),
    true,
  );
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
  }
}

function outcomeOf(
  t: { name: string; desired: DesiredUnit; why: string; prior?: ObservedUnit },
  r: ExecuteResult,
  run: string,
  now: number,
): Outcome {
  const at = new Date(now).toISOString();
  const base = {
    schema: 'nyl.observed-unit/v1' as const,
    name: t.name,
    kind: t.desired.kind,
    uid: t.desired.uid,
    lastRun: run,
  };
  if (r.status === 'succeeded') {
    const receipt: Receipt = {
      executionKey: t.desired.executionKey,
      uid: t.desired.uid,
      run,
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
      ? { state: 'failed', reason: r.reason, run, since: at, retryable: r.retryable, exitCode: r.exitCode }
      : { state: 'uncertain', reason: r.reason, run, since: at };
  return {
    row: {
      unit: t.name,
      kind: t.desired.kind,
      result: r.status === 'failed' ? 'failed' : 'uncertain',
      detail: r.reason,
      durationMs: r.durationMs,
    },
    evaluation: { action: 'wait', state: condition.state, reason: r.reason },
    observed: { ...base, receipt: t.prior?.receipt, condition },
    desired: t.desired,
  };
}

function checkpointOf(d: DesiredUnit, r: ExecuteResult, now: number): Checkpoint {
  const c: Checkpoint = {
    schema: 'nyl.checkpoint/v1',
    name: d.name,
    kind: d.kind,
    uid: d.uid,
    executionKey: d.executionKey,
    result: r.status,
    at: new Date(now).toISOString(),
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

function finishReport(
  operation: string,
  environment: string,
  source: string,
  run: string | undefined,
  rows: UnitRow[],
  desired: string | undefined,
  observed: string | undefined,
  wrote: boolean,
): RunReport {
  const problems: Problem[] = [];
  const exits: ExitCode[] = [];
  for (const r of rows) {
    if (r.result === 'failed') exits.push(Exit.failed);
    if (r.result === 'uncertain') {
      exits.push(Exit.uncertain);
      problems.push(uncertainProblem(environment, r.unit, r.detail));
    }
  }
  return {
    operation,
    environment,
    run,
    source,
    desired: wrote ? desired : undefined,
    observed,
    rows,
    problems,
    exit: worstExit(exits),
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
