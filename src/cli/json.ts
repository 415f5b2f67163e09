import * as z from 'zod/mini';
import type { OpReport, RunReport, StatusReport } from '../core/ops/workspace/report.js';
import type { Problem } from '../core/util/errors.js';
import { described } from '../core/util/zod.js';

/**
 * `--json`: one document shape for every command (schema/nyl.report.schema.json). Facts are typed
 * values, never JSON inside strings; every row names its result as `result` (status's STATE
 * column too); a refused command keeps operation, environment and outcome.
 */
export const RESULTS = { 0: 'success', 1: 'failed', 2: 'refused', 3: 'drift', 4: 'uncertain' } as const;
/** A reconcile that did not apply an older source: not a failure, not a success either. */
const SUPERSEDED = 'superseded';

/** A Terraform/OpenTofu unit's resource changes in a row: names and actions, never values. */
const resourceAction = z.enum(['create', 'update', 'replace', 'delete', 'read', 'forget']);
const int = z.number().check(z.int());

const DRIFT_SAYS =
  'status: the resources the last verify of a drifted Terraform/OpenTofu unit found drifted, as the actions that would put them back';
const driftSchema = () =>
  z.object({
    counts: z.object({ create: int, update: int, replace: int, delete: int, read: int }),
    resources: z.array(z.object({ address: z.string(), action: resourceAction })),
  });

const changesSchema = () => {
  const action = resourceAction;
  const n = int;
  return described(
    z.object({
      counts: z.object({ create: n, update: n, replace: n, delete: n, read: n }),
      resources: z.array(
        z.object({
          address: z.string(),
          action,
          attributes: described(z.optional(z.array(z.string())), 'The top-level attributes that change (names only)'),
          tainted: described(
            z.optional(z.literal(true)),
            'A replace of a tainted object (an unfinished create, or taint): it does not wait for approval',
          ),
          digest: described(
            z.string(),
            'sha256 (12 hex digits) of the action and planned values, unknown and sensitive values normalised: equal plans, equal digests',
          ),
        }),
      ),
      outputs: z.array(z.object({ name: z.string(), action: z.enum(['create', 'update', 'delete']) })),
    }),
    'plan: the resource changes its tool planned (destructive first); reconcile: those it applied',
  );
};

/** The environment's URL (reconcile, status): Environment `url` resolved from recorded outputs. */
const urlSchema = () => ({
  url: described(
    z.optional(z.string()),
    "reconcile, status: the environment's url, its template resolved from the outputs recorded after the command",
  ),
  urlMissing: described(
    z.optional(z.string()),
    "reconcile, status: why the environment's url template gave no URL (an output missing or sensitive)",
  ),
});

