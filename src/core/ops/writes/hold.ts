import { FILES, type ObservedUnit } from '../../state/documents.js';
import type { Unreadable } from '../../state/read.js';
import { Exit, NylError, problem } from '../../util/errors.js';
import { isoTime } from '../../util/time.js';
import { uuid7 } from '../../util/uuid7.js';
import { uidFor } from '../evaluate/evaluate.js';
import { waitForNonImportWrite } from '../recovery/non-import-write.js';
import type { OpReport } from '../workspace/report.js';
import { type Loaded, loadEnvironment, type OpContext, refuseUnpublished } from '../workspace/workspace.js';
import { operatorIdentity, writeObserved } from './write-observed.js';

export interface UnitOpOptions {
  environment: string;
  unit: string;
  reason?: string;
}

/** Loads for a state write about one unit that must exist in the configuration or the state. */
export async function loadForUnitWrite(
  ctx: OpContext,
  opts: UnitOpOptions,
  tolerate?: (u: Unreadable) => boolean,
): Promise<Loaded> {
  let loaded = await loadEnvironment(ctx, opts.environment, tolerate);
  refuseUnpublished(loaded);
  loaded = await waitForNonImportWrite(ctx, loaded);
  const s = loaded.state;
  if (!loaded.sel.units.has(opts.unit) && !s.observed.has(opts.unit) && !s.observedFiles.has(FILES.unit(opts.unit)))
    throw new NylError(
      problem('NYL-UNIT-UNKNOWN', `${opts.environment} has no unit ${opts.unit}`, {
        subject: opts.unit,
        fix: `run \`nyl status -e ${opts.environment}\` to see its units`,
      }),
    );
  return loaded;
}

function message(op: string, env: string, unit: string, who: string, reason?: string): string {
  return [
    `nyl: ${op} ${env} ${unit}`,
    '',
    `unit: ${unit}`,
    `by: ${who}`,
    ...(reason ? [`reason: ${JSON.stringify(reason)}`] : []),
    '',
  ].join('\n');
}

/**
 * Holds a unit: reconcile neither executes nor re-resolves it; it keeps the desired document of
 * its last receipt, its consumers resolve from that receipt, and its condition stays.
 */
export async function hold(ctx: OpContext, opts: UnitOpOptions & { reason: string }): Promise<OpReport> {
  const { sel, state } = await loadForUnitWrite(ctx, opts);
  const base = { operation: 'hold', environment: opts.environment };
  const prior = state.observed.get(opts.unit);
  if (prior?.hold)
    return {
      ...base,
      outcome: 'already held',
      facts: [['hold', prior.hold]],
      problems: [],
      exit: Exit.ok,
    };
  const who = await operatorIdentity(ctx);
  const next: ObservedUnit = {
    ...(prior ?? {
      schema: 'nyl.observed-unit/v1',
      name: opts.unit,
      kind: sel.units.get(opts.unit)?.doc.kind ?? 'Command',
      uid: uidFor(state, opts.unit),
      lastRun: uuid7(),
    }),
    hold: { by: who, reason: opts.reason, at: isoTime(ctx.now()) },
  };
  const { observed } = await writeObserved(
    ctx,
    state,
    'hold',
    new Map([[opts.unit, next]]),
    message('hold', opts.environment, opts.unit, who, opts.reason),
  );
  return {
    ...base,
    outcome: 'done',
    facts: [
      ['unit', opts.unit],
      ['observed', observed ?? ''],
    ],
    problems: [],
    exit: Exit.ok,
  };
}

/**
 * Resumes a held unit. Its condition stays. If it was repaired with `nyl exec` while held, its
 * first execution needs the plan approved by token (`nyl plan`, then `nyl reconcile --plan`).
 */
export async function resume(ctx: OpContext, opts: UnitOpOptions & { reason: string }): Promise<OpReport> {
  const { state } = await loadForUnitWrite(ctx, opts);
  const env = opts.environment;
  const base = { operation: 'resume', environment: env };
  const prior = state.observed.get(opts.unit);
  if (!prior?.hold) return { ...base, outcome: 'not held', facts: [['unit', opts.unit]], problems: [], exit: Exit.ok };
  const held = prior.hold;
  const repaired = (prior.repairs ?? []).filter((r) => r.at >= held.at);
  const { hold: _released, ...rest } = prior;
  const next: ObservedUnit = { ...rest };
  if (repaired.length)
    next.approvalRequired = {
      reason: `repaired with nyl exec while held (run ${repaired[repaired.length - 1]?.run}): approve the plan with \`nyl plan -e ${env}\` then \`nyl reconcile -e ${env} --plan <token>\``,
      since: isoTime(ctx.now()),
    };
  const who = await operatorIdentity(ctx);
  const { observed } = await writeObserved(
    ctx,
    state,
    'resume',
    new Map([[opts.unit, next]]),
    message('resume', env, opts.unit, who, opts.reason),
  );
  const facts: [string, unknown][] = [
    ['unit', opts.unit],
    ['observed', observed ?? ''],
  ];
  if (next.approvalRequired) facts.push(['approval', 'its first execution needs the plan approved by token']);
  return { ...base, outcome: 'done', facts, problems: [], exit: Exit.ok };
}
