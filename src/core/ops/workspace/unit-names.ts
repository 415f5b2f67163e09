import { groupOfName } from '../../config/for-each.js';
import type { Selection } from '../../resolve/select.js';
import type { EnvState } from '../../state/read.js';
import { NylError, problem, worstExit } from '../../util/errors.js';
import type { OpReport } from './report.js';
import { loadEnvironment, type OpContext } from './workspace.js';

/**
 * Unit names as an operator writes them on the command line (--unit, --from, --approve, hold, …),
 * in one place: a unit, an instance of a mapped unit (`group#key`), or a group (all its instances).
 */

/** Whether a recorded or listed unit is the one asked for: itself, or an instance of the group asked for. */
export function matchesUnit(name: string, asked: string): boolean {
  return name === asked || groupOfName(name) === asked;
}

/**
 * The units a name stands for in this environment: the unit (or instance) itself, or every
 * instance of a group. `state` adds units that left the configuration but are recorded (and a
 * group's recorded instances). Unknown: NYL-UNIT-UNKNOWN, naming the units there are.
 */
export function unitNames(sel: Selection, name: string, state?: EnvState): string[] {
  if (sel.units.has(name)) return [name];
  const group = sel.mapping?.groups.get(name);
  if (group?.instances.length) return group.instances;
  if (group)
    throw new NylError(
      problem('NYL-UNIT-UNKNOWN', `${name} has no instances in ${sel.environment}: its forEach list is empty`, {
        subject: name,
        fix: `name an instance ${name}#KEY once its list has items; \`nyl status -e ${sel.environment}\` lists them`,
      }),
    );
  const recorded = state ? [...state.observed.keys()].filter((n) => matchesUnit(n, name)).sort() : [];
  if (recorded.length) return recorded;
  const env = sel.environment;
  const groups = [...(sel.mapping?.groups.keys() ?? [])];
  const plain = [...sel.units.keys()].filter((n) => !groups.includes(groupOfName(n) ?? ''));
  throw new NylError(
    problem('NYL-UNIT-UNKNOWN', `${env} has no unit ${name}`, {
      subject: name,
      fix: `units of ${env}: ${[...plain, ...groups.map((g) => `${g} (or ${g}#KEY)`)].join(', ') || '(none)'}; \`nyl status -e ${env}\` lists them`,
    }),
  );
}

/** Every unit the names stand for, each once. */
export function unitsNamed(sel: Selection, names: readonly string[], state?: EnvState): string[] {
  return [...new Set(names.flatMap((n) => unitNames(sel, n, state)))];
}

/** A unit named on the command line (--approve, --unit, --from) must be one of the environment's. */
export function refuseUnknown(sel: Selection, unit: string): void {
  unitNames(sel, unit);
}

/**
 * A command about one unit (hold, resume, recover --unit, state forget) given a group: done for
 * each instance in turn, reported together (the worst exit; each instance's facts under its name).
 */
export async function perUnit(names: string[], op: (unit: string) => Promise<OpReport>): Promise<OpReport> {
  if (names.length === 1) return op(names[0] as string);
  const reports: OpReport[] = [];
  for (const n of names) reports.push(await op(n));
  const first = reports[0] as OpReport;
  return {
    ...first,
    outcome: [...new Set(reports.map((r) => r.outcome))].join(', '),
    facts: [
      ['units', names],
      ...reports.map((r, i) => [names[i] as string, Object.fromEntries(r.facts)] as [string, unknown]),
    ],
    problems: reports.flatMap((r) => r.problems),
    exit: worstExit(reports.map((r) => r.exit)),
  };
}

/**
 * The units a command about one unit acts on: a group's instances, else the name itself (whose
 * command then says whatever it says of it: unknown, unreadable, …).
 */
export async function unitsAsked(ctx: OpContext, environment: string, name: string): Promise<string[]> {
  try {
    const { sel, state } = await loadEnvironment(ctx, environment, () => true);
    if (sel.units.has(name) || state.observed.has(name)) return [name];
    return unitNames(sel, name, state);
  } catch {
    return [name];
  }
}
