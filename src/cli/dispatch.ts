import { chmodSync, existsSync, readFileSync, writeFileSync } from 'node:fs';
import { planGroup } from '../core/ops/batch/plan.js';
import { reconcileGroup } from '../core/ops/batch/reconcile.js';
import type { BatchReport } from '../core/ops/batch/report.js';
import { leaseBreak } from '../core/ops/lease/break.js';
import { plan, type ReviewedPlan } from '../core/ops/plan/plan.js';
import { keptPlan, readPlanFile } from '../core/ops/plan/reviewed.js';
import { reconcile } from '../core/ops/reconcile/reconcile.js';
import { recover } from '../core/ops/recovery/recover.js';
import { pruneRuns } from '../core/ops/runs/prune.js';
import { listRuns } from '../core/ops/runs/runs.js';
import { runLogs, showRun } from '../core/ops/runs/show.js';
import { streamSite } from '../core/ops/site/gather.js';
import { listEnvironments } from '../core/ops/status/environments.js';
import { status } from '../core/ops/status/status.js';
import { teardown } from '../core/ops/teardown/teardown.js';
import { verify } from '../core/ops/verify/verify.js';
import type { OpReport, RunReport, StatusReport } from '../core/ops/workspace/report.js';
import { perUnit, unitsAsked } from '../core/ops/workspace/unit-names.js';
import type { OpContext } from '../core/ops/workspace/workspace.js';
import { exec } from '../core/ops/writes/exec.js';
import { hold, resume } from '../core/ops/writes/hold.js';
import { stateForget, stateShow } from '../core/ops/writes/state.js';
import { prettyJson } from '../core/util/canonical.js';
import { Exit, NylError, problem } from '../core/util/errors.js';
import { masker } from '../core/util/mask.js';
import { workflowRepoUrl, writeSite } from '../site/pages.js';
import type { CheckedOptions } from './check.js';
import { deployed } from './deployments.js';
import type { Values } from './parse.js';

/** Dispatch: the operation behind each command, given its checked options. */

export type Report = RunReport | StatusReport | OpReport | BatchReport;

/** What a command's operation gets: the workspace, the options as parsed and as checked. */
interface Call {
  ctx: OpContext;
  values: Values;
  positionals: string[];
  o: CheckedOptions;
  json: boolean;
}

const reconcileOf = ({ ctx, values, o }: Call) => {
  const reason = o.reason as string;
  if (o.group !== undefined)
    return reconcileGroup(ctx, {
      group: o.group,
      plan: values.plan as string,
      failed: values.failed === true,
      allowConfigChange: values['allow-config-change'] === true,
      parallelism: o.parallelism,
    });
  const reviewed = planGiven(values.plan as string | undefined, o.environment);
  const run = () =>
    reconcile(ctx, {
      environment: o.environment,
      parallelism: o.parallelism,
      approve: values.approve as string[] | undefined,
      reapply: values.reapply ? { units: o.units, reason } : undefined,
      plan: reviewed?.token,
      ...(reviewed?.rows ? { reviewed } : {}),
      allowOlderSource: values['allow-older-source'] ? { reason } : undefined,
      failed: values.failed === true,
      from: values.from ? { units: values.from as string[], reason } : undefined,
      allowConfigChange: values['allow-config-change'] === true,
    });
  if (!values.deployments) return run();
  const dep = { environment: o.environment, githubEnvironment: values['deployment-environment'] as string | undefined };
  return deployed(ctx, { ...dep, plan: reviewed?.token }, run);
};

/** `--plan`: a token as it is, or the plan file `nyl plan --out` wrote (its token, rows and resource changes). */
function planGiven(given: string | undefined, environment: string): ReviewedPlan | undefined {
  if (given === undefined) return undefined;
  // A file of that name is the file (`v2.plan` could be either); else a token is as it is.
  if (/^v\d+\./.test(given) && !existsSync(given)) return { token: given };
  let text: string;
  try {
    text = readFileSync(given, 'utf8');
  } catch (e) {
    throw new NylError(
      problem('NYL-PLAN-FILE', `the plan file ${given} cannot be read: ${(e as Error).message}`, {
        exit: Exit.failed,
        fix: 'pass a plan token, or the file `nyl plan -e <env> --out FILE` wrote',
      }),
    );
  }
  return readPlanFile(text, given, environment);
}

