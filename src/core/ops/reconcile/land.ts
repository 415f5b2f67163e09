import { needsApproval } from '../../changes/counts.js';
import type { DesiredUnit } from '../../resolve/desired.js';
import { allowsDestructive } from '../../resolve/select.js';
import type { ObservedUnit } from '../../state/documents.js';
import { GRACE_MS, RESOLUTION_TIMEOUT_MS } from '../../state/lease.js';
import { crashPoint } from '../../util/crash.js';
import { Exit, type Problem, problem } from '../../util/errors.js';
import { isoTime } from '../../util/time.js';
import type { SourceVerdict } from '../judge/source-order.js';
import { withChanges } from '../recovery/takeover.js';
import { ownEntry } from '../runs/history.js';
import {
  consumedRefs,
  desiredFiles,
  importLists,
  messageUnits,
  observedFiles,
  sameFiles,
  withSource,
} from '../transition/documents.js';
import { transitionMessage } from '../transition/message.js';
import type { RunReport, UnitRow } from '../workspace/report.js';
import type { ReconcileOptions } from './options.js';
import { runReport } from './report.js';
import type { Executed, RunInput } from './run-input.js';
import type { Upfront } from './scope.js';

/** What the land phase needs besides the run: the state read first, the options, the source verdict. */
export interface LandInput extends RunInput {
  original: RunInput['state'];
  takeover: boolean;
  upfront: Upfront;
  opts: ReconcileOptions;
  verdict?: SourceVerdict;
  problems: Problem[];
}

/** A cancelled run lands no transition: its run ref keeps the checkpoints, marked finished, the lease released. */
export async function landCancelled(l: LandInput, ex: Executed): Promise<RunReport> {
  const { writer, ctx, sel } = l;
  if (writer.acquired) await writer.finish('cancelled');
  const r = runReport(sel, {
    source: l.source,
    run: writer.acquired ? writer.run : undefined,
    rows: rowsOf(l, ex),
    problems: l.problems,
  });
  r.problems.push(
    problem(
      'NYL-RUN-CANCELLED',
      `run ${writer.run} of ${sel.environment} was cancelled (${ctx.cancellation.signal}); finished units are checkpointed on its run ref, running ones marked uncertain`,
      {
        subject: sel.environment,
        exit: Exit.uncertain,
        fix: writer.acquired
          ? `the next \`nyl reconcile -e ${sel.environment}\` takes over at once and imports it`
          : 'nothing was written; run the command again',
      },
    ),
  );
  r.exit = Exit.uncertain;
  return r;
}

/**
 * The transition: the desired documents of this resolution and the observed documents this run
 * (or the import) changed, in one commit per ref, with the lease released and consumed run refs
 * removed in the same push. Nothing changed and nothing imported: no transition at all.
 */
export async function landTransition(l: LandInput, ex: Executed): Promise<RunReport> {
  const { ctx, sel, state, writer } = l;
  const rows = rowsOf(l, ex);
  const shown = [...rows, ...l.scope.removed];
  const desiredDocs = new Map<string, DesiredUnit>();
  for (const name of sel.units.keys()) {
    const d = ex.outcomes.get(name)?.desired ?? l.upfront.desired.get(name);
    if (d) desiredDocs.set(name, d);
  }
  const changed = new Map<string, ObservedUnit | null>(l.imp?.observed ?? []);
  for (const [name, o] of ex.outcomes) if (o.observed) changed.set(name, o.observed);
  // Compared as recorded (a new commit alone changes nothing); written with this run's source.
  const desired = desiredFiles(sel, desiredDocs, state, l.source);
  const desiredChanged = !sameFiles(ctx.repo, withSource(desired, sel, state.desiredSource), state.desiredFiles);
  const base = { source: l.source, rows: shown, problems: l.problems };

  if (!changed.size && !desiredChanged && !l.takeover) {
    if (writer.acquired) await writer.session.land([], ctx.now(), [], historyOf(l, ex, rows));
    return runReport(sel, {
      ...base,
      run: writer.acquired ? writer.run : undefined,
      observed: state.tips.observed,
      landed: state.observed,
    });
  }
  if (!writer.acquired) await writer.write(RESOLUTION_TIMEOUT_MS + GRACE_MS);
  writer.stage();
  const message = await messageOf(l, ex, rows);
  const updates = [];
  if (desiredChanged)
    updates.push({
      ref: state.refs.desired,
      old: state.tips.desired,
      files: desired,
      message,
    });
  // Observed changes only with a result (or an import, which records a lease break even when empty).
  if (changed.size || l.takeover)
    updates.push({
      ref: state.refs.observed,
      old: state.tips.observed,
      files: observedFiles(state, changed, ex.logs),
      message,
    });
  crashPoint('before-transition');
  const landedState = withChanges(state.observed, changed);
  const landed = await writer.session.land(
    updates,
    ctx.now(),
    consumedRefs(l.original, l.imp, landedState),
    historyOf(l, ex, rows),
  );
  crashPoint('after-transition');
  for (const id of landed.late) l.problems.push(lateCheckpoint(sel.environment, id, state.refs.evidence(id)));
  return runReport(sel, {
    ...base,
    run: writer.run,
    desired: landed.tips.get(state.refs.desired),
    observed: landed.tips.get(state.refs.observed) ?? state.tips.observed,
    landed: landedState,
  });
}

