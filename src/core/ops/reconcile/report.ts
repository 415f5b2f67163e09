import type { Selection } from '../../resolve/select.js';
import type { ObservedUnit } from '../../state/documents.js';
import type { Problem } from '../../util/errors.js';
import { recordedUrl } from '../status/environment-url.js';
import { exitFor, type RunReport, type UnitRow } from '../workspace/report.js';

/**
 * What a reconcile answers: its rows in wave order, the tips it landed, its problems, and the
 * environment's URL from `landed`, the observed documents after the run (none: no URL).
 */
export function runReport(
  sel: Selection,
  r: {
    source: string;
    run?: string;
    rows: UnitRow[];
    desired?: string;
    observed?: string;
    problems: Problem[];
    landed?: ReadonlyMap<string, ObservedUnit>;
  },
): RunReport {
  const url = r.landed ? recordedUrl(sel, r.landed) : {};
  // Uncertain and failed units speak through the table (as in seed 000); `nyl status` explains them.
  return {
    operation: 'reconcile',
    environment: sel.environment,
    run: r.run,
    source: r.source,
    desired: r.desired,
    observed: r.observed,
    rows: r.rows,
    problems: r.problems,
    exit: exitFor(r.rows, r.problems, ['awaiting-approval']),
    graph: {
      waves: sel.waves,
      edges: [...sel.units.values()].flatMap((u) => u.deps.map((d) => [d, u.doc.name] as [string, string])),
    },
    ...(url.url !== undefined ? { url: url.url } : {}),
    ...(url.missing !== undefined ? { urlMissing: url.missing } : {}),
    ...(sel.production ? { production: true } : {}),
  };
}
