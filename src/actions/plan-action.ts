import * as core from '@actions/core';
import { plan } from '../core/ops/plan/plan.js';
import type { ResourcePlanning } from '../core/ops/plan/resources.js';
import { listEnvironments } from '../core/ops/status/environments.js';
import type { RunReport } from '../core/ops/workspace/report.js';
import { openWorkspace } from '../core/ops/workspace/workspace.js';
import { endAll, endGently } from '../core/proc/children.js';
import { removeWorkdir } from '../core/proc/workdir.js';
import { parseDuration } from '../core/util/duration.js';
import { Exit, NylError, type Problem, problem, worstExit } from '../core/util/errors.js';
import { masker } from '../core/util/mask.js';
import { annotate, setOutput, useToken, workflowRunUrl } from './face.js';
import { type Inputs, inputsOrFail, readInputs } from './inputs.js';
import { planComment, type Repo, upsertPlanComment } from './pr-plan.js';
import { jobSummary } from './summary.js';

/**
 * The GitHub client, loaded when a step needs it: its HTTP stack is most of an action's code, and
 * the other actions import this module (planMissing) without calling the API.
 */
type GitHub = typeof import('@actions/github');

/**
 * The plan action: plans each environment given from the checked-out configuration (a pull
 * request's) against its recorded state, writing nothing under refs/nyl/ and running no unit
 * script; on a pull request, keeps one comment per environment up to date with the plan and its
 * token; outputs the tokens and counts; the job summary carries the same plans.
 */
export async function runPlanAction(): Promise<void> {
  const inputs = inputsOrFail(() => readInputs('plan'));
  if (!inputs) return;
  const gh: GitHub = await import('@actions/github');
  useToken(inputs.token);
  const given = [...new Set([...(inputs.environment ? [inputs.environment] : []), ...inputs.environments])];
  const plans: RunReport[] = [];
  const failures: Problem[] = [];
  try {
    const ctx = await openWorkspace({
      cwd: process.env.GITHUB_WORKSPACE || process.cwd(),
      config: inputs.config || undefined,
      local: false,
      remote: inputs.remote,
      networkTimeoutMs: inputs['network-timeout'] ? parseDuration(inputs['network-timeout']) : undefined,
    });
    try {
      // Every environment in promotion order (also an output, for a workflow's matrix) unless some are named.
      const order = (await listEnvironments(ctx)).facts.find(([k]) => k === 'environments')?.[1] as string[];
      setOutput('environments', JSON.stringify(order));
      const envs = given.length ? given : order;
      const resources = resourcePlanning(inputs, gh.context);
      for (const environment of envs)
        try {
          plans.push(await plan(ctx, { environment, asNewWhenUnreachable: true, resources }));
        } catch (e) {
          if (!(e instanceof NylError)) throw e;
          failures.push(...e.problems.map((p) => ({ ...p, subject: p.subject ?? environment })));
        }
    } finally {
      ctx.repo.close();
    }
    await publish(plans, inputs, gh);
    annotate([...failures, ...plans.flatMap((p) => p.problems)]);
    setPlanOutputs(plans);
    if (process.env.GITHUB_STEP_SUMMARY)
      await core.summary
        .addRaw(masker.mask(plans.map((p) => jobSummary(p, { runUrl: workflowRunUrl() })).join('\n')))
        .write();
    const exit = worstExit([...failures, ...plans.flatMap((p) => p.problems)].map((p) => p.exit));
    if (failures.length || exit === Exit.failed)
      core.setFailed(`nyl plan: ${failures.map((p) => `${p.code}: ${p.message}`).join('; ') || `exit ${exit}`}`);
  } catch (e) {
    const msg =
      e instanceof NylError ? e.problems.map((p) => `${p.code}: ${p.message}`).join('\n') : `NYL-INTERNAL: ${e}`;
    if (e instanceof NylError) annotate(e.problems);
    core.setFailed(msg);
  } finally {
    await endGently();
    endAll();
    removeWorkdir();
  }
}

