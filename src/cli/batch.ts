import type { BatchReport } from '../core/ops/batch/report.js';
import { completeCommands, completeProblem, type Mode } from './complete.js';
import { type JsonReport, RESULTS, type Stats } from './json.js';
import { facts, renderProblems, table } from './render.js';

/** The unit rows of every environment planned or reconciled by this request, environment first. */
function unitRows(r: BatchReport) {
  return r.environments.flatMap((e) => {
    const rows = e.report && 'rows' in e.report ? e.report.rows : [];
    return rows.map((row) => ({ environment: e.environment, ...row }));
  });
}

/**
 * `plan --group` and `reconcile --group` as text: one unit table with an ENVIRONMENT column (the
 * columns of `nyl plan` after it), then — for reconcile — one line per environment of the batch,
 * then the facts with the batch token last.
 */
export function renderBatch(r: BatchReport): string {
  const rows = unitRows(r);
  const out: string[] = [];
  if (rows.length)
    out.push(
      table(
        ['ENVIRONMENT', 'UNIT', 'KIND', 'RESULT', 'DETAIL'],
        rows.map((x) => [x.environment, x.unit, x.kind, x.result, x.detail.replace(/\n/g, ' | ')]),
      ),
      '',
    );
  if (r.operation === 'reconcile')
    out.push(
      table(
        ['ENVIRONMENT', 'BATCH', 'RESULT', 'RUN', 'DETAIL'],
        r.environments.map((e) => [
          e.environment,
          e.state === 'ran' ? 'ran now' : e.state === 'recorded' ? 'done before' : e.state,
          e.result,
          e.run ?? '',
          (e.detail ?? '').replace(/\n/g, ' | '),
        ]),
      ),
      '',
    );
  const perEnv: [string, unknown][] =
    r.operation === 'plan' ? r.environments.map((e) => [`plan ${e.environment}`, e.result]) : [];
  out.push(
    facts([
      ['group', r.group],
      ['source', r.source],
      ['environments', r.environments.map((e) => e.environment).join(', ')],
      ...perEnv,
      ['batch', r.ref ? `${r.ref} (${r.outcome})` : r.outcome],
      ['token', r.token],
    ]),
  );
  if (r.problems.length) out.push('', renderProblems(r.problems));
  return `${out.join('\n')}\n`;
}

/** The one JSON shape: rows carry their environment; the batch is in facts. */
export function batchJson(r: BatchReport, stats: Stats): JsonReport {
  return {
    schema: 'nyl.report/v1',
    operation: r.operation,
    outcome: r.outcome,
    result: RESULTS[r.exit],
    exit: r.exit,
    source: r.source,
    rows: unitRows(r),
    facts: {
      group: r.group,
      token: r.token,
      failed: r.failed,
      ...(r.ref ? { batch: r.ref } : {}),
      environments: r.environments.map(({ report, ...e }) => ({
        ...e,
        ...(report && 'run' in report && report.run ? { run: report.run } : {}),
      })),
    },
    problems: r.problems,
    stats,
  };
}

/** Commands quoted in the batch's problems and rows, completed for the mode it ran in. */
export function completeBatch(r: BatchReport, mode: Mode): BatchReport {
  return {
    ...r,
    problems: r.problems.map((p) => completeProblem(p, mode)),
    environments: r.environments.map((e) =>
      e.report && 'rows' in e.report
        ? {
            ...e,
            report: {
              ...e.report,
              rows: e.report.rows.map((x) => ({ ...x, detail: completeCommands(x.detail, mode) })),
            },
          }
        : e,
    ),
  };
}
