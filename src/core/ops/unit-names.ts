import type { Selection } from '../resolve/select.js';
import { NylError, problem } from '../util/errors.js';

/** A unit named on the command line (--approve, --unit, --from) must be one of the environment's. */
export function refuseUnknown(sel: Selection, unit: string): void {
  if (sel.units.has(unit)) return;
  const env = sel.environment;
  throw new NylError(
    problem('NYL-UNIT-UNKNOWN', `${env} has no unit ${unit}`, {
      subject: unit,
      fix: `units of ${env}: ${[...sel.units.keys()].join(', ')}`,
    }),
  );
}