/** This run's entry in the environment's history: its record ended, each unit's result, its logs. */
function historyOf(l: LandInput, ex: Executed, rows: UnitRow[]) {
  const exitCodes = new Map<string, number>();
  for (const [n, o] of ex.outcomes) {
    const code = o.observed?.condition?.exitCode;
    if (code !== undefined && o.observed?.condition?.run === l.writer.run) exitCodes.set(n, code);
  }
  return ownEntry(l.writer.record, rows, l.writer.session.runFiles, l.ctx.now(), {
    imported: l.imp?.consumed.map((c) => c.id),
    exitCodes,
  });
}

function rowsOf(l: LandInput, ex: Executed): UnitRow[] {
  return l.sel.waves.flat().map((n) => ex.outcomes.get(n)?.row as UnitRow);
}

/** The transition's message: the seed's body, with drift repairs, reapplies, approvals and an older source listed. */
async function messageOf(l: LandInput, ex: Executed, rows: UnitRow[]): Promise<string> {
  const done = (n: string) => ['executed', 'recovered'].includes(ex.outcomes.get(n)?.row.result ?? '');
  const ran = (why: string) => [...ex.executions].filter(([n, e]) => e.why === why && done(n)).map(([n]) => n);
  // Approved: unsafe re-runs, and deletes or replaces nothing in the configuration allows (applied
  // only with --approve or a reviewed plan that listed them).
  const destroyed = (n: string) =>
    !allowsDestructive(l.sel, n) && !!ex.outcomes.get(n)?.row.changes?.resources.some(needsApproval);
  const approved = [...ex.executions].filter(([n, e]) => (e.approvedBy || destroyed(n)) && done(n)).map(([n]) => n);
  const sig = await l.ctx.repo.signature();
  const by = `${sig.name} <${sig.email}>`;
  const older = l.verdict?.olderSource;
  const listed = [...rows, ...l.scope.removed.filter((r) => r.result !== 'removed')];
  return transitionMessage({
    operation: 'reconcile',
    environment: l.sel.environment,
    units: messageUnits(listed, l.writer.run),
    results: listed.map((r) => r.result),
    lists: [...importLists(l.imp, rows), ['driftRepaired', ran('drift')], ['adopted', adoptedOf(ex)]],
    // Exactly the seed's body: the run is in every receipt it wrote, the source in the desired ref.
    extra: [
      ['leaseBroken', l.imp?.leaseBroken],
      [
        'reapplied',
        ran('reapply').length
          ? { by, reason: l.opts.reapply?.reason ?? l.opts.from?.reason, units: ran('reapply') }
          : undefined,
      ],
      ['recovery', l.writer.record.recovery],
      ['approved', approved.length ? { by, at: isoTime(l.ctx.now()), units: approved } : undefined],
      ['olderSource', older ? { by, reason: l.opts.allowOlderSource?.reason, recorded: older.recorded } : undefined],
    ],
  });
}

/** Units whose receipts of an earlier nyl this run keyed with their files, executing nothing. */
function adoptedOf(ex: Executed): string[] {
  return [...ex.outcomes].filter(([, o]) => o.evaluation.action === 'current' && o.evaluation.adopt).map(([n]) => n);
}

function lateCheckpoint(env: string, id: string, evidenceRef: string): Problem {
  return problem(
    'NYL-RUN-LATE-CHECKPOINT',
    `run ${id} wrote to its run ref while this run took it over; it is kept as evidence`,
    {
      severity: 'warning',
      subject: id,
      exit: Exit.uncertain,
      fix: `see \`git show ${evidenceRef}\`; \`nyl recover -e ${env} --unit <unit> --accept ${id} --reason <text>\` adopts one of its checkpoints`,
    },
  );
}
