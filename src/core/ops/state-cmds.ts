import { FILES } from '../state/documents.js';
import { prettyJson } from '../util/canonical.js';
import { Exit, NylError, problem } from '../util/errors.js';
import { loadForUnitWrite } from './hold.js';
import type { OpReport } from './report.js';
import { operatorIdentity, writeObserved } from './state-write.js';
import { loadEnvironment, type OpContext } from './workspace.js';

/** `nyl state show`: the recorded documents of one unit (or every unit), as stored. */
export async function stateShow(
  ctx: OpContext,
  opts: { environment: string; unit?: string },
): Promise<{ text: string; json: unknown }> {
  const { state } = await loadEnvironment(ctx, opts.environment);
  const names = opts.unit ? [opts.unit] : [...state.observed.keys()].sort();
  if (opts.unit && !state.observed.has(opts.unit) && !state.desiredFiles.has(FILES.unit(opts.unit)))
    throw new NylError(
      problem('NYL-UNIT-UNKNOWN', `${opts.environment} has no recorded state for unit ${opts.unit}`, {
        subject: opts.unit,
        fix: `run \`nyl status -e ${opts.environment}\` to see its units`,
      }),
    );
  const out: Record<string, unknown> = {};
  for (const n of names) {
    const d = state.desiredFiles.get(FILES.unit(n));
    const desired = d ? JSON.parse((await ctx.repo.readBlobs([d]))[0]?.toString('utf8') ?? 'null') : undefined;
    out[n] = { observed: state.observed.get(n), desired };
  }
  const json = {
    environment: opts.environment,
    observedTip: state.tips.observed,
    desiredTip: state.tips.desired,
    units: out,
  };
  return { text: prettyJson(json), json };
}

/**
 * `nyl state forget`: drops a unit's recorded state (receipt, condition, desired document, log).
 * For a unit that left the configuration, or whose resource is gone by other means.
 */
export async function stateForget(
  ctx: OpContext,
  opts: { environment: string; unit: string; reason?: string },
): Promise<OpReport> {
  const { sel, state } = await loadForUnitWrite(ctx, opts);
  const env = opts.environment;
  if (!state.observed.has(opts.unit) && !state.desiredFiles.has(FILES.unit(opts.unit)))
    return {
      operation: 'state-forget',
      environment: env,
      outcome: 'nothing recorded',
      facts: [['unit', opts.unit]],
      problems: [],
      exit: Exit.ok,
    };
  const who = await operatorIdentity(ctx);
  const message = [
    `nyl: state-forget ${env} ${opts.unit}`,
    '',
    `unit: ${opts.unit}`,
    `by: ${who}`,
    ...(opts.reason ? [`reason: ${JSON.stringify(opts.reason)}`] : []),
    `forgot: ${JSON.stringify(state.observed.get(opts.unit) ?? null)}`,
    '',
  ].join('\n');
  const { observed } = await writeObserved(ctx, state, 'state-forget', new Map([[opts.unit, null]]), message, {
    removeDesired: [opts.unit],
  });
  const problems = sel.units.has(opts.unit)
    ? [
        problem(
          'NYL-STATE-FORGOTTEN',
          `unit ${opts.unit} is still in the configuration: the next reconcile executes it as a new unit`,
          {
            severity: 'warning',
            subject: opts.unit,
            exit: Exit.ok,
            fix: 'remove it from the configuration first if its resource is gone for good',
          },
        ),
      ]
    : [];
  return {
    operation: 'state-forget',
    environment: env,
    outcome: 'done',
    facts: [
      ['unit', opts.unit],
      ['observed', observed ?? ''],
    ],
    problems,
    exit: Exit.ok,
  };
}
