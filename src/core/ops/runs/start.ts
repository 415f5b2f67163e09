import { hostname } from 'node:os';
import { watchdogStateFile } from '../../proc/watchdog.js';
import type { RunRecord } from '../../state/documents.js';
import { currentHolder, type LeaseVerdict } from '../../state/lease.js';
import type { EnvState } from '../../state/read.js';
import { RunSession } from '../../state/run-session.js';
import { isoTime } from '../../util/time.js';
import { uuid7 } from '../../util/uuid7.js';
import type { OpContext } from '../workspace/workspace.js';

/**
 * A new run of an operation: its id, its session (the writes) and its run record, ready for the
 * first write. Taking over a broken lease, the run puts it back if it ends without landing an
 * import, and carries the break in its record so a later importer still records it.
 */
export async function startRun(
  ctx: OpContext,
  state: EnvState,
  verdict: LeaseVerdict,
  operation: string,
  fields: Pick<RunRecord, 'source' | 'state' | 'phase' | 'executing'> & Partial<Pick<RunRecord, 'wave' | 'exec'>>,
  deadlineMs: number,
): Promise<{ run: string; session: RunSession; record: RunRecord }> {
  const run = uuid7();
  const holder = currentHolder();
  const session = new RunSession(ctx.repo, ctx.backend, state, run, operation, holder, await ctx.repo.signature());
  const lease = state.lease;
  const broken = verdict.kind === 'broken' && lease?.broken ? lease : undefined;
  if (broken) session.restoreOnRelease = broken;
  const now = isoTime(ctx.now());
  const record: RunRecord = {
    schema: 'nyl.run/v1',
    run,
    environment: state.environment,
    operation,
    holder,
    startedAt: now,
    updatedAt: now,
    deadline: isoTime(ctx.now() + deadlineMs),
    ...(state.tips.observed ? { basedOn: state.tips.observed } : {}),
    ...fields,
    states: [{ state: fields.state, at: now }],
    ...(broken?.broken ? { takenOver: { run: broken.run, leaseBroken: broken.broken } } : {}),
    supervisor: {
      host: hostname(),
      pid: process.pid,
      ...(watchdogStateFile() ? { groupsFile: watchdogStateFile() } : {}),
    },
  };
  return { run, session, record };
}
