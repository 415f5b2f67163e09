import type { ObservedUnit } from '../../state/documents.js';
import { GRACE_MS } from '../../state/lease.js';
import { Exit } from '../../util/errors.js';
import type { TakenOver } from '../recovery/takeover.js';
import { ownEntry } from '../runs/history.js';
import {
  consumedRefs,
  desiredFilesWithout,
  importLists,
  messageUnits,
  observedFiles,
} from '../transition/documents.js';
import { transitionMessage } from '../transition/message.js';
import { exitFor, type RunReport } from '../workspace/report.js';
import type { Teardown } from './model.js';
import { teardownRows } from './teardown-run.js';

/** The units whose state this teardown drops, and the state it leaves. */
function landedState(t: Teardown): Map<string, ObservedUnit> {
  return new Map(
    [...t.state.observed]
      .filter(([n]) => t.changed.get(n) !== null)
      .map(([n, o]) => [n, (t.changed.get(n) as ObservedUnit) ?? o]),
  );
}

/**
 * The transition: the desired and observed refs without what was torn down (and with what the
 * import changed), the lease released and consumed run refs removed in the same push. With
 * everything held or blocked and nothing to import, nothing is written.
 */
export async function landTeardown(t: Teardown, loaded: TakenOver): Promise<RunReport> {
  const { ctx, state, imp, writer } = t;
  const list = [...t.rows.values()];
  const base = { operation: 'teardown', environment: t.env, source: loaded.cfg.source, problems: loaded.problems };
  if (!writer.acquired && !loaded.takeover)
    return { ...base, rows: teardownRows(t), exit: list.some((r) => r.result === 'held') ? Exit.refused : Exit.ok };
  if (!writer.acquired) await writer.write(GRACE_MS);
  for (const [n, o] of imp?.observed ?? []) if (!t.changed.has(n)) t.changed.set(n, o);
  const message = transitionMessage({
    operation: 'teardown',
    environment: t.env,
    units: messageUnits(list, writer.run),
    results: list.map((r) => r.result),
    lists: importLists(imp),
    extra: [['leaseBroken', imp?.leaseBroken]],
  });
  const dropped = [...t.changed].filter(([, o]) => o === null).map(([n]) => n);
  const { tips } = await writer.session.land(
    [
      { ref: state.refs.desired, old: state.tips.desired, files: desiredFilesWithout(state, dropped), message },
      { ref: state.refs.observed, old: state.tips.observed, files: observedFiles(state, t.changed), message },
    ],
    ctx.now(),
    consumedRefs(loaded.original, imp, landedState(t)),
    ownEntry(writer.record, list, writer.session.runFiles, ctx.now(), { imported: imp?.consumed.map((c) => c.id) }),
  );
  return {
    ...base,
    run: writer.run,
    desired: tips.get(state.refs.desired),
    observed: tips.get(state.refs.observed),
    rows: teardownRows(t),
    exit: exitFor(list, loaded.problems, ['held']),
  };
}
