import { execFileSync } from 'node:child_process';
import type { OpReport, RunReport } from '../core/ops/workspace/report.js';
import type { OpContext } from '../core/ops/workspace/workspace.js';
import { Exit, NylError, type Problem, problem } from '../core/util/errors.js';
import type { Deployments, DeploymentTarget } from '../github/deployments.js';

/**
 * `--deployments` on a workstation: the run recorded as a GitHub deployment, as the reconcile
 * action does (`GITHUB_TOKEN` or `GH_TOKEN` with deployments: write; the repository from
 * GITHUB_REPOSITORY or the remote's github.com URL). What the API refuses is a warning on the
 * report, never another exit code. A teardown marks the environment's latest deployment inactive.
 */

const USAGE = (message: string) =>
  new NylError(problem('NYL-USAGE', message, { exit: Exit.failed, fix: 'set it, or leave out --deployments' }));

/** owner/repo of a GitHub remote URL (https, ssh or scp-like), or undefined. */
export function githubRepository(url: string): string | undefined {
  const m = /github\.com[:/]([^/]+)\/([^/]+?)(?:\.git)?\/?$/.exec(url.trim());
  return m ? `${m[1]}/${m[2]}` : undefined;
}

function repositoryOf(ctx: OpContext): string {
  if (process.env.GITHUB_REPOSITORY) return process.env.GITHUB_REPOSITORY;
  const remote = ctx.opts.remote ?? 'origin';
  let url = '';
  try {
    url = execFileSync('git', ['remote', 'get-url', remote], { cwd: ctx.opts.cwd, encoding: 'utf8' });
  } catch {
    /* no such remote: said below */
  }
  const repo = githubRepository(url);
  if (!repo)
    throw USAGE(
      `--deployments needs the GitHub repository: set GITHUB_REPOSITORY (owner/repo), or use a github.com remote (${remote}: ${url.trim() || 'none'})`,
    );
  return repo;
}

/** Runs `op` with its reconcile recorded as a deployment of `environment`. */
export async function deployed<T extends RunReport | OpReport>(
  ctx: OpContext,
  o: { environment: string; githubEnvironment?: string; plan?: string; teardown?: boolean },
  op: () => Promise<T>,
): Promise<T> {
  const token = process.env.GITHUB_TOKEN || process.env.GH_TOKEN || '';
  if (!token) throw USAGE('--deployments needs a token with deployments: write in GITHUB_TOKEN or GH_TOKEN');
  const [owner = '', repo = ''] = repositoryOf(ctx).split('/');
  const target: DeploymentTarget = {
    owner,
    repo,
    environment: o.githubEnvironment || o.environment,
    production: false,
  };
  const { Deployments, deploymentsClient } = await import('../github/deployments.js');
  const warnings: string[] = [];
  const d = new Deployments(deploymentsClient(token), target, (m) => warnings.push(m));
  const report = o.teardown ? await tornDown(d, op) : await reconciled(d, ctx, o.plan, op);
  return withWarnings(report, warnings, o.environment);
}

async function reconciled<T extends RunReport | OpReport>(
  d: Deployments,
  ctx: OpContext,
  plan: string | undefined,
  op: () => Promise<T>,
): Promise<T> {
  const { DeploymentRun } = await import('../github/deployment-run.js');
  const run = new DeploymentRun(d, plan);
  const told = ctx.onEvent;
  ctx.onEvent = (e) => {
    told(e);
    run.onEvent(e);
  };
  try {
    const report = await op();
    await run.finish(report, 'url' in report && typeof report.url === 'string' ? report.url : undefined);
    return report;
  } catch (e) {
    await run.finish({ error: e });
    throw e;
  } finally {
    ctx.onEvent = told;
  }
}

async function tornDown<T extends RunReport | OpReport>(d: Deployments, op: () => Promise<T>): Promise<T> {
  const report = await op();
  if (report.exit === Exit.ok && (await d.latest()) !== undefined)
    await d.status('inactive', { description: 'torn down by nyl teardown' });
  return report;
}

/** The API's refusals as warnings of the report (NYL-DEPLOYMENT), its exit unchanged. */
function withWarnings<T extends RunReport | OpReport>(report: T, warnings: string[], environment: string): T {
  const extra: Problem[] = warnings.map((m) =>
    problem('NYL-DEPLOYMENT', m, { severity: 'warning', exit: Exit.ok, subject: environment }),
  );
  return extra.length ? { ...report, problems: [...report.problems, ...extra] } : report;
}
