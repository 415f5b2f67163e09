import type { Problem } from '../../util/errors.js';
import type { RunReport, UnitRow } from './report.js';

/**
 * What a report asks of a person, as data the faces render (a job summary, annotations, a table):
 * which units wait on someone and the next step for each, in the shipped workflows' terms where
 * the operation runs in them (reconcile, verify) and in the CLI's otherwise; the problems that end
 * the run, each with its next step; the outcome in words.
 */

/** Results that wait on a person, in the order the heading counts and the list shows them. */
const ATTENTION = ['failed', 'uncertain', 'awaiting-approval', 'drifted', 'held', 'blocked'];
/** The other results, in the order the heading counts them. */
const OTHERS = [
  'executed',
  'recovered',
  'imported',
  'removed',
  'destroyed',
  'superseded',
  'current',
  'in-sync',
  'pending',
  'skipped',
];

/** The shipped workflows a next step names (examples/workflows/; the faces know their files). */
export type WorkflowName = 'deploy' | 'recover' | 'verify';

/** A piece of a next step: words, a workflow to run with its inputs, or a command line. */
export type Part = string | { workflow: WorkflowName; inputs: [string, string][] } | { cli: string };

const wf = (workflow: WorkflowName, ...inputs: [string, string][]): Part => ({ workflow, inputs });
const cli = (command: string): Part => ({ cli: command });

/** `awaiting-approval` as words. */
export const words = (result: string) => result.replace(/-/g, ' ');

/** Whether this operation's next steps are said in the shipped workflows' terms (else the CLI's). */
const inWorkflows = (operation: string) => operation === 'reconcile' || operation === 'verify';

/** A unit's next step in its terms: the environment, the unit, whether in workflows, the retry both ways. */
interface StepOf {
  env: string;
  u: string;
  gh: boolean;
  retry: string;
  retryWf: Part;
}

const why = '<why>';

function failedStep(s: StepOf, operation: string): Part[] {
  if (operation === 'verify') return ['fix what keeps its check from running, then run ', wf('verify'), ' again'];
  return s.gh
    ? [
        'fix the cause, then run ',
        wf('deploy', ['environment', s.env]),
        ' again (or push the fix); if the unit is not retryable, run ',
        s.retryWf,
        ' before that',
      ]
    : [
        'fix the cause, then run ',
        cli(`nyl reconcile -e ${s.env}`),
        ' again (not retryable: first ',
        cli(s.retry),
        ')',
      ];
}

function uncertainStep(s: StepOf): Part[] {
  return s.gh
    ? [
        'check what it did; once it is safe to run it again, run ',
        s.retryWf,
        ' and the next deploy runs it (CLI: ',
        cli(s.retry),
        ')',
      ]
    : ['check what it did; once it is safe to run it again, ', cli(s.retry)];
}

/** Awaiting approval: of a plan (after a repair), of a reapply, or of a run that is not safe to repeat. */
function approvalStep(s: StepOf, row: UnitRow): Part[] {
  const { env, u } = s;
  if (/--plan\b|approved plan/.test(row.detail))
    return s.gh
      ? [
          'review ',
          cli(`nyl plan -e ${env}`),
          ', then run ',
          wf('deploy', ['environment', env], ['plan', '<token>']),
          ' with the token it printed',
        ]
      : ['review ', cli(`nyl plan -e ${env}`), ', then ', cli(`nyl reconcile -e ${env} --plan <token>`)];
  if (row.gate === 'destructive') return destroyStep(s);
  if (/reapply/i.test(row.detail))
    return [
      'once re-running it is safe: ',
      cli(`nyl reconcile -e ${env} --unit ${u} --reapply --approve ${u} --reason ${why}`),
    ];
  return s.gh
    ? [
        'once re-running it is safe, run ',
        wf('deploy', ['environment', env], ['approve', u]),
        ' (CLI: ',
        cli(`nyl reconcile -e ${env} --approve ${u}`),
        ')',
      ]
    : ['once re-running it is safe: ', cli(`nyl reconcile -e ${env} --approve ${u}`)];
}

