import { leaseVerdict } from '../state/lease.js';
import { worstExit } from '../util/errors.js';
import { WHY_TEXT } from './decide.js';
import { evaluateAll } from './evaluate.js';
import type { RunReport, UnitRow } from './report.js';
import { previewImport } from './takeover.js';
import { loadEnvironment, type OpContext } from './workspace.js';

/** What a reconcile would do now, executing nothing and writing nothing. */
export async function plan(ctx: OpContext, opts: { environment: string }): Promise<RunReport> {
  const { cfg, sel, state: recorded } = await loadEnvironment(ctx, opts.environment);
  // Runs left behind are imported before anything executes: plan from the state they leave.
  const { state, problems } = previewImport(sel, recorded, leaseVerdict(recorded, ctx.now()), ctx.now());
  const evaluated = evaluateAll(sel, state);
  const rows: UnitRow[] = [];
  for (const e of evaluated.values()) {
    const ev = e.evaluation;
    const row = { unit: e.name, kind: e.kind };
    switch (ev.action) {
      case 'execute':
        rows.push({ ...row, result: 'execute', detail: WHY_TEXT[ev.why], executionKey: e.desired?.executionKey });
        break;
      case 'pending':
        rows.push({ ...row, result: 'maybe', detail: `executes if the outputs of ${ev.on.join(', ')} change` });
        break;
      case 'current':
        rows.push({ ...row, result: 'current', detail: '' });
        break;
      case 'wait':
        rows.push({ ...row, result: ev.state, detail: `${ev.reason}; waits for nyl recover` });
        break;
      case 'blocked':
        rows.push({ ...row, result: 'blocked', detail: ev.reason });
        break;
      case 'inspect':
        rows.push({
          ...row,
          result: 'inspect',
          detail: 'uncertain; asks its driver whether it was applied, executes if not',
        });
        break;
      case 'invalid':
        rows.push({ ...row, result: 'failed', detail: ev.reason });
        break;
    }
  }
  const n = rows.filter((r) => r.result === 'execute').length;
  const maybe = rows.filter((r) => r.result === 'maybe').length;
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
        `${n} to execute${maybe ? `, ${maybe} depending on outputs` : ''}, ${rows.length - n - maybe} unchanged`,
      ],
    ],
    desired: state.tips.desired,
    observed: state.tips.observed,
  };
}
