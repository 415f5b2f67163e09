import { type DesiredUnit, keyMatch, withFiles } from '../../resolve/desired.js';
import type { Checkpoint, ObservedUnit } from '../../state/documents.js';
import { currentHolder, type LeaseVerdict, leaseVerdict } from '../../state/lease.js';
import type { EnvState } from '../../state/read.js';
import { RunSession } from '../../state/run-session.js';
import { canonicalJson } from '../../util/canonical.js';
import { Exit, NylError, problem } from '../../util/errors.js';
import { uuid7 } from '../../util/uuid7.js';
import { evaluateAll } from '../evaluate/evaluate.js';
import { leaseHeldProblem } from '../lease/problems.js';
import { waitForLease } from '../lease/wait.js';
import {
  consumedRefs,
  desiredFiles,
  desiredResolver,
  importLists,
  messageUnits,
  observedFiles,
} from '../transition/documents.js';
import { transitionMessage } from '../transition/message.js';
import type { OpReport } from '../workspace/report.js';
import { type Loaded, loadEnvironment, type OpContext, refuseUnpublished } from '../workspace/workspace.js';
import { importRuns } from './import-runs.js';
import { withChanges } from './takeover.js';

export interface RecoverOptions {
  environment: string;
  /** Required with --unit; optional for the import of dead runs. */
  reason?: string;
  unit?: string;
  retry?: boolean;
  accept?: string;
}

export async function recover(ctx: OpContext, opts: RecoverOptions): Promise<OpReport> {
  return opts.unit ? recoverUnit(ctx, opts as RecoverOptions & { unit: string }) : recoverEnvironment(ctx, opts);
}

/** The seed's NYL-LEASE-BROKEN: a state write that is not an import waits for the import. */
export function leaseBrokenError(env: string, run: string): NylError {
  return new NylError(
    problem('NYL-LEASE-BROKEN', `the lease of ${env} was broken and its run ${run} has not been imported yet`, {
      exit: Exit.refused,
      fix: `run \`nyl recover -e ${env}\` to import it (a \`nyl reconcile\` or \`nyl teardown\` of ${env} imports it too), then run this command again`,
    }),
  );
}

/**
 * Writes that are not imports (recover --unit, and later verify, hold, state): the lease must be
 * free and no dead run left unimported; under --wait-lease they wait for that.
 */
export async function waitForNonImportWrite(ctx: OpContext, loaded: Loaded): Promise<Loaded> {
  const env = loaded.sel.environment;
  const unimported = (l: Loaded) => [...l.state.runs.keys()];
  let current = loaded;
  current = (
    await waitForLease(ctx, current, {
      accept: (v) => v.kind !== 'held' && v.kind !== 'broken',
      refusal: (v: LeaseVerdict) =>
        v.kind === 'broken'
          ? leaseBrokenError(env, v.run)
          : new NylError(leaseHeldProblem(env, v as Extract<LeaseVerdict, { kind: 'held' }>)),
    })
  ).loaded;
  const left = unimported(current);
  const rec = left.length ? current.state.runs.get(left[0] as string)?.record : undefined;
  if (left.length)
    throw new NylError(
      problem(
        'NYL-RUN-UNIMPORTED',
        rec && rec.phase !== 'finished'
          ? `run ${left[0]} of ${env} has not finished and its deadline ${rec.deadline} passed: if its runner is gone, it is imported by the next reconcile or recover; if it is alive, wait for it`
          : `run ${left[0]} of ${env} ended without landing its results and has not been imported yet`,
        {
          exit: Exit.uncertain,
          fix: `run \`nyl recover -e ${env} --reason <text>\` to import it (or \`nyl reconcile -e ${env}\`), then run this command again`,
        },
      ),
    );
  return current;
}

