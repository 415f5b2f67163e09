import type { EnvState, Unreadable } from '../../state/read.js';
import { Exit, NylError, type Problem, problem } from '../../util/errors.js';

/** How fixes name the place state lives: `--local`, or the remote they push to. */
export interface Where {
  environment: string;
  local: boolean;
  remote: string;
}

export function subjectOf(u: Unreadable): string {
  return u.file ? `${u.ref}:${u.file}` : u.ref;
}

/** The command that puts a ref back at the parent of its tip (the state before the write that broke it). */
function restoreCommand(u: Unreadable, w: Where): string {
  return w.local
    ? `\`git update-ref ${u.ref} ${u.tip}~1 ${u.tip}\``
    : `\`git push --force-with-lease=${u.ref}:${u.tip} ${w.remote} ${u.tip}~1:${u.ref}\``;
}

/**
 * NYL-STATE-UNREADABLE (<ref>:<file>): what cannot be read and why, and a way out that works —
 * inspect it, put the ref back, forget the one unit, or break the lease (which sets run refs aside).
 */
export function unreadableProblem(u: Unreadable, w: Where): Problem {
  const local = w.local ? ' --local' : '';
  const inspect = u.file ? `\`git show ${u.tip}:${u.file}\`` : `\`git cat-file -t ${u.tip}\``;
  const notCommit = /not a commit|missing from|no readable tree/.test(u.cause);
  const restore = notCommit
    ? `point ${u.ref} back at a good commit of its history`
    : `restore the previous tip with ${restoreCommand(u, w)}`;
  let fix: string;
  if (u.scope === 'lease')
    fix = `inspect it with ${inspect}; \`nyl lease break -e ${w.environment} --reason <text>${local}\` replaces it and records what it replaced; or ${restore}`;
  else if (u.scope === 'run' || u.scope === 'evidence')
    fix = `inspect it with ${inspect}; \`nyl lease break -e ${w.environment} --reason <text>${local}\` sets it aside to ${u.ref.replace(/\/(runs|evidence)\//, '/unreadable/')} and records it; or ${restore}`;
  else if (u.unit)
    fix = `inspect it with ${inspect}; ${restore}, or drop the unit's record with \`nyl state forget -e ${w.environment} --unit ${u.unit} --reason <text>${local}\` (the next reconcile then executes it as a new unit)`;
  else fix = `inspect it with ${inspect}; ${restore}`;
  return problem(
    'NYL-STATE-UNREADABLE',
    `${subjectOf(u)} cannot be read: ${u.cause}\nnyl does not act on state it cannot read: nothing was executed and nothing was written over it`,
    { subject: subjectOf(u), exit: Exit.failed, fix },
  );
}

/** Refuses to act on an environment with state that cannot be read, except what `tolerate` allows. */
export function refuseUnreadable(state: EnvState, w: Where, tolerate: (u: Unreadable) => boolean = () => false): void {
  const bad = state.unreadable.filter((u) => !tolerate(u));
  if (bad.length) throw new NylError(bad.map((u) => unreadableProblem(u, w)));
}
