import { holderText, leaseVerdict } from '../state/lease.js';
import { Exit, type Problem, problem, worstExit } from '../util/errors.js';
import { WHY_TEXT } from './decide.js';
import { evaluateAll } from './evaluate.js';
import { uncertainProblem } from './reconcile.js';
import type { StatusReport, StatusRow } from './report.js';
import { loadEnvironment, type OpContext } from './workspace.js';

/** The environment's state as recorded, compared with the configuration at the source commit. */
export async function status(ctx: OpContext, opts: { environment: string }): Promise<StatusReport> {
  const { cfg, sel, state } = await loadEnvironment(ctx, opts.environment);
  const env = opts.environment;
  const evaluated = evaluateAll(sel, state);
  const rows: StatusRow[] = [];
  const problems: Problem[] = [];
  for (const e of evaluated.values()) {
    const o = e.observed;
    const receiptKey = o?.receipt?.executionKey;
    const receipt = !receiptKey
      ? 'none'
      : e.desired
        ? receiptKey === e.desired.executionKey
          ? 'current'
          : 'outdated'
        : 'unknown';
    const lastRun = o?.condition?.run ?? o?.receipt?.run ?? o?.lastRun ?? '';
    let state = 'current';
    let detail = '';
    const c = o?.condition;
    if (c) {
      state = c.state;
      detail = c.reason;
      if (c.state === 'uncertain') problems.push(uncertainProblem(env, e.name, c.reason));
      else
        problems.push(
          problem('NYL-UNIT-FAILED', `unit ${e.name} failed in run ${c.run}: ${c.reason}`, {
            severity: 'warning',
            subject: e.name,
            exit: Exit.failed,
            fix:
              c.retryable === false
                ? `fix the cause, then run \`nyl recover -e ${env} --unit ${e.name} --retry --reason <text>\``
                : `fix the cause; the next \`nyl reconcile -e ${env}\` runs it again`,
          }),
        );
    } else if (e.evaluation.action === 'execute') {
      state = 'pending';
      detail = WHY_TEXT[e.evaluation.why];
    } else if (e.evaluation.action === 'pending') {
      state = 'pending';
      detail = `inputs known after ${e.evaluation.on.join(', ')} executes`;
    } else if (e.evaluation.action === 'blocked') {
      state = receipt === 'current' ? 'current' : 'pending';
      detail = e.evaluation.reason;
    } else if (e.evaluation.action === 'invalid') {
      state = 'pending';
      detail = e.evaluation.reason;
    }
    rows.push({ unit: e.name, kind: e.kind, state, receipt, lastRun, detail });
  }
  for (const [name, o] of state.observed) {
    if (sel.units.has(name)) continue;
    rows.push({
      unit: name,
      kind: o.kind,
      state: 'removed',
      receipt: o.receipt ? 'kept' : 'none',
      lastRun: o.lastRun,
      detail: 'no longer in the configuration; its recorded state is kept',
    });
  }
  const v = leaseVerdict(state, ctx.now());
  const lease =
    v.kind === 'held'
      ? { state: 'held', run: v.run, holder: holderText(v.holder), deadline: v.deadline }
      : state.lease
        ? {
            state: state.lease.state,
            run: state.lease.run,
            holder: holderText(state.lease.holder),
            deadline: state.lease.deadline,
          }
        : undefined;
  return {
    operation: 'status',
    environment: env,
    source: cfg.source,
    desired: state.tips.desired,
    observed: state.tips.observed,
    lease,
    rows,
    problems,
    exit: worstExit(problems.map((p) => p.exit)),
  };
}
