import { type DesiredUnit, keyMatch, withFiles } from '../../resolve/desired.js';
import type { Checkpoint, ObservedUnit } from '../../state/documents.js';
import { currentHolder } from '../../state/lease.js';
import type { EnvState } from '../../state/read.js';
import { RunSession } from '../../state/run-session.js';
import { canonicalJson } from '../../util/canonical.js';
import { Exit, NylError, problem } from '../../util/errors.js';
import { uuid7 } from '../../util/uuid7.js';
import { evaluateAll } from '../evaluate/evaluate.js';
import { observedFiles } from '../transition/documents.js';
import type { OpReport } from '../workspace/report.js';
import { loadEnvironment, type OpContext, refuseUnpublished } from '../workspace/workspace.js';
import { waitForNonImportWrite } from './non-import-write.js';

/** What `nyl recover -e ENV --unit U` asks: --accept a run's checkpoint, or --retry. */
export interface UnitDecision {
  environment: string;
  unit: string;
  reason?: string;
  accept?: string;
}

interface Evidence {
  run: string;
  ref: string;
  result: string;
  executionKey: string;
  at: string;
  accept: boolean;
  why?: string;
}

function evidenceOf(
  state: EnvState,
  unit: string,
  desired: DesiredUnit | undefined,
  uid: string | undefined,
): Evidence[] {
  const key = desired?.executionKey;
  const out: Evidence[] = [];
  for (const r of [...state.runs.values(), ...state.evidence.values()]) {
    const cp: Checkpoint | undefined = r.checkpoints.get(unit);
    if (!cp) continue;
    let why: string | undefined;
    if (cp.result !== 'succeeded') why = `its execution ${cp.result === 'failed' ? 'failed' : 'is uncertain'}`;
    else if (key === undefined) why = 'the unit has no desired document now';
    else if (desired && keyMatch(desired, cp.executionKey, cp.files) === 'different')
      why = `its execution key ${cp.executionKey} is not the desired ${key}`;
    else if (uid && cp.uid !== uid) why = `its uid ${cp.uid} is not the unit's ${uid}`;
    out.push({
      run: r.id,
      ref: r.ref,
      result: cp.result,
      executionKey: cp.executionKey,
      at: cp.at,
      accept: !why,
      ...(why ? { why } : {}),
    });
  }
  return out.sort((a, b) => (a.run < b.run ? 1 : -1));
}

/** The unit a decision is about: known to the configuration or to the recorded state. */
interface Subject {
  env: string;
  unit: string;
  state: EnvState;
  observed: ObservedUnit | undefined;
  desired: DesiredUnit | undefined;
  evidence: Evidence[];
}

/**
 * Records an operator's decision about one unit in one observed commit; executes nothing.
 * Phases: the unit and the evidence held of it → the decision (--accept a checkpoint, or --retry)
 * → one write, with evidence refs no uncertain unit needs any more.
 */
export async function recoverUnit(ctx: OpContext, opts: UnitDecision): Promise<OpReport> {
  const s = await subjectOf(ctx, opts);
  const op = uuid7();
  const { next, action } = opts.accept ? accepted(s, opts.accept, op) : retried(s, op);
  const observed = await landDecision(ctx, s, next, { op, action, reason: opts.reason });
  return {
    operation: 'recover',
    environment: s.env,
    outcome: 'done',
    facts: [
      ['observed', observed],
      ['condition', s.observed?.condition ?? null],
      ['evidence', s.evidence],
    ],
    problems: [],
    exit: Exit.ok,
  };
}

async function subjectOf(ctx: OpContext, opts: UnitDecision): Promise<Subject> {
  const env = opts.environment;
  let loaded = await loadEnvironment(ctx, env);
  refuseUnpublished(loaded);
  loaded = await waitForNonImportWrite(ctx, loaded);
  const { sel, state } = loaded;
  const unit = opts.unit;
  const observed = state.observed.get(unit);
  if (!observed && !sel.units.has(unit))
    throw new NylError(
      problem('NYL-UNIT-UNKNOWN', `${env} has no unit ${unit}`, {
        subject: unit,
        fix: `run \`nyl status -e ${env}\` to see its units`,
      }),
    );
  const desired = evaluateAll(sel, state).get(unit)?.desired;
  return { env, unit, state, observed, desired, evidence: evidenceOf(state, unit, desired, observed?.uid) };
}

