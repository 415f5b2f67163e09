import { keyMatch } from '../../resolve/desired.js';
import type { Selection } from '../../resolve/select.js';
import { dependantsOf } from '../../resolve/select.js';
import { clockSkewProblems, holderText, leaseVerdict } from '../../state/lease.js';
import type { EnvState } from '../../state/read.js';
import { Exit, type Problem, problem, worstExit } from '../../util/errors.js';
import { ADOPTED, driftOf, whyText } from '../evaluate/decide.js';
import { evaluateAll } from '../evaluate/evaluate.js';
import { promotionGate } from '../judge/promotion.js';
import { uncertainProblem } from '../reconcile/reconcile.js';
import { lateCheckpoints, previewImport } from '../recovery/takeover.js';
import type { StatusReport, StatusRow } from '../workspace/report.js';
import { unitsNamed } from '../workspace/unit-names.js';
import { unreadableProblem } from '../workspace/unreadable.js';
import { loadEnvironment, type OpContext, whereOf } from '../workspace/workspace.js';

/** The environment's state as recorded, compared with the configuration at the source commit. */
export async function status(ctx: OpContext, opts: { environment: string; units?: string[] }): Promise<StatusReport> {
  // Status reports what it can read next to what it cannot: every unreadable ref or document is an error.
  const { cfg, sel, state: recorded, unpublished } = await loadEnvironment(ctx, opts.environment, () => true);
  const env = opts.environment;
  const problems: Problem[] = recorded.unreadable.map((u) => unreadableProblem(u, whereOf(ctx, env)));
  const unreadable = unreadableUnits(recorded, sel);
  const v = leaseVerdict(recorded, ctx.now());
  // Runs left behind and not imported yet: show what the import will record, and say so.
  const { state, problems: unimported } = previewImport(sel, recorded, v, ctx.now());
  problems.push(...unimported);
  const evaluated = evaluateAll(sel, state);
  const rows: StatusRow[] = [];
  for (const e of evaluated.values()) {
    const o = e.observed;
    // A unit whose upstream executes first is shown by what its own state says (drift included).
    const ev = e.evaluation.action === 'pending' && e.evaluation.regardless ? e.evaluation.regardless : e.evaluation;
    const receiptKey = o?.receipt?.executionKey;
    const receipt = !receiptKey
      ? 'none'
      : e.desired
        ? keyMatch(e.desired, receiptKey, o?.receipt?.files) !== 'different'
          ? 'current'
          : 'outdated'
        : 'unknown';
    const lastRun = o?.lastRun ?? '';
    let stateName = 'current';
    let detail = '';
    const c = o?.condition;
    if (c) {
      stateName = c.state;
      detail = c.reason;
      if (c.state === 'uncertain') {
        const p = uncertainProblem(env, e.name, c.reason);
        // Before the import, a decision about the unit is refused: import first.
        if (recorded.runs.has(c.run))
          p.fix = `import run ${c.run} first (\`nyl recover -e ${env} --reason <text>\` or \`nyl reconcile -e ${env}\`); then ${p.fix}`;
        problems.push(p);
      } else
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
    } else if (ev.action === 'held') {
      stateName = 'held';
      detail = ev.reason;
    } else if (
      ev.action === 'drifted' ||
      (ev.action === 'execute' && ev.why === 'drift') ||
      (ev.action === 'awaiting-approval' && ev.why === 'drift')
    ) {
      stateName = 'drifted';
      detail = driftOf(o) ?? '';
      problems.push(
        problem('NYL-UNIT-DRIFTED', `unit ${e.name} drifted: ${detail}`, {
          severity: 'warning',
          subject: e.name,
          exit: Exit.refused,
          fix:
            ev.action === 'execute'
              ? `the next \`nyl reconcile -e ${env}\` repairs it`
              : ev.action === 'awaiting-approval'
                ? `approve its repair: \`nyl reconcile -e ${env} --approve ${e.name}\``
                : `driftRepair is manual: \`nyl reconcile -e ${env} --unit ${e.name} --reapply --reason <text>\``,
        }),
      );
    } else if (ev.action === 'awaiting-approval') {
      stateName = 'pending';
      detail = `awaiting approval: ${ev.reason}`;
    } else if (ev.action === 'execute') {
      stateName = 'pending';
      detail = whyText(ev);
    } else if (ev.action === 'pending') {
      stateName = 'pending';
      detail = `inputs known after ${ev.on.join(', ')} executes`;
    } else if (ev.action === 'blocked') {
      stateName = receipt === 'current' ? 'current' : 'pending';
      detail = ev.reason;
    } else if (ev.action === 'invalid') {
      stateName = 'pending';
      detail = ev.reason;
    } else if (ev.action === 'current' && ev.adopt) detail = ADOPTED.next;
    const bad = unreadable.get(e.name);
    if (bad)
      rows.push({ unit: e.name, kind: e.kind, state: 'unreadable', receipt: 'unknown', lastRun: '', detail: bad });
    else rows.push({ unit: e.name, kind: e.kind, state: stateName, receipt, lastRun, detail });
  }
  for (const [name, o] of state.observed) {
    if (sel.units.has(name)) continue;
    if (o.condition?.state === 'uncertain') problems.push(uncertainProblem(env, name, o.condition.reason));
    rows.push({
      unit: name,
      kind: o.kind,
      state: o.condition?.state ?? 'removed',
      receipt: o.receipt ? 'kept' : 'none',
      lastRun: o.lastRun,
      detail: o.condition?.reason ?? 'no longer in the configuration; its recorded state is kept',
    });
  }
  problems.push(...lateCheckpoints(recorded), ...clockSkewProblems(recorded, ctx.now()));
  if (unpublished.length)
    problems.push(
      problem(
        'NYL-LOCAL-UNPUBLISHED',
        `this repository holds state written with --local that the remote lacks: ${unpublished.join(', ')}`,
        {
          severity: 'warning',
          subject: env,
          exit: Exit.ok,
          fix: 'online commands that write refuse until it is published or set aside; see `nyl status --local`',
        },
      ),
    );
  const lease =
    v.kind === 'held'
      ? { state: 'held', run: v.run, holder: holderText(v.holder), deadline: v.deadline }
      : recorded.lease
        ? {
            state: recorded.lease.state,
            run: recorded.lease.run,
            holder: holderText(recorded.lease.holder),
            deadline: recorded.lease.deadline,
          }
        : undefined;
  const promotion = sel.promotion ? await promotionGate(ctx, cfg, sel, cfg.source) : undefined;
  if (opts.units?.length) onlyUnits(new Set(unitsNamed(sel, opts.units, state)), rows, problems);
  return {
    operation: 'status',
    environment: env,
    source: cfg.source,
    ...(promotion ? { promotion } : {}),
    desired: recorded.tips.desired,
    observed: recorded.tips.observed,
    lease,
    rows,
    problems,
    exit: worstExit(problems.map((p) => p.exit)),
  };
}

