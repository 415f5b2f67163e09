import { referenceVariable } from '../../config/references.js';
import { runProcess } from '../../drivers/process.js';
import { isStorageFailure } from '../../git/storage-failure.js';
import { FILES, type ObservedUnit } from '../../state/documents.js';
import { GRACE_MS } from '../../state/lease.js';
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

/**
 * `nyl exec -e ENV --unit U -- CMD…`: runs a native state repair tool on a held unit. The repair
 * is recorded (lease, run ref naming the command) before the tool starts; when it ends, its exit
 * code and output are kept on the unit, and resuming it then requires an approved plan.
 */
export async function exec(
  ctx: OpContext,
  opts: { environment: string; unit: string; command: string[]; reason?: string; echo?: boolean },
): Promise<OpReport> {
  const env = opts.environment;
  const { state } = await loadForUnitWrite(ctx, opts);
  const prior = state.observed.get(opts.unit);
  if (!prior?.hold)
    throw new NylError(
      problem('NYL-UNIT-NOT-HELD', `unit ${opts.unit} is not held: native repairs run only on a held unit`, {
        subject: opts.unit,
        exit: Exit.refused,
        fix: `hold it first: \`nyl hold -e ${env} --unit ${opts.unit} --reason <text>\``,
      }),
    );
  const sig = await ctx.repo.signature();
  const who = `${sig.name} <${sig.email}>`;
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
      executing: [opts.unit],
      exec: { unit: opts.unit, command: opts.command, by: who, reason: opts.reason },
    },
    EXEC_DEADLINE_MS,
  );
  const now = ctx.now();
  if (!(await session.acquire(record, EXEC_DEADLINE_MS, now)))
    throw new NylError(
      problem('NYL-LEASE-HELD', `another run took the lease of ${env} first`, {
        exit: Exit.refused,
        fix: 'run again, or pass --wait-lease <duration>',
      }),
    );
  const env_: NodeJS.ProcessEnv = {
    ...process.env,
    NYL_ENVIRONMENT: env,
    NYL_UNIT: opts.unit,
    NYL_RUN: run,
    NYL_UID: prior.uid,
  };
  for (const [k, v] of Object.entries(prior.receipt?.outputs ?? {}))
    env_[referenceVariable({ unit: opts.unit, key: k })] = v;
  const r = await runProcess({
    argv: opts.command,
    cwd: ctx.repo.root,
    env: env_,
    timeoutMs: 24 * 3_600_000,
    cancellation: ctx.cancellation,
    echo: opts.echo !== false,
  });
  const output = masker.maskPiece(r.started ? r.tail.slice(-OUTPUT_KEPT) : `could not be started: ${r.startError}`);
  const at = isoTime(ctx.now());
  const next: ObservedUnit = {
    ...prior,
    lastRun: run,
    repairs: [
      ...(prior.repairs ?? []),
      {
        run,
        command: opts.command,
        by: who,
        ...(opts.reason ? { reason: opts.reason } : {}),
        at,
        exitCode: r.exitCode,
        output,
      },
    ].slice(-REPAIRS_KEPT),
  };
  const message = [
    `nyl: exec ${env} ${opts.unit} (${r.started ? `exit ${r.exitCode ?? r.signal}` : 'not started'})`,
    '',
    `unit: ${opts.unit}`,
    `command: ${JSON.stringify(opts.command)}`,
    `by: ${who}`,
    ...(opts.reason ? [`reason: ${JSON.stringify(opts.reason)}`] : []),
    `exitCode: ${r.exitCode ?? 'null'}`,
    '',
  ].join('\n');
  // A landing the disk refuses leaves the repair unrecorded: the run keeps its lease (a last write
  // that ended it would clear `executing`, the only word left that the repair ran).
  const { tips } = await land(session, env, opts.unit, () =>
    session.land(
      [
        {
          ref: state.refs.observed,
          old: state.tips.observed,
          files: observedFiles(state, new Map([[opts.unit, next]])),
          message,
        },
      ],
      ctx.now(),
      [],
      ownEntry(
        record,
        [
          {
            unit: opts.unit,
            kind: next.kind,
            result: r.exitCode === 0 ? 'executed' : 'failed',
            detail: '',
            durationMs: r.durationMs,
          },
        ],
        new Map([[FILES.runLog(opts.unit), Buffer.from(output)]]),
        ctx.now(),
        { exitCodes: r.exitCode === null ? undefined : new Map([[opts.unit, r.exitCode]]) },
      ),
    ),
  );
  const failed = r.exitCode !== 0;
  const exitText = !r.started ? 'not started' : String(r.exitCode ?? r.signal);
  return {
    operation: 'exec',
    environment: env,
    outcome: failed ? 'tool failed' : 'done',
    facts: [
      ['unit', opts.unit],
      ['run', run],
      ['exit', exitText],
      ['observed', tips.get(state.refs.observed) ?? ''],
    ],
    problems: failed
      ? [
          problem(
            'NYL-EXEC-FAILED',
            `${opts.command.join(' ')} ${!r.started ? `could not be started: ${r.startError}` : r.exitCode === null ? `was killed by ${r.signal}` : `exited with ${r.exitCode}`}`,
            {
              subject: opts.unit,
              exit: Exit.failed,
              fix: `its output is kept: \`nyl state show -e ${env} --unit ${opts.unit}\``,
            },
          ),
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
