import type { LeaseVerdict } from '../state/lease.js';
import { holderText } from '../state/lease.js';
import { Exit, type Problem, problem } from '../util/errors.js';

/** The seed's NYL-LEASE-HELD, naming run, operation, holder and deadline. */
export function leaseHeldProblem(env: string, v: Extract<LeaseVerdict, { kind: 'held' }>): Problem {
  return problem(
    'NYL-LEASE-HELD',
    `${env} is held by run ${v.run} (${v.operation}) by ${holderText(v.holder)}, until ${v.deadline}`,
    {
      exit: Exit.refused,
      fix: 'wait for that run to finish, pass --wait-lease <duration>, or run `nyl lease break` if its runner is gone',
    },
  );
}
