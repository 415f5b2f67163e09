import type { Selection } from '../resolve/select.js';
import { leaseVerdict } from '../state/lease.js';
import type { EnvState } from '../state/read.js';
import { sha256Key } from '../util/canonical.js';
import { Exit, type Problem, problem, worstExit } from '../util/errors.js';
import { WHY_TEXT } from './decide.js';
import { type Evaluation, evaluateAll } from './evaluate.js';
import type { RunReport, UnitRow } from './report.js';
import { previewImport } from './takeover.js';
import { loadEnvironment, type OpContext } from './workspace.js';

export interface Plan {
  rows: UnitRow[];
  problems: Problem[];
  /** Names source, desired and observed state and the plan itself: any change makes it stale. */
  token: string;
}

const short = (oid: string | undefined) => (oid ?? 'none').slice(0, 12);

/** The plan as things stand (dead runs imported first, as a reconcile would). */
export function computePlan(sel: Selection, recorded: EnvState, source: string, now: number): Plan {
  const { state, problems } = previewImport(sel, recorded, leaseVerdict(recorded, now), now);
  const rows: UnitRow[] = [];
  for (const e of evaluateAll(sel, state).values()) {
    const ev = e.evaluation;
    const row = { unit: e.name, kind: e.kind, executionKey: e.desired?.executionKey };
    if (ev.action === 'pending' && !ev.regardless) {
      rows.push({ ...row, result: 'maybe', detail: `executes if the outputs of ${ev.on.join(', ')} change` });
      continue;
    }
    // A unit whose upstream executes first, but whose own state decides already, is shown as that.
    const d = ev.action === 'pending' ? (ev.regardless as Exclude<typeof ev.regardless, undefined>) : ev;
    const after = ev.action === 'pending' ? ` (after ${ev.on.join(', ')})` : '';
    rows.push({ ...row, ...planRow(d), ...(after ? { detail: `${planRow(d).detail}${after}` } : {}) });
  }
  const digest = sha256Key(rows.map((r) => [r.unit, r.result, r.executionKey ?? ''])).slice(7, 19);
  const token = `v1.${short(source)}.${short(recorded.tips.desired)}.${short(recorded.tips.observed)}.${digest}`;
  return { rows, problems, token };
}

/** Refuses a plan token that no longer names the state: says what changed (NYL-PLAN-STALE, exit 2). */
export function checkToken(env: string, given: string, current: Plan): Problem | undefined {
  if (given === current.token) return undefined;
  const [v, src, des, obs, digest] = given.split('.');
  const [, src2, des2, obs2] = current.token.split('.');
  let what = 'the plan differs';
  if (v !== 'v1' || digest === undefined) what = 'it is not a plan token';
  else if (src !== src2) what = `the source changed (${src} → ${src2})`;
  else if (des !== des2) what = `the desired state changed (${des} → ${des2})`;
  else if (obs !== obs2) what = `the observed state changed (${obs} → ${obs2})`;
  return problem('NYL-PLAN-STALE', `plan ${given} is stale: ${what}`, {
    subject: env,
    exit: Exit.refused,
    fix: `review the plan again with \`nyl plan -e ${env}\` and pass its new token to \`nyl reconcile -e ${env} --plan <token>\``,
  });
}

/** What a reconcile would do now, executing nothing and writing nothing. */
export async function plan(ctx: OpContext, opts: { environment: string }): Promise<RunReport> {
  const { cfg, sel, state } = await loadEnvironment(ctx, opts.environment);
  const { rows, problems, token } = computePlan(sel, state, cfg.source, ctx.now());
  const n = rows.filter((r) => r.result === 'execute').length;
  const maybe = rows.filter((r) => r.result === 'maybe').length;
  const approval = rows.filter((r) => r.result === 'awaiting-approval').length;
  return {
    operation: 'plan',
    environment: opts.environment,
    source: cfg.source,
    rows,
    problems,
    exit: worstExit(problems.map((p) => p.exit)),
    extra: [
      [
        'plan',
        `${n} to execute${maybe ? `, ${maybe} depending on outputs` : ''}${approval ? `, ${approval} awaiting approval` : ''}, ${rows.length - n - maybe - approval} unchanged`,
      ],
      ['token', token],
    ],
    desired: state.tips.desired,
    observed: state.tips.observed,
  };
}

/** A plan row's result and detail for a decision (as reconcile would report the unit). */
function planRow(d: Exclude<Evaluation, { action: 'pending' }>): { result: string; detail: string } {
  switch (d.action) {
    case 'execute':
      return { result: 'execute', detail: WHY_TEXT[d.why] };
    case 'current':
      return { result: 'current', detail: '' };
    case 'wait':
      return { result: d.state, detail: `${d.reason}; waits for nyl recover` };
    case 'blocked':
      return { result: 'blocked', detail: d.reason };
    case 'inspect':
      return { result: 'inspect', detail: 'uncertain; asks its driver whether it was applied, executes if not' };
    case 'invalid':
      return { result: 'failed', detail: d.reason };
    case 'awaiting-approval':
      return { result: 'awaiting-approval', detail: d.reason };
    case 'held':
      return { result: 'held', detail: d.reason };
    case 'drifted':
      return { result: 'drifted', detail: d.reason };
  }
}
