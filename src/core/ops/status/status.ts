import type { Selection } from '../../resolve/select.js';
import { dependantsOf } from '../../resolve/select.js';
import { clockSkewProblems, holderText, type LeaseVerdict, leaseVerdict } from '../../state/lease.js';
import type { EnvState } from '../../state/read.js';
import { Exit, type Problem, problem, worstExit } from '../../util/errors.js';
import { evaluateAll } from '../evaluate/evaluate.js';
import { promotionGate } from '../judge/promotion.js';
import { uncertainProblem } from '../reconcile/task.js';
import { lateCheckpoints, previewImport } from '../recovery/takeover.js';
import type { StatusReport, StatusRow } from '../workspace/report.js';
import { unitsNamed } from '../workspace/unit-names.js';
import { unreadableProblem } from '../workspace/unreadable.js';
import { type Loaded, loadEnvironment, type OpContext, whereOf } from '../workspace/workspace.js';
import { recordedUrl } from './environment-url.js';
import { unitState } from './unit-state.js';

/**
 * The environment's state as recorded, compared with the configuration at the source commit.
 * Phases: read (what cannot be read is reported, not refused) → the import runs left behind would
 * make → each unit → units that left the configuration → the environment's problems → the report.
 */
export async function status(
  ctx: OpContext,
  /** `loaded`: the environment as a caller read it already (tolerating what cannot be read, as status does). */
  opts: { environment: string; units?: string[]; loaded?: Loaded },
): Promise<StatusReport> {
  const loaded = opts.loaded ?? (await loadEnvironment(ctx, opts.environment, () => true));
  const { cfg, sel, state: recorded, unpublished } = loaded;
  const env = opts.environment;
  const problems: Problem[] = recorded.unreadable.map((u) => unreadableProblem(u, whereOf(ctx, env)));
  const v = leaseVerdict(recorded, ctx.now());
  // Runs left behind and not imported yet: show what the import will record, and say so.
  const { state, problems: unimported } = previewImport(sel, recorded, v, ctx.now());
  problems.push(...unimported);
  const rows = [...unitRows(env, sel, state, recorded, problems), ...removedRows(env, sel, state, problems)];
  problems.push(...lateCheckpoints(recorded), ...clockSkewProblems(recorded, ctx.now()));
  if (unpublished.length) problems.push(unpublishedWarning(env, unpublished));
  const promotion = sel.promotion ? await promotionGate(ctx, cfg, sel, cfg.source) : undefined;
  if (opts.units?.length) onlyUnits(new Set(unitsNamed(sel, opts.units, state)), rows, problems);
  const url = recordedUrl(sel, recorded.observed);
  return {
    operation: 'status',
    environment: env,
    source: cfg.source,
    ...(promotion ? { promotion } : {}),
    desired: recorded.tips.desired,
    observed: recorded.tips.observed,
    lease: leaseOf(v, recorded),
    rows,
    problems,
    exit: worstExit(problems.map((p) => p.exit)),
    ...(url.url !== undefined ? { url: url.url } : {}),
    ...(url.missing !== undefined ? { urlMissing: url.missing } : {}),
  };
}

/** Each unit of the configuration; one whose recorded state cannot be read says so. */
function unitRows(env: string, sel: Selection, state: EnvState, recorded: EnvState, problems: Problem[]): StatusRow[] {
  const unreadable = unreadableUnits(recorded, sel);
  return [...evaluateAll(sel, state).values()].map((e) => {
    const { row, problem: p } = unitState(env, e, recorded);
    if (p) problems.push(p);
    const bad = unreadable.get(e.name);
    return bad ? { ...row, state: 'unreadable', receipt: 'unknown', lastRun: '', detail: bad } : row;
  });
}

/** Units that left the configuration: their recorded state is kept (an uncertain one says so). */
function removedRows(env: string, sel: Selection, state: EnvState, problems: Problem[]): StatusRow[] {
  const rows: StatusRow[] = [];
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
  return rows;
}

function unpublishedWarning(env: string, unpublished: string[]): Problem {
  return problem(
    'NYL-LOCAL-UNPUBLISHED',
    `this repository holds state written with --local that the remote lacks: ${unpublished.join(', ')}`,
    {
      severity: 'warning',
      subject: env,
      exit: Exit.ok,
      fix: 'online commands that write refuse until it is published or set aside; see `nyl status --local`',
    },
  );
}

/** The lease as status shows it: held (by whom, until when), or as its last write left it. */
function leaseOf(v: LeaseVerdict, recorded: EnvState): StatusReport['lease'] {
  if (v.kind === 'held') return { state: 'held', run: v.run, holder: holderText(v.holder), deadline: v.deadline };
  const l = recorded.lease;
  return l ? { state: l.state, run: l.run, holder: holderText(l.holder), deadline: l.deadline } : undefined;
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
