import type { LeaseVerdict } from '../../state/lease.js';
import { CLOCK_SKEW_MS, holderText } from '../../state/lease.js';
import { Exit, type Problem, problem } from '../../util/errors.js';
import { withOffset } from '../../util/time.js';

/** The seed's NYL-LEASE-HELD, naming run, operation, holder and deadline. */
export function leaseHeldProblem(env: string, v: Extract<LeaseVerdict, { kind: 'held' }>, now = Date.now()): Problem {
  // Deadlines come from the holder's clock: just past it, the lease still holds for the skew margin.
  const past = now - Date.parse(v.deadline);
  const skew =
    past > CLOCK_SKEW_MS
      ? `\nits deadline passed ${Math.round(past / 1000)}s ago by this machine's clock, but its holder still renews the lease: it is alive`
      : past > 0
        ? `\nits deadline passed ${Math.round(past / 1000)}s ago; runners' clocks may differ, so it holds ${CLOCK_SKEW_MS / 1000}s longer`
        : '';
  return problem(
    'NYL-LEASE-HELD',
    `${env} is held by run ${v.run} (${v.operation}) by ${holderText(v.holder)}, until ${withOffset(v.deadline)}${skew}`,
    {
      exit: Exit.refused,
      fix: 'wait for that run to finish, pass --wait-lease <duration>, or run `nyl lease break` if its runner is gone',
    },
  );
}