const UNIT_CODES = new Set(['NYL-UNIT-UNCERTAIN', 'NYL-UNIT-FAILED', 'NYL-UNIT-DRIFTED']);

/** `status --unit U`: the rows of the units named (a group: its instances) and their own problems. */
function onlyUnits(wanted: Set<string>, rows: StatusRow[], problems: Problem[]): void {
  const keep = <T>(list: T[], ok: (x: T) => boolean) => list.splice(0, list.length, ...list.filter(ok));
  keep(rows, (r) => wanted.has(r.unit));
  keep(problems, (p) => !UNIT_CODES.has(p.code) || wanted.has(p.subject ?? ''));
}

/**
 * Units whose recorded state cannot be read, with why: their own document, or the whole observed
 * ref; and every unit that needs one of them (its inputs would come from that state).
 */
function unreadableUnits(state: EnvState, sel: Selection): Map<string, string> {
  const out = new Map<string, string>();
  const whole = state.unreadable.find((u) => u.scope === 'observed' && !u.unit);
  for (const u of state.unreadable)
    if (u.scope === 'observed' && u.unit) out.set(u.unit, `its observed document cannot be read: ${u.cause}`);
  if (whole) for (const n of sel.units.keys()) out.set(n, `the observed ref cannot be read: ${whole.cause}`);
  for (const bad of [...out.keys()])
    for (const d of dependantsOf(sel.units, bad))
      if (!out.has(d)) out.set(d, `needs ${bad}, whose recorded state cannot be read`);
  return out;
}
