import * as core from '@actions/core';
import { leaseBreak } from '../core/ops/lease/break.js';
import { noLookup } from '../core/ops/lease/github-job.js';
import { plan } from '../core/ops/plan/plan.js';
import { reconcile } from '../core/ops/reconcile/reconcile.js';
import { recover } from '../core/ops/recovery/recover.js';
import { verify } from '../core/ops/verify/verify.js';
import type { OpReport, RunReport } from '../core/ops/workspace/report.js';
import { type OpContext, openWorkspace } from '../core/ops/workspace/workspace.js';
import { endAll, endGently } from '../core/proc/children.js';
import { configureWatchdog, watchdogStateFile } from '../core/proc/watchdog.js';
import { removeWorkdir } from '../core/proc/workdir.js';
import { setCurrentJob } from '../core/state/lease.js';
import { Cancellation } from '../core/util/cancel.js';
import { parseDuration } from '../core/util/duration.js';
import { Exit, NylError, type Problem } from '../core/util/errors.js';
import { masker } from '../core/util/mask.js';
import type { DeploymentRun } from '../github/deployment-run.js';
import { syncDriftIssue } from './drift-issue.js';
import { annotate, setOutput, useActorIdentity, useToken, workflowRunUrl } from './face.js';
import { type ActionName, type Inputs, inputsOrFail, readInputs } from './inputs.js';
import { planMissing } from './plan-action.js';
import { planComment, replyWithPlan, reviewedOf, reviewedPlan } from './pr-plan.js';
import { jobSummary, opSummary, unitAnnotations } from './summary.js';

/**
 * The GitHub API client and what is built on it, loaded when a step calls the API: its HTTP stack
 * is most of an action's code, parsed and evaluated at every start (60 ms of a step's CPU here).
 */
const github = () => import('@actions/github');
const jobs = () => import('../github/jobs.js');

const RESULTS = [
  'executed',
  'recovered',
  'imported',
  'current',
  'failed',
  'uncertain',
  'blocked',
  'awaiting-approval',
  'drifted',
  'held',
  'in-sync',
];
const RESULT_OF_EXIT: Record<number, string> = { 0: 'success', 1: 'failed', 2: 'refused', 3: 'drift', 4: 'uncertain' };

function setOutputs(report: RunReport | OpReport): void {
  // A queued deploy of an older commit: `superseded`, not a failure.
  const superseded = 'outcome' in report && report.outcome === 'superseded';
  setOutput('result', superseded ? 'superseded' : (RESULT_OF_EXIT[report.exit] ?? 'failed'));
  setOutput('exit-code', String(report.exit));
  if ('rows' in report) {
    setOutput('run', report.run ?? '');
    setOutput('observed', report.observed ?? '');
    setOutput('desired', report.desired ?? '');
    for (const r of RESULTS) setOutput(r, String(report.rows.filter((x) => x.result === r).length));
    setOutput(
      'units',
      JSON.stringify(report.rows.map((r) => ({ unit: r.unit, kind: r.kind, result: r.result, detail: r.detail }))),
    );
  } else {
    const facts = Object.fromEntries(report.facts) as Record<string, unknown>;
    const text = (k: string) => (typeof facts[k] === 'string' ? (facts[k] as string) : '');
    setOutput('observed', text('observed'));
    setOutput('desired', text('desired'));
    setOutput('run', text('run') || text('broken').replace(/^run /, ''));
    setOutput('units', '[]');
  }
}

async function writeSummary(
  report: RunReport | OpReport,
  graph?: RunReport['graph'],
  driftIssue?: { number: number; url: string },
  deployment?: DeploymentRun,
): Promise<void> {
  if (!process.env.GITHUB_STEP_SUMMARY) return;
  const shown = deployment?.shown();
  const text =
    'rows' in report
      ? jobSummary(report, { runUrl: workflowRunUrl(), graph, driftIssue, ...(shown ? { deployment: shown } : {}) })
      : opSummary(report, { runUrl: workflowRunUrl() });
  await core.summary.addRaw(masker.mask(text)).write();
}

