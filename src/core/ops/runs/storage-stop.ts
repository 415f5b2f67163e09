import { STATE_WRITE_FAILED } from '../../git/storage-failure.js';
import type { RunSession } from '../../state/run-session.js';
import { Exit, NylError, type Problem } from '../../util/errors.js';
import { withOffset } from '../../util/time.js';

export interface StoppedRun {
  session: RunSession;
  environment: string;
  /** A last write that ends the run as failed (what finished recorded, the lease released); none: the run keeps its lease. */
  end?: () => Promise<void>;
  /** Units whose effects this run caused that no checkpoint on its run ref holds (an exec's repair). */
  ran?: string[];
  /** The last write failed for another reason (the lease lost): what the run does about it. */
  otherwise?: (e: unknown) => Promise<void>;
  /** The command that goes on from what the run left (default reconcile). */
  command?: 'reconcile' | 'teardown';
}

/**
 * A run that took the lease and then met a write the file system refused (reconcile, teardown,
 * exec): it tries one last write that ends it; the error it reports says what it left behind —
 * the lease released with what finished recorded, or the lease held until its deadline with the
 * units it ran since its last landed write not recorded (exit 4: the next run finds them
 * uncertain) — and the command that goes on from there.
 */
export async function stoppedByStorage(e: NylError, run: StoppedRun): Promise<NylError> {
  const p = e.problems.find((x) => x.code === STATE_WRITE_FAILED) as Problem;
  const said = {
    p,
    remedy: p.fix?.replace(/, then run the command again$/, '') ?? 'make room',
    next: `\`nyl ${run.command ?? 'reconcile'} -e ${run.environment}\``,
  };
  const ended = run.end
    ? await run.end().then(
        () => 'released' as const,
        (x: unknown) => x,
      )
    : 'kept';
  if (ended === 'released') return released(run, said);
  if (ended !== 'kept' && !(ended instanceof NylError && ended.problems.some((x) => x.code === STATE_WRITE_FAILED))) {
    // Its last write met something else (the lease lost, the remote gone dark): those words follow.
    await run.otherwise?.(ended);
    if (!(ended instanceof NylError)) throw ended;
    return new NylError([{ ...p, fix: said.remedy }, ...ended.problems]);
  }
  return held(run, said);
}

interface Said {
  p: Problem;
  remedy: string;
  next: string;
}

/** The last write landed: what finished is on the run ref, the lease free. */
function released(run: StoppedRun, { p, remedy, next }: Said): NylError {
  return new NylError({
    ...p,
    message: `${p.message}; run ${run.session.run} stopped; a last write recorded what it finished on its run ref and released the lease, and the next ${run.command ?? 'reconcile'} imports it`,
    fix: `${remedy}, then ${next}`,
  });
}

/** No last write: the lease is kept, and what ran (or never started) since the last landed write is named. */
function held(run: StoppedRun, { p, remedy, next }: Said): NylError {
  const { session, environment: env } = run;
  const ran = [...new Set([...(run.ran ?? []), ...session.unrecordedUnits()])].sort();
  // Listed as executing by the last landed write, never started (a cancel, the heartbeat's failure): uncertain too.
  const unstarted = session.landedExecuting().filter((u) => !ran.includes(u) && !session.checkpointed(u));
  const until = session.heldUntil ? withOffset(session.heldUntil) : 'its deadline';
  const parts: string[] = [];
  if (ran.length)
    parts.push(
      `${count(ran.length)} it ran after its last write (${listed(ran)}) ${ran.length === 1 ? 'is' : 'are'} not recorded`,
    );
  if (unstarted.length)
    parts.push(`${count(unstarted.length)} it listed as executing never started (${listed(unstarted)})`);
  const all = ran.length + unstarted.length;
  const lost = all ? `; ${parts.join(', and ')}: the next run finds ${all === 1 ? 'it' : 'them'} uncertain` : '';
  const retry = unstarted.length
    ? `; \`nyl recover -e ${env} --unit <unit> --retry --reason "never started"\` is safe for those that never started`
    : '';
  return new NylError({
    ...p,
    message: `${p.message}; run ${session.run} stopped and holds the lease of ${env} until ${until}${lost}`,
    exit: all ? Exit.uncertain : p.exit,
    fix: `${remedy}, then \`nyl lease break -e ${env} --reason "its writes failed"\` and ${next} (or ${next} after ${until})${retry}`,
  });
}

const count = (n: number) => `${n} unit${n === 1 ? '' : 's'}`;

/** Up to five names, then how many more. */
function listed(names: string[]): string {
  return names.length <= 5 ? names.join(', ') : `${names.slice(0, 5).join(', ')} and ${names.length - 5} more`;
}