/**
 * Whether Terraform/OpenTofu units are planned by their tools here. Planning runs the checked-out
 * code (providers, `external` data sources) with this job's credentials: only when the workflow
 * asks, never under pull_request_target, and not for a pull request from a fork (its code is not
 * the repository's, and the job has none of its secrets): those are planned at the unit level.
 */
export function resourcePlanning(inputs: Inputs<'plan'>, context: GitHub['context']): ResourcePlanning {
  if (!inputs['resource-plans'])
    return { run: false, why: 'this plan job does not run terraform or tofu (input resource-plans: true)' };
  if (context.eventName === 'pull_request_target') {
    core.warning(
      'resource-plans is ignored under pull_request_target: that event runs with the repository’s secrets, and a pull request’s code must not',
      { title: 'NYL-INPUT' },
    );
    return { run: false, why: 'a pull_request_target job never runs a pull request’s code' };
  }
  const pr = context.payload.pull_request;
  const head = pr?.head?.repo?.full_name as string | undefined;
  const base = context.payload.repository?.full_name as string | undefined;
  // A pull request's head repository can be gone (a deleted fork): not known to be this one, so not run.
  if (pr && (!head || !base || head !== base))
    return {
      run: false,
      why: `a pull request from a fork (${head ?? 'a repository that no longer exists'}) is not run with this repository’s credentials; the deploy of the merge plans it`,
    };
  return { run: true };
}

/** On a pull request: one comment per environment, updated in place. */
async function publish(plans: RunReport[], inputs: Inputs<'plan'>, { context, getOctokit }: GitHub): Promise<void> {
  const pr = context.payload.pull_request?.number as number | undefined;
  if (!pr || !inputs.comment) return;
  const token = inputs.token || process.env.GITHUB_TOKEN || '';
  if (!token) {
    core.warning('the plan comment needs a token (input token or GITHUB_TOKEN) with pull-requests: write', {
      title: 'NYL-PLAN-COMMENT',
    });
    return;
  }
  const octokit = getOctokit(token);
  const repo: Repo = context.repo;
  for (const p of plans)
    try {
      const r = await upsertPlanComment(octokit, repo, pr, p.environment, masker.mask(planComment(p)));
      core.info(`nyl: plan comment for ${p.environment} ${r.action}: ${r.url}`);
    } catch (e) {
      const status = (e as { status?: number }).status;
      core.warning(
        `the plan of ${p.environment} could not be commented on pull request #${pr}${status ? ` (GitHub API answered ${status})` : ''}: ${masker.mask((e as Error)?.message ?? String(e))}; give the token \`pull-requests: write\``,
        { title: 'NYL-PLAN-COMMENT' },
      );
    }
}

function setPlanOutputs(plans: RunReport[]): void {
  const tokenOf = (p: RunReport) => String(p.extra?.find(([k]) => k === 'token')?.[1] ?? '');
  const count = (result: string) => String(plans.flatMap((p) => p.rows).filter((r) => r.result === result).length);
  setOutput('token', plans.length === 1 ? tokenOf(plans[0] as RunReport) : '');
  setOutput('tokens', JSON.stringify(Object.fromEntries(plans.map((p) => [p.environment, tokenOf(p)]))));
  setOutput('execute', count('execute'));
  setOutput('maybe', count('maybe'));
  setOutput('awaiting-approval', count('awaiting-approval'));
  setOutput('current', count('current'));
  setOutput(
    'units',
    JSON.stringify(
      plans.flatMap((p) =>
        p.rows.map((r) => ({
          environment: p.environment,
          unit: r.unit,
          kind: r.kind,
          result: r.result,
          detail: r.detail,
        })),
      ),
    ),
  );
}

/** NYL-PLAN-MISSING: a deploy asked to run the reviewed plan, and there is none to find. */
export function planMissing(env: string, why: string): NylError {
  return new NylError(
    problem('NYL-PLAN-MISSING', `no reviewed plan of ${env} to execute: ${why}; nothing was executed`, {
      subject: env,
      exit: Exit.refused,
      fix: 'merge through a pull request whose plan job commented the plan (the plan workflow), or run the deploy without plan-from-pr',
    }),
  );
}