/** --accept RUN: that run's checkpoint of the unit becomes its receipt; repairs and approvals on record stay. */
function accepted(s: Subject, run: string, op: string): { next: ObservedUnit; action: string } {
  const { env, unit, observed, evidence } = s;
  if (observed?.hold)
    throw new NylError(
      problem(
        'NYL-UNIT-HELD',
        `unit ${unit} is held: --accept adopts a checkpoint, and a held unit runs nothing a checkpoint could match`,
        {
          subject: unit,
          exit: Exit.refused,
          fix: `resume it first: \`nyl resume -e ${env} --unit ${unit} --reason <text>\``,
        },
      ),
    );
  const ev = evidence.find((e) => e.run === run);
  if (!ev?.accept) throw new NylError(noEvidence(s, run, ev));
  const cp = (s.state.runs.get(ev.run) ?? s.state.evidence.get(ev.run))?.checkpoints.get(unit) as Checkpoint;
  const desired = s.desired;
  const adopt = desired !== undefined && keyMatch(desired, cp.executionKey, cp.files) === 'adopt';
  const { condition: _cleared, drift: _stale, ...kept } = observed ?? ({} as ObservedUnit);
  const next: ObservedUnit = {
    ...kept,
    schema: 'nyl.observed-unit/v1',
    name: unit,
    kind: cp.kind,
    uid: cp.uid,
    // A checkpoint of an earlier nyl is keyed with the document's files (as an import keys it).
    receipt: {
      executionKey: adopt && desired ? desired.executionKey : cp.executionKey,
      uid: cp.uid,
      run: ev.run,
      ...(cp.source ? { source: cp.source } : {}),
      at: cp.at,
      outputs: cp.outputs ?? {},
      artifacts: cp.artifacts ?? {},
      ...withFiles(adopt ? desired?.files : cp.files),
    },
    lastRun: op,
  };
  return { next, action: `accept ${ev.run}` };
}

function noEvidence(s: Subject, run: string, ev: Evidence | undefined) {
  const { env, unit, evidence } = s;
  const matching = evidence.filter((e) => e.accept).map((e) => e.run);
  return problem(
    'NYL-RECOVER-NO-EVIDENCE',
    ev
      ? `the checkpoint of ${unit} by run ${run} cannot be adopted: ${ev.why}`
      : `Nyl holds no checkpoint of ${unit} by run ${run}`,
    {
      subject: unit,
      exit: Exit.refused,
      fix: matching.length
        ? `adopt one that matches: ${matching.join(', ')}`
        : `check the unit and use --retry instead: \`nyl recover -e ${env} --unit ${unit} --retry --reason <text>\``,
    },
  );
}

/** --retry: the condition goes, the last receipt stays. */
function retried(s: Subject, op: string): { next: ObservedUnit; action: string } {
  if (!s.observed?.condition)
    throw new NylError(
      problem('NYL-RECOVER-NOTHING', `unit ${s.unit} of ${s.env} has no condition to clear`, {
        subject: s.unit,
        exit: Exit.failed,
        fix: `nothing to recover; \`nyl status -e ${s.env}\` shows its state`,
      }),
    );
  return { next: { ...s.observed, condition: undefined, lastRun: op }, action: 'retry' };
}

/** One observed commit with the decision; evidence refs no uncertain unit needs any more go in it. Returns its tip. */
async function landDecision(
  ctx: OpContext,
  s: Subject,
  next: ObservedUnit,
  d: { op: string; action: string; reason?: string },
): Promise<string> {
  const { state, env, unit } = s;
  const after = new Map(state.observed).set(unit, next);
  const stale = [...state.evidence.values()].filter(
    (r) => ![...after.values()].some((o) => o.condition?.state === 'uncertain' && o.condition.run === r.id),
  );
  const who = await ctx.repo.signature();
  const condition = s.observed?.condition;
  const message = [
    `nyl: recover ${env} ${unit} (${d.action.split(' ')[0]})`,
    '',
    `unit: ${unit}`,
    `action: ${d.action}`,
    `reason: ${JSON.stringify(d.reason)}`,
    `by: ${who.name} <${who.email}>`,
    ...(condition ? [`condition: ${canonicalJson(condition)}`] : []),
    '',
  ].join('\n');
  const session = new RunSession(ctx.repo, ctx.backend, state, d.op, 'recover', currentHolder(), who);
  session.prepare(ctx.now());
  const { tips } = await session.land(
    [
      {
        ref: state.refs.observed,
        old: state.tips.observed,
        files: observedFiles(state, new Map([[unit, next]])),
        message,
      },
    ],
    ctx.now(),
    stale.map((r) => ({ id: r.id, ref: r.ref, tip: r.tip, retire: false })),
  );
  return tips.get(state.refs.observed) ?? '';
}
