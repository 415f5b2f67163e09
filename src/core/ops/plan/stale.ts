import { Exit, type Problem, problem } from '../../util/errors.js';
import type { UnitRow } from '../workspace/report.js';
import type { Plan } from './compute.js';
import { keptKey } from './kept.js';
import { tokenParts } from './token.js';

/** Refuses a plan token that no longer names the state: says what changed (NYL-PLAN-STALE, exit 2). */
export function checkToken(
  env: string,
  token: string,
  current: Plan,
  /** The rows the token was made for, when known (a PR comment keeps them): the changed units are named. */
  givenRows?: Pick<UnitRow, 'unit' | 'result' | 'executionKey'>[],
): Problem | undefined {
  // The resource part is checked once the units are planned again (reconcile/reviewed-changes.ts).
  const given = tokenParts(token).unit;
  if (given === current.token) return undefined;
  const [v, des, obs, digest] = given.split('.');
  const [, des2, obs2] = current.token.split('.');
  let what = 'what would run differs';
  if (v === 'v1') what = 'it was made by an older nyl';
  else if (v !== 'v2' || digest === undefined) what = 'it is not a plan token';
  else if (des !== des2) what = `the desired state changed (${des} → ${des2})`;
  else if (obs !== obs2) what = `the observed state changed (${obs} → ${obs2})`;
  if (givenRows) {
    // Kept rows carry short digests of their keys (a PR comment has no room for whole ones).
    const short = givenRows.some((r) => r.executionKey && !r.executionKey.startsWith('sha256:'));
    const now = new Map(current.rows.map((r) => [r.unit, short ? { ...r, executionKey: keptKey(r.executionKey) } : r]));
    const before = new Map(givenRows.map((r) => [r.unit, r]));
    const changed = [...new Set([...now.keys(), ...before.keys()])].filter((u) => {
      const a = before.get(u);
      const b = now.get(u);
      return !a || !b || a.result !== b.result || (a.executionKey ?? '') !== (b.executionKey ?? '');
    });
    if (changed.length) what += `; units whose rows changed: ${changed.join(', ')}`;
  } else if (what === 'what would run differs') what += `; now it would execute: ${executing(current)}`;
  // A recovery plan's token is bound to its selection: the fix repeats it.
  return staleProblem(env, token, what, current);
}

/** NYL-PLAN-STALE (exit 2): the plan changed; the fix repeats a recovery plan's selection. */
export function staleProblem(env: string, token: string, what: string, current: Pick<Plan, 'recovery'>): Problem {
  const flags = current.recovery ? ` ${current.recovery.why}` : '';
  const reason = current.recovery?.why.includes('--from') ? ' --reason "…"' : '';
  return problem('NYL-PLAN-STALE', `plan ${token} is stale: ${what}`, {
    subject: env,
    exit: Exit.refused,
    fix: `review the plan again with \`nyl plan -e ${env}${flags}\` and pass its new token to \`nyl reconcile -e ${env}${flags}${reason} --plan <token>\``,
  });
}

/** The units a plan executes now (and those that may), for a token that cannot say which rows changed. */
function executing(p: Plan): string {
  const of = (result: string) => p.rows.filter((r) => r.result === result).map((r) => r.unit);
  const [run, maybe] = [of('execute'), of('maybe')];
  if (!run.length && !maybe.length) return 'nothing';
  return [run.join(', '), maybe.length ? `maybe ${maybe.join(', ')}` : ''].filter(Boolean).join('; ');
}
