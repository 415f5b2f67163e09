import { currentHolder, leaseVerdict } from '../../state/lease.js';
import type { EnvState } from '../../state/read.js';
import { RunSession } from '../../state/run-session.js';
import { Exit } from '../../util/errors.js';
import { uuid7 } from '../../util/uuid7.js';
import { evaluateAll } from '../evaluate/evaluate.js';
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
import { loadEnvironment, type OpContext, refuseUnpublished } from '../workspace/workspace.js';
import { importRuns } from './import-runs.js';
import { recoverUnit } from './recover-unit.js';
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