/** A plan that deletes or replaces resources: a person reviews them, then approves the unit. */
function destroyStep(s: StepOf): Part[] {
  const { env, u } = s;
  const review: Part[] = ['review what its plan deletes or replaces (', cli(`nyl plan -e ${env}`), '), then '];
  return s.gh
    ? [
        ...review,
        'run ',
        wf('deploy', ['environment', env], ['approve', u]),
        ' (CLI: ',
        cli(`nyl reconcile -e ${env} --approve ${u}`),
        ')',
      ]
    : [...review, cli(`nyl reconcile -e ${env} --approve ${u}`)];
}

/** Drifted: approve its repair, reapply it (driftRepair: manual), or let the next deploy repair it. */
function driftStep(s: StepOf, row: UnitRow, problems: Problem[]): Part[] {
  const { env, u } = s;
  const fix = problems.map((p) => p.fix ?? '').join(' ');
  if (/--approve\b/.test(fix))
    return s.gh
      ? ['once re-running it is safe, run ', wf('deploy', ['environment', env], ['approve', u])]
      : ['once re-running it is safe: ', cli(`nyl reconcile -e ${env} --approve ${u}`)];
  if (/--reapply\b/.test(fix) || /driftRepair: manual/.test(row.detail))
    return ['to put it back as recorded: ', cli(`nyl reconcile -e ${env} --unit ${u} --reapply --reason ${why}`)];
  return s.gh
    ? ['the next deploy repairs it: run ', wf('deploy', ['environment', env]), ' or push']
    : ['the next reconcile repairs it: ', cli(`nyl reconcile -e ${env}`)];
}

/** The next step for a unit that waits on a person, in the operator's terms. */
export function unitStep(row: UnitRow, report: RunReport, problems: Problem[]): Part[] {
  const env = report.environment;
  const u = row.unit;
  const s: StepOf = {
    env,
    u,
    gh: inWorkflows(report.operation),
    retry: `nyl recover -e ${env} --unit ${u} --retry --reason ${why}`,
    retryWf: wf('recover', ['environment', env], ['action', 'retry'], ['unit', u], ['reason', why]),
  };
  switch (row.result) {
    case 'failed':
      return failedStep(s, report.operation);
    case 'uncertain':
      return uncertainStep(s);
    case 'awaiting-approval':
      return approvalStep(s, row);
    case 'drifted':
      return driftStep(s, row, problems);
    case 'held':
      return [
        'held on purpose; once the work on it is done: ',
        cli(`nyl resume -e ${env} --unit ${u} --reason ${why}`),
      ];
    default:
      return [];
  }
}

/** The next step for a problem about the environment, in the workflows' terms where one exists. */
export function problemStep(
  p: Problem,
  report: { operation: string; environment: string },
  superseded: boolean,
): Part[] {
  const env = report.environment;
  if (!inWorkflows(report.operation) && report.operation !== 'recover' && report.operation !== 'lease-break') return [];
  const why = '<why>';
  switch (p.code) {
    case 'NYL-SOURCE-OLDER':
      return superseded
        ? [
            'nothing to do if this was a queued older deploy; to apply this commit on purpose, run ',
            wf('deploy', ['environment', env], ['allow-older-source', 'true'], ['reason', why]),
            ' from a branch or tag at it',
          ]
        : [];
    case 'NYL-SOURCE-DIVERGED':
      return p.severity === 'error'
        ? [
            'to apply it on purpose, run ',
            wf('deploy', ['environment', env], ['allow-older-source', 'true'], ['reason', why]),
          ]
        : [];
    case 'NYL-LEASE-BROKEN':
    case 'NYL-RUN-UNIMPORTED':
      return ['run ', wf('recover', ['environment', env], ['action', 'import'], ['reason', why])];
    case 'NYL-LEASE-HELD':
      return [
        'if its holder is gone for good (its runner was killed), run ',
        wf('recover', ['environment', env], ['action', 'lease-break'], ['reason', why]),
      ];
    case 'NYL-PLAN-STALE':
      return [
        'review ',
        cli(`nyl plan -e ${env}`),
        ' again, then run ',
        wf('deploy', ['environment', env], ['plan', '<token>']),
      ];
    default:
      return [];
  }
}

