import * as core from '@actions/core';
import { releaseAbandoned } from '../core/ops/runs/abandon.js';
import { type OpContext, openWorkspace } from '../core/ops/workspace/workspace.js';
import { signalGroup, signalStop } from '../core/proc/children.js';
import { groupAlive, stopPending, stopsListedIn } from '../core/proc/watchdog.js';
import { currentHolder } from '../core/state/lease.js';
import { parseDuration } from '../core/util/duration.js';
import { useActorIdentity, useToken, workflowRunUrl } from './face.js';

/**
 * The post step's work once its main step did not finish: stop the tools it left, then release
 * its lease. Only what that needs is imported (no Octokit, no operations), so the post step of a
 * killed job starts quickly too; entries/post.ts loads this only when there is something to do.
 */
export async function runPost(): Promise<void> {
  if (core.getState('main') === 'finished') return;
  const env = core.getState('environment');
  if (!env) return;
  core.warning('the main step did not finish: releasing its lease so the next run takes over at once', {
    title: 'NYL-RUN-ABANDONED',
  });
  useToken(core.getInput('token'));
  useActorIdentity();
  await stopLeftoverTools(core.getState('groups-file'), parseDuration(core.getInput('cancel-grace') || '5s') ?? 5_000);
  let ctx: OpContext | undefined;
  try {
    ctx = await openWorkspace({
      cwd: process.env.GITHUB_WORKSPACE || process.cwd(),
      config: core.getInput('config') || undefined,
      local: false,
      remote: core.getInput('remote') || 'origin',
    });
    const me = currentHolder();
    const r = await releaseAbandoned(ctx, {
      environment: env,
      isOurs: (l) => !!me.workflowRun && l.holder.workflowRun === me.workflowRun && l.holder.id === me.id,
      note: 'its main step was killed; the post step marked it finished',
    });
    core.info(r.released ? `nyl: released the lease of run ${r.released}` : 'nyl: nothing of this job held the lease');
  } catch (e) {
    core.warning(`could not release the lease: ${(e as Error)?.message ?? e}; run the lease-break workflow`, {
      title: 'NYL-RUN-ABANDONED',
    });
  } finally {
    ctx?.repo.close();
  }
  await endDeployment();
}

/**
 * The deployment the main step started and could not finish: `error` (the job was cancelled or
 * killed mid-run; the next run converges or recovers what it left). The Deployments client is
 * loaded only then.
 */
async function endDeployment(): Promise<void> {
  const id = Number(core.getState('deployment'));
  const environment = core.getState('deployment-environment');
  if (!id || !environment || core.getState('deployment-done')) return;
  const token = core.getInput('token') || process.env.GITHUB_TOKEN || '';
  const [{ actionDeployments }, { deploymentsClient }, { context }] = await Promise.all([
    import('./deployment-step.js'),
    import('../github/deployments.js'),
    import('@actions/github'),
  ]);
  const logUrl = workflowRunUrl();
  const target = { ...context.repo, environment, production: false, ...(logUrl ? { logUrl } : {}) };
  const d = actionDeployments(deploymentsClient(token), target);
  d.id = id;
  await d.status('error', {
    description: 'the job was cancelled or killed before the run landed; the next run takes over',
  });
}

/** Waits, polling every `step` ms, until `done` or `ms` have passed. */
async function waitUntil(done: () => boolean, ms: number, step: number): Promise<void> {
  const until = Date.now() + ms;
  while (!done() && Date.now() < until) await new Promise((r) => setTimeout(r, step));
}

/**
 * A killed main step leaves its tools to its watchdog, which stops them within the grace. The
 * lease is released only once they are gone: otherwise the next run would start a unit on top of
 * a tool still applying it. A group gets SIGTERM; terraform and tofu (leader-only) their own stop
 * signal, SIGINT, to the tool alone and only when the watchdog has not sent it (a second SIGINT
 * makes terraform exit at once); SIGKILL goes to the groups at the end of the grace.
 */
async function stopLeftoverTools(groupsFile: string, graceMs: number): Promise<void> {
  if (!groupsFile) return;
  const alive = () => stopsListedIn(groupsFile).filter((g) => groupAlive(g.pgid));
  const left = alive();
  if (!left.length) return;
  core.warning(
    `the main step's tools still run (process groups ${left.map((g) => g.pgid).join(', ')}): stopping them before the lease is released`,
    { title: 'NYL-RUN-ABANDONED' },
  );
  for (const g of left) if (!g.sent) signalStop(g.leader ? g : { ...g, signal: 'SIGTERM' });
  await waitUntil(() => !alive().some(stopPending), graceMs, 100);
  for (const g of alive()) signalGroup(g.pgid, 'SIGKILL');
  await waitUntil(() => !alive().length, 2_000, 50);
  const survived = alive().map((g) => g.pgid);
  core.info(
    survived.length
      ? `nyl: process groups ${survived.join(', ')} survived SIGKILL`
      : "nyl: the main step's tools are gone",
  );
}