const planOf = async ({ ctx, values, o }: Call): Promise<Report> => {
  if (o.group !== undefined) return planGroup(ctx, { group: o.group, failed: values.failed === true });
  const report = await plan(ctx, {
    environment: o.environment,
    failed: values.failed === true,
    from: values.from as string[] | undefined,
    ...(values['unit-level'] ? { resources: { run: false, why: 'nyl plan --unit-level' } } : {}),
  });
  // The kept plan holds no value (addresses, actions, digests), but is the operator's file: private.
  if (values.out) {
    writeFileSync(values.out as string, masker.mask(prettyJson(keptPlan(report))), { mode: 0o600 });
    chmodSync(values.out as string, 0o600); // a file that was there keeps its mode otherwise
  }
  return report;
};

/** A command on one unit, or each instance of a group (`--unit G`). */
const eachUnit =
  (one: (c: Call, unit: string) => Promise<OpReport>) =>
  async (c: Call): Promise<Report> =>
    perUnit(await unitsAsked(c.ctx, c.o.environment, c.o.units[0] as string), (u) => one(c, u));

const recoverOf = async (c: Call): Promise<Report> => {
  const { ctx, values, o } = c;
  const one = (u: string | undefined) =>
    recover(ctx, {
      environment: o.environment,
      reason: o.reason,
      unit: u,
      retry: values.retry === true,
      accept: values.accept as string | undefined,
    });
  return o.units[0] ? perUnit(await unitsAsked(ctx, o.environment, o.units[0]), one) : one(undefined);
};

const HANDLERS: Record<string, (c: Call) => Promise<Report>> = {
  reconcile: reconcileOf,
  plan: planOf,
  verify: ({ ctx, o }) => verify(ctx, { environment: o.environment, parallelism: o.parallelism }),
  hold: eachUnit(({ ctx, o }, unit) => hold(ctx, { environment: o.environment, unit, reason: o.reason as string })),
  resume: eachUnit(({ ctx, o }, unit) => resume(ctx, { environment: o.environment, unit, reason: o.reason as string })),
  exec: ({ ctx, o, positionals, json }) =>
    exec(ctx, {
      environment: o.environment,
      unit: o.units[0] as string,
      command: positionals,
      reason: o.reason,
      echo: !json,
    }),
  teardown: ({ ctx, o, values }) => {
    const run = () => teardown(ctx, { environment: o.environment, parallelism: o.parallelism });
    if (!values.deployments) return run();
    const dep = {
      environment: o.environment,
      githubEnvironment: values['deployment-environment'] as string | undefined,
    };
    return deployed(ctx, { ...dep, teardown: true }, run);
  },
  'state forget': eachUnit(({ ctx, o }, unit) =>
    stateForget(ctx, { environment: o.environment, unit, reason: o.reason }),
  ),
  'state show': ({ ctx, o }) => stateShow(ctx, { environment: o.environment, unit: o.units[0] }),
  recover: recoverOf,
  'lease break': ({ ctx, o }) => leaseBreak(ctx, { environment: o.environment, reason: o.reason as string }),
  environments: ({ ctx }) => listEnvironments(ctx),
  site: async ({ ctx, values, o }) => {
    const left = { logs: values['no-logs'] !== true, outputs: values['no-outputs'] !== true };
    const site = await streamSite(ctx, { environment: o.environment || undefined, group: o.group, ...left });
    return (await writeSite({ ...site, ...workflowRepoUrl() }, values.out as string, left)).report;
  },
  runs: ({ ctx, o }) => listRuns(ctx, { environment: o.environment, limit: o.limit, sinceMs: o.sinceMs }),
  'runs show': ({ ctx, o, positionals }) => showRun(ctx, { environment: o.environment, run: positionals[0] as string }),
  'runs prune': ({ ctx, o }) => pruneRuns(ctx, { environment: o.environment, olderThanMs: o.olderThanMs as number }),
  'runs logs': ({ ctx, o, positionals }) =>
    runLogs(ctx, { environment: o.environment, run: positionals[0] as string, unit: o.units[0] }),
};

/** The operation behind a command line (`status` for the rest). */
export function runCommand(call: Call & { command: string }): Promise<Report> {
  const handler = Object.hasOwn(HANDLERS, call.command) ? HANDLERS[call.command] : undefined;
  return handler ? handler(call) : status(call.ctx, { environment: call.o.environment, units: call.o.units });
}
