import { referenceVariable } from '../../config/references.js';
import { type ProcessResult, runProcess } from '../../drivers/process.js';
import { isStorageFailure } from '../../git/storage-failure.js';
import { FILES, type ObservedUnit, type RunRecord } from '../../state/documents.js';
import { GRACE_MS } from '../../state/lease.js';
import type { EnvState } from '../../state/read.js';
import type { RunSession } from '../../state/run-session.js';
import { Exit, NylError, problem } from '../../util/errors.js';
import { masker } from '../../util/mask.js';
import { isoTime } from '../../util/time.js';
import { ownEntry } from '../runs/history.js';
import { startRun } from '../runs/start.js';
import { stoppedByStorage } from '../runs/storage-stop.js';
import { observedFiles } from '../transition/documents.js';
import type { OpReport } from '../workspace/report.js';
import type { OpContext } from '../workspace/workspace.js';
import { loadForUnitWrite } from './hold.js';

const OUTPUT_KEPT = 16 * 1024;
const REPAIRS_KEPT = 20;
/** A repair is interactive and may be long; a runner that dies with it is broken with `nyl lease break`. */
const EXEC_DEADLINE_MS = 6 * 3_600_000 + GRACE_MS;

/** What an exec asks: the held unit, the command, and why. */
interface ExecAsk {
  environment: string;
  unit: string;
  command: string[];
  reason?: string;
  echo?: boolean;
}

/** An exec under way: its run, the unit as it was, who asked. */
interface Repair {
  ask: ExecAsk;
  state: EnvState;
  prior: ObservedUnit;
  who: string;
  run: string;
  session: RunSession;
  record: RunRecord;
}

/**
 * `nyl exec -e ENV --unit U -- CMD…`: runs a native state repair tool on a held unit. The repair
 * is recorded (lease, run ref naming the command) before the tool starts; when it ends, its exit
 * code and output are kept on the unit, and resuming it then requires an approved plan. Phases:
 * the held unit → the run that records the repair, its lease taken → the tool → the landing.
 */
export async function exec(ctx: OpContext, opts: ExecAsk): Promise<OpReport> {
  const { state } = await loadForUnitWrite(ctx, opts);
  const prior = heldUnit(state, opts);
  const sig = await ctx.repo.signature();
  const rep = await startRepair(ctx, opts, state, prior, `${sig.name} <${sig.email}>`);
  const r = await runProcess({
    argv: opts.command,
    cwd: ctx.repo.root,
    env: toolEnv(rep),
    timeoutMs: 24 * 3_600_000,
    cancellation: ctx.cancellation,
    echo: opts.echo !== false,
  });
  const output = masker.maskPiece(r.started ? r.tail.slice(-OUTPUT_KEPT) : `could not be started: ${r.startError}`);
  const observed = await landRepair(ctx, rep, r, output);
  return execReport(rep, r, observed);
}

function heldUnit(state: EnvState, opts: ExecAsk): ObservedUnit {
  const prior = state.observed.get(opts.unit);
  if (prior?.hold) return prior;
  throw new NylError(
    problem('NYL-UNIT-NOT-HELD', `unit ${opts.unit} is not held: native repairs run only on a held unit`, {
      subject: opts.unit,
      exit: Exit.refused,
      fix: `hold it first: \`nyl hold -e ${opts.environment} --unit ${opts.unit} --reason <text>\``,
    }),
  );
}

/** The run that records the repair before the tool starts: its run ref names the command, the lease taken. */
async function startRepair(
  ctx: OpContext,
  ask: ExecAsk,
  state: EnvState,
  prior: ObservedUnit,
  who: string,
): Promise<Repair> {
  const { run, session, record } = await startRun(
    ctx,
    state,
    { kind: 'free' },
    'exec',
    {
      source: '',
      state: 'executing',
      phase: 'wave',
      wave: 0,
      executing: [ask.unit],
      exec: { unit: ask.unit, command: ask.command, by: who, reason: ask.reason },
    },
    EXEC_DEADLINE_MS,
  );
  if (!(await session.acquire(record, EXEC_DEADLINE_MS, ctx.now())))
    throw new NylError(
      problem('NYL-LEASE-HELD', `another run took the lease of ${ask.environment} first`, {
        exit: Exit.refused,
        fix: 'run again, or pass --wait-lease <duration>',
      }),
    );
  return { ask, state, prior, who, run, session, record };
}