async function operation(
  name: Exclude<ActionName, 'plan'>,
  ctx: OpContext,
  inputs: Inputs<ActionName>,
  deployment?: DeploymentRun,
): Promise<RunReport | OpReport> {
  const env = inputs.environment;
  if (name === 'reconcile') {
    const i = inputs as Inputs<'reconcile'>;
    const opts = {
      environment: env,
      approve: i.approve.length ? i.approve : undefined,
      reapply: i.reapply ? { units: i.units, reason: i.reason } : undefined,
      plan: i.plan || undefined,
      allowOlderSource: i['allow-older-source'] ? { reason: i.reason } : undefined,
    };
    return i['plan-from-pr'] ? reconcileReviewed(ctx, opts, i, deployment) : reconcile(ctx, opts);
  }
  if (name === 'recover') {
    const i = inputs as Inputs<'recover'>;
    return recover(ctx, {
      environment: env,
      reason: i.reason,
      unit: i.unit || undefined,
      retry: i.retry,
      accept: i.accept || undefined,
    });
  }
  if (name === 'verify') return verify(ctx, { environment: env });
  return leaseBreak(ctx, { environment: env, reason: (inputs as Inputs<'lease-break'>).reason });
}

/**
 * What the step sets up before anything runs: the token and identity, secrets masked in the
 * runner's log, what the post step needs, and the cancel the runner's signals start (SIGINT, then
 * SIGTERM 7.5 s later, to this process only): forwarded to the tools, stopped in time. Returns the
 * cancellation and how to stop listening.
 */