/** A superseded reconcile: an older source than the recorded one, not applied (NYL-SOURCE-OLDER). */
export function isSuperseded(report: RunReport): boolean {
  return (
    report.rows.every((r) => r.result === 'superseded') &&
    report.problems.some((p) => p.code === 'NYL-SOURCE-OLDER' && p.severity === 'warning')
  );
}

/** `1 failed, 1 uncertain, 1 awaiting approval, 5 executed`: what needs a person first. */
export function outcomeWords(report: RunReport): string {
  if (isSuperseded(report)) return 'superseded (source older than the recorded one)';
  const counts = new Map<string, number>();
  for (const r of report.rows) counts.set(r.result, (counts.get(r.result) ?? 0) + 1);
  const order = [...ATTENTION, ...OTHERS, ...[...counts.keys()].filter((k) => ![...ATTENTION, ...OTHERS].includes(k))];
  const parts = order.filter((r) => counts.has(r)).map((r) => `${counts.get(r)} ${words(r)}`);
  // Errors about the run as a whole (cancelled, lease lost, …) are part of the outcome.
  const units = new Set(report.rows.map((r) => r.unit));
  const codes = [
    ...new Set(
      report.problems.filter((p) => p.severity === 'error' && !(p.subject && units.has(p.subject))).map((p) => p.code),
    ),
  ];
  const text = parts.length
    ? parts.join(', ')
    : report.exit === 0
      ? report.operation === 'verify'
        ? 'nothing to verify'
        : 'nothing to do'
      : (['done', 'failed', 'refused', 'drift', 'uncertain'][report.exit] ?? 'failed');
  return codes.length ? `${text} (${codes.join(', ')})` : text;
}

/** A unit that waits on a person: its row, the problems about it, its next step. */
export interface Waiting {
  row: UnitRow;
  problems: Problem[];
  step: Part[];
}

/** A problem about the run as a whole, with its next step. */
export interface Told {
  problem: Problem;
  step: Part[];
}

/** Everything a report asks of a person, in the order to show it. */
export interface NeedsAPerson {
  /** Units that wait on a person (blocked ones apart), the most pressing first. */
  waiting: Waiting[];
  /** Units awaiting a plain approval that one deploy can approve together (two or more). */
  approveTogether?: Part[];
  /** Units blocked by what they need: they run once it is resolved. */
  blocked: UnitRow[];
  /** Problems no listed unit is the subject of: errors, then warnings. */
  errors: Told[];
  warnings: Told[];
}

/** What the report asks of a person. */
export function needsAPerson(report: RunReport): NeedsAPerson {
  const superseded = isSuperseded(report);
  const about = (u: string) => report.problems.filter((p) => p.subject === u);
  const rows = report.rows.filter((r) => ATTENTION.includes(r.result) && r.result !== 'blocked');
  rows.sort((a, b) => ATTENTION.indexOf(a.result) - ATTENTION.indexOf(b.result));
  const waiting = rows.map((row) => ({ row, problems: about(row.unit), step: unitStep(row, report, about(row.unit)) }));
  const listed = new Set(rows.map((r) => r.unit));
  const rest = report.problems.filter((p) => !(p.subject && listed.has(p.subject)));
  const told = (p: Problem): Told => ({ problem: p, step: problemStep(p, report, superseded) });
  return {
    waiting,
    ...approveTogether(report, rows),
    blocked: report.rows.filter((r) => r.result === 'blocked'),
    errors: rest.filter((p) => p.severity === 'error').map(told),
    warnings: rest.filter((p) => p.severity !== 'error').map(told),
  };
}

/** Two or more units of a reconcile awaiting a plain approval: one deploy approves them together. */
function approveTogether(report: RunReport, waiting: UnitRow[]): { approveTogether?: Part[] } {
  if (report.operation !== 'reconcile') return {};
  const approvable = waiting.filter(
    (r) => r.result === 'awaiting-approval' && !/--plan\b|approved plan|reapply/i.test(r.detail),
  );
  if (approvable.length < 2) return {};
  const units = approvable.map((r) => r.unit).join(',');
  return { approveTogether: [wf('deploy', ['environment', report.environment], ['approve', units])] };
}
