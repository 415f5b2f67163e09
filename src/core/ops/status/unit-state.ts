import { countsOf } from '../../changes/counts.js';
import { keyMatch } from '../../resolve/desired.js';
import type { Condition, ObservedUnit } from '../../state/documents.js';
import type { EnvState } from '../../state/read.js';
import { Exit, type Problem, problem } from '../../util/errors.js';
import { ADOPTED, driftOf, whyText } from '../evaluate/decide.js';
import type { EvaluatedUnit, Evaluation } from '../evaluate/evaluate.js';
import { uncertainProblem } from '../reconcile/task.js';
import type { StatusRow } from '../workspace/report.js';

/** What status says of one unit: its state and detail, and the problem that goes with it. */
interface Said {
  state: string;
  detail: string;
  problem?: Problem;
  drift?: StatusRow['drift'];
}

/** Whether the receipt is of the document the unit has now (a receipt of an earlier nyl is). */
function receiptWord(e: EvaluatedUnit): string {
  const key = e.observed?.receipt?.executionKey;
  if (!key) return 'none';
  if (!e.desired) return 'unknown';
  return keyMatch(e.desired, key, e.observed?.receipt?.files) !== 'different' ? 'current' : 'outdated';
}

/** A condition: uncertain (to import first when its run is not imported yet) or failed. */
function conditionSaid(env: string, name: string, c: Condition, recorded: EnvState): Said {
  if (c.state === 'uncertain') {
    const p = uncertainProblem(env, name, c.reason);
    // Before the import, a decision about the unit is refused: import first.
    if (recorded.runs.has(c.run))
      p.fix = `import run ${c.run} first (\`nyl recover -e ${env} --reason <text>\` or \`nyl reconcile -e ${env}\`); then ${p.fix}`;
    return { state: c.state, detail: c.reason, problem: p };
  }
  const p = problem('NYL-UNIT-FAILED', `unit ${name} failed in run ${c.run}: ${c.reason}`, {
    severity: 'warning',
    subject: name,
    exit: Exit.failed,
    fix:
      c.retryable === false
        ? `fix the cause, then run \`nyl recover -e ${env} --unit ${name} --retry --reason <text>\``
        : `fix the cause; the next \`nyl reconcile -e ${env}\` runs it again`,
  });
  return { state: c.state, detail: c.reason, problem: p };
}

const drifted = (ev: Evaluation) =>
  ev.action === 'drifted' || ((ev.action === 'execute' || ev.action === 'awaiting-approval') && ev.why === 'drift');

function driftSaid(env: string, name: string, ev: Evaluation, o: ObservedUnit | undefined): Said {
  const detail = driftOf(o) ?? '';
  const fix =
    ev.action === 'execute'
      ? `the next \`nyl reconcile -e ${env}\` repairs it`
      : ev.action === 'awaiting-approval'
        ? `approve its repair: \`nyl reconcile -e ${env} --approve ${name}\``
        : `driftRepair is manual: \`nyl reconcile -e ${env} --unit ${name} --reapply --reason <text>\``;
  const p = problem('NYL-UNIT-DRIFTED', `unit ${name} drifted: ${detail}`, {
    severity: 'warning',
    subject: name,
    exit: Exit.refused,
    fix,
  });
  const resources = o?.drift?.resources;
  const drift = resources?.length
    ? {
        counts: countsOf(resources.map(([, action]) => ({ action }))),
        resources: resources.map(([address, action]) => ({ address, action })),
      }
    : undefined;
  return { state: 'drifted', detail, problem: p, ...(drift ? { drift } : {}) };
}

/** What its evaluation says of a unit without a condition. */
function evaluationSaid(ev: Evaluation, receipt: string): Said {
  switch (ev.action) {
    case 'held':
      return { state: 'held', detail: ev.reason };
    case 'awaiting-approval':
      return { state: 'pending', detail: `awaiting approval: ${ev.reason}` };
    case 'execute':
      return { state: 'pending', detail: whyText(ev) };
    case 'pending':
      return { state: 'pending', detail: `inputs known after ${ev.on.join(', ')} executes` };
    case 'blocked':
      return { state: receipt === 'current' ? 'current' : 'pending', detail: ev.reason };
    case 'invalid':
      return { state: 'pending', detail: ev.reason };
    case 'current':
      return { state: 'current', detail: ev.adopt ? ADOPTED.next : '' };
    default:
      return { state: 'current', detail: '' };
  }
}

/** A unit of the configuration as status shows it: its row, and its problem (uncertain, failed, drifted). */
export function unitState(env: string, e: EvaluatedUnit, recorded: EnvState): { row: StatusRow; problem?: Problem } {
  const o = e.observed;
  // A unit whose upstream executes first is shown by what its own state says (drift included).
  const ev = e.evaluation.action === 'pending' && e.evaluation.regardless ? e.evaluation.regardless : e.evaluation;
  const receipt = receiptWord(e);
  const said = o?.condition
    ? conditionSaid(env, e.name, o.condition, recorded)
    : drifted(ev)
      ? driftSaid(env, e.name, ev, o)
      : evaluationSaid(ev, receipt);
  const row = {
    unit: e.name,
    kind: e.kind,
    state: said.state,
    receipt,
    lastRun: o?.lastRun ?? '',
    detail: said.detail,
    ...(said.drift ? { drift: said.drift } : {}),
  };
  return { row, ...(said.problem ? { problem: said.problem } : {}) };
}