/** The tool's environment: nyl's, the unit's names, and its receipt's outputs as a consumer gets them. */
function toolEnv(rep: Repair): NodeJS.ProcessEnv {
  const { ask, prior } = rep;
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    NYL_ENVIRONMENT: ask.environment,
    NYL_UNIT: ask.unit,
    NYL_RUN: rep.run,
    NYL_UID: prior.uid,
  };
  for (const [k, v] of Object.entries(prior.receipt?.outputs ?? {}))
    env[referenceVariable({ unit: ask.unit, key: k })] = v;
  return env;
}

/** The unit with the repair kept (newest last, bounded). */
function repaired(rep: Repair, r: ProcessResult, output: string, at: string): ObservedUnit {
  const { ask, prior } = rep;
  const repair = {
    run: rep.run,
    command: ask.command,
    by: rep.who,
    ...(ask.reason ? { reason: ask.reason } : {}),
    at,
    exitCode: r.exitCode,
    output,
  };
  return { ...prior, lastRun: rep.run, repairs: [...(prior.repairs ?? []), repair].slice(-REPAIRS_KEPT) };
}

function repairMessage(rep: Repair, r: ProcessResult): string {
  const { ask } = rep;
  return [
    `nyl: exec ${ask.environment} ${ask.unit} (${r.started ? `exit ${r.exitCode ?? r.signal}` : 'not started'})`,
    '',
    `unit: ${ask.unit}`,
    `command: ${JSON.stringify(ask.command)}`,
    `by: ${rep.who}`,
    ...(ask.reason ? [`reason: ${JSON.stringify(ask.reason)}`] : []),
    `exitCode: ${r.exitCode ?? 'null'}`,
    '',
  ].join('\n');
}

/**
 * One observed commit with the repair, the run in the history, the lease released. A landing the
 * disk refuses leaves the repair unrecorded: the run keeps its lease (a last write that ended it
 * would clear `executing`, the only word left that the repair ran). Returns the observed tip.
 */
async function landRepair(ctx: OpContext, rep: Repair, r: ProcessResult, output: string): Promise<string> {
  const { ask, state, session } = rep;
  const next = repaired(rep, r, output, isoTime(ctx.now()));
  const row = {
    unit: ask.unit,
    kind: next.kind,
    result: r.exitCode === 0 ? 'executed' : 'failed',
    detail: '',
    durationMs: r.durationMs,
  };
  const history = () =>
    ownEntry(rep.record, [row], new Map([[FILES.runLog(ask.unit), Buffer.from(output)]]), ctx.now(), {
      exitCodes: r.exitCode === null ? undefined : new Map([[ask.unit, r.exitCode]]),
    });
  const observed = {
    ref: state.refs.observed,
    old: state.tips.observed,
    files: observedFiles(state, new Map([[ask.unit, next]])),
    message: repairMessage(rep, r),
  };
  const { tips } = await land(session, ask.environment, ask.unit, () =>
    session.land([observed], ctx.now(), [], history()),
  );
  return tips.get(state.refs.observed) ?? '';
}

function execReport(rep: Repair, r: ProcessResult, observed: string): OpReport {
  const { ask } = rep;
  const failed = r.exitCode !== 0;
  const exitText = !r.started ? 'not started' : String(r.exitCode ?? r.signal);
  const how = !r.started
    ? `could not be started: ${r.startError}`
    : r.exitCode === null
      ? `was killed by ${r.signal}`
      : `exited with ${r.exitCode}`;
  return {
    operation: 'exec',
    environment: ask.environment,
    outcome: failed ? 'tool failed' : 'done',
    facts: [
      ['unit', ask.unit],
      ['run', rep.run],
      ['exit', exitText],
      ['observed', observed],
    ],
    problems: failed
      ? [
          problem('NYL-EXEC-FAILED', `${ask.command.join(' ')} ${how}`, {
            subject: ask.unit,
            exit: Exit.failed,
            fix: `its output is kept: \`nyl state show -e ${ask.environment} --unit ${ask.unit}\``,
          }),
        ]
      : [],
    exit: failed ? Exit.failed : Exit.ok,
  };
}

/**
 * The landing of an exec. A write the disk refused (the heartbeat's, met first, or its own) is
 * tried once more: the repair is recorded if there is room now; else the lease is kept and the
 * repair named as not recorded.
 */
async function land<T>(session: RunSession, environment: string, unit: string, write: () => Promise<T>): Promise<T> {
  let refused: unknown;
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      return await write();
    } catch (e) {
      if (!isStorageFailure(e)) throw e;
      refused = e;
    }
  }
  throw await stoppedByStorage(refused as NylError, { session, environment, ran: [unit] });
}