// The schema is built on first use (the `schema` command, tests): every other command only prints.
const buildReportSchema = () => {
  const str = z.string();
  const opt = z.optional;
  const problemSchema = z.object({
    severity: z.enum(['error', 'warning']),
    code: described(str, 'NYL-…, see docs/errors.md'),
    subject: opt(str),
    message: str,
    fix: opt(str),
    exit: described(z.number().check(z.int()), 'The exit code this problem implies'),
  });

  const rowSchema = z.object({
    environment: described(opt(str), 'A batch over a group (--group): the environment the row is of'),
    unit: str,
    kind: str,
    result: described(
      str,
      'What happened to the unit (reconcile, teardown: executed, recovered, imported, current, failed, uncertain, …), what would (plan: execute, maybe, …), its state (status: current, pending, drifted, …) or its drift (verify: in-sync, drifted, unknown, skipped, none)',
    ),
    detail: str,
    durationMs: opt(z.number()),
    executionKey: opt(str),
    run: described(opt(str), 'The run that produced this result, when not this run'),
    receipt: described(opt(str), 'status: current, outdated, none, unknown, kept'),
    lastRun: described(opt(str), 'status: the run that last changed the unit'),
    files: described(
      opt(z.record(z.string(), str)),
      'plan: the files the unit uses, by path relative to the repository root, with their git object ids in the source commit (part of its execution key)',
    ),
    filesChanged: described(
      opt(z.array(str)),
      'plan: the files whose content changed since the receipt, when that is why the unit executes',
    ),
    changes: opt(changesSchema()),
    drift: described(z.optional(driftSchema()), DRIFT_SAYS),
    changesNote: described(
      opt(str),
      'Why a Terraform/OpenTofu unit shows no resource changes: its inputs wait for a unit that executes first, its plan failed, it was not planned',
    ),
    gate: described(
      opt(z.literal('destructive')),
      'awaiting-approval only because its plan deletes or replaces resources (the unit-level plan executes it)',
    ),
  });

  return described(
    z.object({
      schema: z.literal('nyl.report/v1'),
      operation: described(
        str,
        'reconcile, plan, status, verify, teardown, recover, lease-break, hold, resume, exec, state-show, state-forget, runs, runs show, runs logs, runs prune, environments, site, init',
      ),
      environment: described(
        opt(str),
        'Absent when the command line itself was refused, and for a batch over a group (facts.group)',
      ),
      outcome: described(str, 'done, refused, nothing to import, already broken, not held, …'),
      result: described(
        z.enum(['success', 'failed', 'refused', 'drift', 'uncertain', 'superseded']),
        'The exit code in words; superseded: a reconcile of a source older than the recorded one, not applied',
      ),
      exit: described(
        z.number().check(z.int()),
        '0 done, 1 failed or bad input, 2 refused or waiting on a person, 3 drift, 4 uncertainty',
      ),
      run: opt(str),
      source: described(opt(str), 'The commit the configuration was read from'),
      desired: described(opt(str), 'Tip of the desired ref after the command'),
      observed: described(opt(str), 'Tip of the observed ref after the command'),
      ...urlSchema(),
      rows: z.array(rowSchema),
      facts: described(z.record(z.string(), z.unknown()), 'Typed facts of the command: plan token, imports, lease, …'),
      graph: opt(z.object({ waves: z.array(z.array(str)), edges: z.array(z.tuple([str, str])) })),
      problems: z.array(problemSchema),
      stats: z.object({
        gitProcesses: z.number(),
        toolProcesses: z.number(),
        remoteRoundTrips: z.number(),
        remoteRetries: z.number(),
        backoffWaits: z.number(),
      }),
    }),
    'What every nyl command prints with --json',
  );
};
let built: ReturnType<typeof buildReportSchema> | undefined;
/** The zod schema of every --json report (schema/nyl.report.schema.json). */
export const reportSchema = (): ReturnType<typeof buildReportSchema> => {
  built ??= buildReportSchema();
  return built;
};

export type JsonReport = z.infer<ReturnType<typeof buildReportSchema>>;
export type Stats = JsonReport['stats'];

export function reportJsonSchema(): unknown {
  return { title: 'nyl --json report', ...(z.toJSONSchema(reportSchema(), { target: 'draft-2020-12' }) as object) };
}

const resultOf = (exit: number) => RESULTS[exit as keyof typeof RESULTS] ?? 'failed';

/** Any report as the one JSON shape. */
export function toJson(report: RunReport | StatusReport | OpReport, stats: Stats): JsonReport {
  const base = {
    schema: 'nyl.report/v1' as const,
    operation: report.operation,
    ...(report.environment ? { environment: report.environment } : {}),
    result: resultOf(report.exit),
    exit: report.exit,
    problems: report.problems,
    stats,
  };
  if ('outcome' in report)
    return {
      ...base,
      ...(report.outcome === SUPERSEDED ? { result: SUPERSEDED } : {}),
      outcome: report.outcome,
      rows: [],
      facts: Object.fromEntries(report.facts),
    };
  const { source, desired, observed } = report;
  const run = 'run' in report ? report.run : undefined;
  const tips = {
    ...(run ? { run } : {}),
    source,
    ...(desired ? { desired } : {}),
    ...(observed ? { observed } : {}),
    ...(report.url !== undefined ? { url: report.url } : {}),
    ...(report.urlMissing !== undefined ? { urlMissing: report.urlMissing } : {}),
  };
  if (report.operation === 'status') {
    const s = report as StatusReport;
    return {
      ...base,
      ...tips,
      outcome: 'done',
      rows: s.rows.map(({ state, ...r }) => ({ ...r, result: state })),
      facts: { ...(s.lease ? { lease: s.lease } : {}), ...(s.promotion ? { promotion: s.promotion } : {}) },
    };
  }
  const r = report as RunReport;
  return {
    ...base,
    ...tips,
    outcome: 'done',
    rows: r.rows,
    facts: Object.fromEntries(r.extra ?? []),
    ...(r.graph ? { graph: r.graph } : {}),
  };
}

/** A command refused before or while it ran: what it was, where, and why. */
export function refusedJson(
  operation: string,
  environment: string | undefined,
  exit: number,
  problems: Problem[],
  stats: Stats,
): JsonReport {
  return {
    schema: 'nyl.report/v1',
    operation,
    ...(environment ? { environment } : {}),
    outcome: 'refused',
    result: resultOf(exit),
    exit,
    rows: [],
    facts: {},
    problems,
    stats,
  };
}