function prepareStep(
  name: ActionName,
  inputs: Inputs<ActionName>,
): { cancellation: Cancellation; unlisten: () => void } {
  useToken(inputs.token);
  useActorIdentity();
  for (const s of masker.secrets) core.setSecret(s);
  core.saveState('environment', inputs.environment);
  core.saveState('action', name);
  const cancellation = new Cancellation(parseDuration(inputs['cancel-grace']) ?? 5_000);
  // If this step is killed, the watchdog stops its tools; the post step waits for them to be gone.
  configureWatchdog({ graceMs: cancellation.graceMs });
  core.saveState('groups-file', watchdogStateFile());
  const onSignal = (sig: NodeJS.Signals) => {
    core.warning(
      `received ${sig}: stopping, tools get ${cancellation.graceMs / 1000}s before their process groups are killed`,
    );
    cancellation.cancel(sig);
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  return {
    cancellation,
    unlisten: () => {
      process.off('SIGINT', onSignal);
      process.off('SIGTERM', onSignal);
    },
  };
}

/** The workspace of the checkout, the remote its state lives on, progress to the step's log. */
async function workspaceOf(
  name: ActionName,
  inputs: Inputs<ActionName>,
  cancellation: Cancellation,
  apiToken: string,
  deployment?: DeploymentRun,
): Promise<OpContext> {
  // Which job holds the lease, recorded with it: a later run asks the API whether it finished.
  if (apiToken && (name === 'reconcile' || name === 'recover')) {
    const job = await (await jobs()).currentJob(apiToken);
    setCurrentJob(job);
    // The deployment's log is the job's page when the API names it (else the run's).
    if (job?.jobUrl) deployment?.logsAt(job.jobUrl);
  }
  return openWorkspace(
    {
      cwd: process.env.GITHUB_WORKSPACE || process.cwd(),
      config: inputs.config || undefined,
      local: false,
      remote: inputs.remote,
      waitLeaseMs: inputs['wait-lease'] ? parseDuration(inputs['wait-lease']) : undefined,
      networkTimeoutMs: inputs['network-timeout'] ? parseDuration(inputs['network-timeout']) : undefined,
    },
    {
      cancellation,
      jobLookup: apiToken
        ? async (job) => (await jobs()).actionsJobLookup(apiToken)(job)
        : noLookup('no token to ask the Actions API with: pass the token input (it needs actions: read)'),
      onEvent: (e) => {
        if (e.type === 'unit-start') core.info(`nyl: ${e.unit} (${e.kind}) started`);
        else if (e.type === 'unit-finish') core.info(`nyl: ${e.unit} (${e.kind}) ${e.result} in ${e.durationMs}ms`);
        else if (e.type === 'lease-taken') deployment?.onEvent(e);
        else core.info(`nyl: ${e.text}`);
      },
    },
  );
}

/** A report as the step shows it: outputs, annotations (a unit that needs a person too), the summary, the step's result. */
async function reportOutcome(
  name: ActionName,
  inputs: Inputs<ActionName>,
  report: RunReport | OpReport,
  deployment?: DeploymentRun,
): Promise<void> {
  core.saveState('run', 'rows' in report ? (report.run ?? '') : '');
  setOutputs(report);
  annotate(report.problems);
  if ('rows' in report)
    for (const a of unitAnnotations(report)) {
      const props = { title: masker.mask(a.title) };
      if (a.level === 'error') core.error(masker.mask(a.message), props);
      else core.warning(masker.mask(a.message), props);
    }
  const driftIssue =
    name === 'verify' && 'rows' in report
      ? await driftAlerts(report as RunReport, inputs as Inputs<'verify'>)
      : undefined;
  await writeSummary(report, 'rows' in report ? report.graph : undefined, driftIssue, deployment);
  const tolerated = name === 'verify' && report.exit === Exit.drift && !(inputs as Inputs<'verify'>)['fail-on-drift'];
  if (report.exit !== Exit.ok && !tolerated)
    core.setFailed(`nyl ${name} ${inputs.environment}: ${RESULT_OF_EXIT[report.exit]} (exit ${report.exit})`);
}

/** A refusal or failure: its annotations, outputs and summary, and the step failed (never a stack trace). */
async function reportFailure(name: ActionName, inputs: Inputs<ActionName>, e: unknown): Promise<void> {
  const problems: Problem[] = e instanceof NylError ? e.problems : [];
  annotate(problems);
  const msg =
    e instanceof NylError
      ? problems.map((p) => `${p.code}: ${p.message}`).join('\n')
      : `NYL-INTERNAL: ${(e as Error)?.message ?? e}`;
  const exit = e instanceof NylError ? e.exit : 1;
  setOutput('result', RESULT_OF_EXIT[exit] ?? 'failed');
  setOutput('exit-code', String(exit));
  if (process.env.GITHUB_STEP_SUMMARY) {
    const shown = problems.length
      ? problems
      : [{ severity: 'error' as const, code: 'NYL-INTERNAL', message: msg, exit: 1 as const }];
    const refused = {
      operation: name,
      environment: inputs.environment,
      outcome: 'refused',
      facts: [],
      problems: shown,
      exit,
    };
    await core.summary.addRaw(masker.mask(opSummary(refused, { runUrl: workflowRunUrl() }))).write();
  }
  core.setFailed(msg);
}

/** The main step of every action: inputs, the core operation, outputs, summary, annotations. */
export async function runAction(name: Exclude<ActionName, 'plan'>): Promise<void> {
  const inputs = inputsOrFail(() => readInputs(name));
  if (!inputs) return;
  const { cancellation, unlisten } = prepareStep(name, inputs);
  const apiToken = inputs.token || process.env.GITHUB_TOKEN || '';
  const deployment = name === 'reconcile' ? await deploymentOf(inputs as Inputs<'reconcile'>, apiToken) : undefined;
  let ctx: OpContext | undefined;
  try {
    ctx = await workspaceOf(name, inputs, cancellation, apiToken, deployment);
    const report = await operation(name, ctx, inputs, deployment);
    const url = 'url' in report && typeof report.url === 'string' ? report.url : undefined;
    await deployment?.finish(report, url);
    if (name === 'reconcile') setOutput('environment-url', url ?? '');
    await reportOutcome(name, inputs, report, deployment);
  } catch (e) {
    await deployment?.finish({ error: e });
    await reportFailure(name, inputs, e);
  } finally {
    core.saveState('main', 'finished');
    unlisten();
    ctx?.repo.close();
    await endGently();
    endAll();
    removeWorkdir();
  }
}

async function driftAlerts(
  report: RunReport,
  inputs: Inputs<'verify'>,
): Promise<{ number: number; url: string } | undefined> {
  const drifted = report.rows.filter((r) => r.result === 'drifted');
  // Each drifted unit is annotated once, by its NYL-VERIFY-DRIFT problem (annotate).
  if (!inputs['drift-issue']) return;
  const token = inputs.token || process.env.GITHUB_TOKEN || '';
  if (!token) {
    core.warning('drift-issue needs a token (input token or GITHUB_TOKEN) with issues: write', {
      title: 'NYL-DRIFT-ISSUE',
    });
    return;
  }
  const { context, getOctokit } = await github();
  const { owner, repo } = context.repo;
  try {
    const r = await syncDriftIssue(
      getOctokit(token),
      { owner, repo },
      report.environment,
      drifted.map((d) => ({
        unit: d.unit,
        detail: d.detail,
        ...(d.changes?.resources.length
          ? { resources: d.changes.resources.map(({ address, action }) => ({ address, action })) }
          : {}),
      })),
      workflowRunUrl(),
    );
    setOutput('drift-issue', r.number ? String(r.number) : '');
    core.info(`nyl: drift issue ${r.action}${r.number ? ` #${r.number}` : ''}`);
    if (r.labelled === false)
      core.info(`nyl: the token could not set the ${'nyl-drift'} label; the issue is found by the marker in its body`);
    return r.number && r.url ? { number: r.number, url: r.url } : undefined;
  } catch (e) {
    // The verify report stands whatever the API says: its drift is recorded and summarized.
    const status = (e as { status?: number }).status;
    core.warning(
      `the drift issue could not be ${drifted.length ? 'opened or updated' : 'closed'}${status ? ` (GitHub API answered ${status})` : ''}: ${masker.mask((e as Error)?.message ?? String(e))}; give the token \`issues: write\``,
      { title: 'NYL-DRIFT-ISSUE' },
    );
    setOutput('drift-issue', '');
  }
}

/**
 * `plan-from-pr`: the deploy of a merge commit executes exactly the plan reviewed on its pull
 * request (the token in the environment's plan comment). A stale plan is refused (exit 2) and the
 * plan as it is now is posted on the pull request, so the reviewer sees the difference.
 */
async function reconcileReviewed(
  ctx: OpContext,
  opts: Parameters<typeof reconcile>[1],
  inputs: Inputs<'reconcile'>,
  deployment?: DeploymentRun,
): Promise<RunReport | OpReport> {
  const env = opts.environment;
  const token = inputs.token || process.env.GITHUB_TOKEN || '';
  if (!token) throw planMissing(env, 'there is no token to read the pull request with (input token or GITHUB_TOKEN)');
  const { context, getOctokit } = await github();
  const octokit = getOctokit(token);
  const sha = process.env.GITHUB_SHA || (await ctx.repo.readCommit('HEAD'))?.oid || '';
  const reviewed = await reviewedPlan(octokit, context.repo, sha, env).catch((e: unknown) => {
    throw planMissing(env, `the pull request of ${sha} could not be read (${(e as Error)?.message ?? e})`);
  });
  if (!reviewed.pr) throw planMissing(env, `commit ${sha} belongs to no pull request`);
  if (!reviewed.token) throw planMissing(env, `pull request #${reviewed.pr} has no nyl plan comment for ${env}`);
  core.info(`nyl: executing the plan reviewed on pull request #${reviewed.pr}: ${reviewed.token}`);
  deployment?.reviewedPlan(reviewed.token);
  try {
    return await reconcile(ctx, {
      ...opts,
      plan: reviewed.token,
      reviewed: reviewedOf({ ...reviewed, token: reviewed.token }),
    });
  } catch (e) {
    if (e instanceof NylError && e.problems.some((p) => p.code === 'NYL-PLAN-STALE')) {
      const now = await plan(ctx, { environment: env });
      const note = `**The plan reviewed here went stale before the deploy of ${sha}**: ${e.problems.find((p) => p.code === 'NYL-PLAN-STALE')?.message}. Nothing was executed. This is the plan as it is now:`;
      await replyWithPlan(
        octokit,
        context.repo,
        reviewed.pr,
        masker.mask(planComment(now, { note }).replace(/^<!-- nyl-plan: [^>]+ -->\n/, '')),
      ).catch((err: unknown) =>
        core.warning(
          `the new plan could not be posted on pull request #${reviewed.pr}: ${(err as Error)?.message ?? err}`,
          {
            title: 'NYL-PLAN-COMMENT',
          },
        ),
      );
    }
    throw e;
  }
}

/** With `deployments: true`: the deployment this job keeps (a warning instead when there is no token). */
async function deploymentOf(inputs: Inputs<'reconcile'>, token: string): Promise<DeploymentRun | undefined> {
  if (!inputs.deployments) return undefined;
  if (!token) {
    core.warning('deployments needs a token (input token or GITHUB_TOKEN) with deployments: write', {
      title: 'NYL-DEPLOYMENT',
    });
    return undefined;
  }
  const environment = inputs['deployment-environment'] || inputs.environment;
  // The post step finishes a deployment the main step could not: it needs to know where.
  core.saveState('deployment-environment', environment);
  const [{ context }, { deploymentsClient }, { deploymentStep }] = await Promise.all([
    github(),
    import('../github/deployments.js'),
    import('./deployment-step.js'),
  ]);
  const target = {
    ...context.repo,
    environment,
    production: false,
    githubRun: process.env.GITHUB_RUN_ID,
    githubRunAttempt: Number(process.env.GITHUB_RUN_ATTEMPT) || undefined,
    logUrl: workflowRunUrl(),
  };
  const plan = inputs.plan || undefined;
  return deploymentStep(deploymentsClient(token), target, plan);
}
