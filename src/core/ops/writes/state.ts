import { FILES } from '../../state/documents.js';
import { readDesiredDocs, type Unreadable } from '../../state/read.js';
import { Exit, NylError, problem } from '../../util/errors.js';
import type { OpReport } from '../workspace/report.js';
import { matchesUnit } from '../workspace/unit-names.js';
import { subjectOf } from '../workspace/unreadable.js';
import { loadEnvironment, type OpContext } from '../workspace/workspace.js';
import { loadForUnitWrite } from './hold.js';
import { operatorIdentity, writeObserved } from './write-observed.js';

/** `nyl state show`: the recorded documents of one unit (or every unit), as stored; unreadable ones say why. */
export async function stateShow(ctx: OpContext, opts: { environment: string; unit?: string }): Promise<OpReport> {
  const { state } = await loadEnvironment(ctx, opts.environment, () => true, { files: 'lenient' });
  const recorded = (n: string) => state.observedFiles.has(FILES.unit(n)) || state.desiredFiles.has(FILES.unit(n));
  const all_ = [...state.observed.keys()].sort();
  // A group's name shows each of its recorded instances.
  const group = opts.unit && !recorded(opts.unit) ? all_.filter((n) => matchesUnit(n, opts.unit as string)) : [];
  const names = opts.unit ? (group.length ? group : [opts.unit]) : all_;
  const bad = state.unreadable.filter((u) => !opts.unit || (u.unit && matchesUnit(u.unit, opts.unit)) || !u.unit);
  if (opts.unit && !group.length && !recorded(opts.unit))
    throw new NylError(
      problem('NYL-UNIT-UNKNOWN', `${opts.environment} has no recorded state for unit ${opts.unit}`, {
        subject: opts.unit,
        fix: `run \`nyl status -e ${opts.environment}\` to see its units`,
      }),
    );
  const { docs, unreadable } = await readDesiredDocs(ctx.repo, state, names);
  const units: Record<string, unknown> = {};
  for (const n of names) units[n] = { observed: state.observed.get(n), desired: docs.get(n) };
  const all = [...bad, ...unreadable];
  const facts: [string, unknown][] = [
    ['observedTip', state.tips.observed],
    ['desiredTip', state.tips.desired],
    ['units', units],
  ];
  if (all.length) facts.push(['unreadable', all.map((u) => ({ at: subjectOf(u), tip: u.tip, cause: u.cause }))]);
  return {
    operation: 'state-show',
    environment: opts.environment,
    outcome: 'done',
    facts,
    document: { environment: opts.environment, ...Object.fromEntries(facts) },
    problems: [],
    exit: Exit.ok,
  };
}

/** `state forget --unit U` may replace U's own documents when they cannot be read: that is its job. */
const unitDocOf = (unit: string) => (u: Unreadable) =>
  u.unit === unit && (u.scope === 'observed' || u.scope === 'desired');

/**
 * `nyl state forget`: drops a unit's recorded state (receipt, condition, desired document, log).
 * For a unit that left the configuration, whose resource is gone by other means, or whose
 * recorded documents cannot be read.
 */
export async function stateForget(
  ctx: OpContext,
  opts: { environment: string; unit: string; reason?: string },
): Promise<OpReport> {
  const { sel, state } = await loadForUnitWrite(ctx, opts, unitDocOf(opts.unit));
  const env = opts.environment;
  const path = FILES.unit(opts.unit);
  if (!state.observedFiles.has(path) && !state.desiredFiles.has(path))
    return {
      operation: 'state-forget',
      environment: env,
      outcome: 'nothing recorded',
      facts: [['unit', opts.unit]],
      problems: [],
      exit: Exit.ok,
    };
  const who = await operatorIdentity(ctx);
  const unreadable = state.unreadable.filter(unitDocOf(opts.unit));
  const forgot =
    state.observed.get(opts.unit) ??
    (unreadable.length ? { unreadable: unreadable.map((u) => ({ at: subjectOf(u), cause: u.cause })) } : null);
  const message = [
    `nyl: state-forget ${env} ${opts.unit}`,
    '',
    `unit: ${opts.unit}`,
    `by: ${who}`,
    ...(opts.reason ? [`reason: ${JSON.stringify(opts.reason)}`] : []),
    `forgot: ${JSON.stringify(forgot)}`,
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