/** Imports dead runs as a takeover would, executing nothing: one transition commit, no run record. */
async function recoverEnvironment(ctx: OpContext, opts: RecoverOptions): Promise<OpReport> {
  const env = opts.environment;
  let loaded = await loadEnvironment(ctx, env);
  refuseUnpublished(loaded);
  const waited = await waitForLease(ctx, loaded, { takeover: true });
  loaded = waited.loaded;
  const { sel, state } = loaded;
  const base = { operation: 'recover', environment: env };
  const v = leaseVerdict(state, ctx.now());
  if (!state.runs.size && v.kind !== 'broken')
    return { ...base, outcome: 'nothing to import', facts: [], problems: [], exit: Exit.ok };
  const imp = importRuns(sel, state, desiredResolver(sel), ctx.now());
  const after: EnvState = { ...state, observed: withChanges(state.observed, imp.observed) };
  const evaluated = evaluateAll(sel, after);
  const docs = new Map([...evaluated].flatMap(([n, e]) => (e.desired ? [[n, e.desired] as const] : [])));
  const rows = [...imp.rows.values()];
  const op = uuid7();
  const message = transitionMessage({
    operation: 'recover',
    environment: env,
    units: messageUnits(rows, undefined),
    results: rows.map((r) => r.result),
    lists: importLists(imp),
    extra: [
      ['leaseBroken', imp.leaseBroken],
      ['reason', opts.reason !== undefined ? JSON.stringify(opts.reason) : undefined],
    ],
  });
  const session = new RunSession(
    ctx.repo,
    ctx.backend,
    state,
    op,
    'recover',
    currentHolder(),
    await ctx.repo.signature(),
  );
  session.prepare(ctx.now());
  const { tips } = await session.land(
    [
      { ref: state.refs.desired, old: state.tips.desired, files: desiredFiles(sel, docs, after), message },
      {
        ref: state.refs.observed,
        old: state.tips.observed,
        files: observedFiles(state, imp.observed, new Map([...imp.logs].map(([n, oid]) => [n, { oid }]))),
        message,
      },
    ],
    ctx.now(),
    consumedRefs(state, imp, after.observed),
  );
  const facts: [string, unknown][] = [
    ['desired', tips.get(state.refs.desired) ?? ''],
    ['observed', tips.get(state.refs.observed) ?? ''],
    ['imported', imp.imported],
  ];
  if (imp.leaseBroken) facts.push(['leaseBroken', imp.leaseBroken]);
  facts.push(['recovered', imp.recovered]);
  // Destroys a teardown run checkpointed: those units' state went with them.
  const destroyed = [...imp.observed].filter(([, o]) => o === null).map(([n]) => n);
  if (destroyed.length) facts.push(['destroyed', destroyed]);
  return { ...base, outcome: 'done', facts, problems: [...waited.problems, ...imp.problems], exit: Exit.ok };
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

/** Records an operator's decision about one unit in one observed commit; executes nothing. */
async function recoverUnit(ctx: OpContext, opts: RecoverOptions & { unit: string }): Promise<OpReport> {
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
  const evaluated = evaluateAll(sel, state).get(unit);
  const evidence = evidenceOf(state, unit, evaluated?.desired, observed?.uid);
  const condition = observed?.condition;
  const op = uuid7();
  let next: ObservedUnit;
  let action: string;
  if (opts.accept && observed?.hold)
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
  if (opts.accept) {
    const ev = evidence.find((e) => e.run === opts.accept);
    if (!ev?.accept)
      throw new NylError(
        problem(
          'NYL-RECOVER-NO-EVIDENCE',
          ev
            ? `the checkpoint of ${unit} by run ${opts.accept} cannot be adopted: ${ev.why}`
            : `Nyl holds no checkpoint of ${unit} by run ${opts.accept}`,
          {
            subject: unit,
            exit: Exit.refused,
            fix: evidence.some((e) => e.accept)
              ? `adopt one that matches: ${evidence
                  .filter((e) => e.accept)
                  .map((e) => e.run)
                  .join(', ')}`
              : `check the unit and use --retry instead: \`nyl recover -e ${env} --unit ${unit} --retry --reason <text>\``,
          },
        ),
      );
    const cp = (state.runs.get(ev.run) ?? state.evidence.get(ev.run))?.checkpoints.get(unit) as Checkpoint;
    const desired = evaluated?.desired;
    const adopt = desired !== undefined && keyMatch(desired, cp.executionKey, cp.files) === 'adopt';
    // The checkpoint becomes the receipt; repairs and approvals on record stay.
    const { condition: _cleared, drift: _stale, ...kept } = observed ?? ({} as ObservedUnit);
    next = {
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
    action = `accept ${ev.run}`;
  } else {
    if (!condition)
      throw new NylError(
        problem('NYL-RECOVER-NOTHING', `unit ${unit} of ${env} has no condition to clear`, {
          subject: unit,
          exit: Exit.failed,
          fix: `nothing to recover; \`nyl status -e ${env}\` shows its state`,
        }),
      );
    next = { ...(observed as ObservedUnit), condition: undefined, lastRun: op };
    action = 'retry';
  }
  // Evidence refs no uncertain unit needs any more go in the same write.
  const after = new Map(state.observed);
  after.set(unit, next);
  const stale = [...state.evidence.values()].filter(
    (r) => ![...after.values()].some((o) => o.condition?.state === 'uncertain' && o.condition.run === r.id),
  );
  const who = await ctx.repo.signature();
  const message = [
    `nyl: recover ${env} ${unit} (${action.split(' ')[0]})`,
    '',
    `unit: ${unit}`,
    `action: ${action}`,
    `reason: ${JSON.stringify(opts.reason)}`,
    `by: ${who.name} <${who.email}>`,
    ...(condition ? [`condition: ${canonicalJson(condition)}`] : []),
    '',
  ].join('\n');
  const session = new RunSession(ctx.repo, ctx.backend, state, op, 'recover', currentHolder(), who);
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
  return {
    operation: 'recover',
    environment: env,
    outcome: 'done',
    facts: [
      ['observed', tips.get(state.refs.observed) ?? ''],
      ['condition', condition ?? null],
      ['evidence', evidence],
    ],
    problems: [],
    exit: Exit.ok,
  };
}
