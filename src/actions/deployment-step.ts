import * as core from '@actions/core';
import { masker } from '../core/util/mask.js';
import { DeploymentRun } from '../github/deployment-run.js';
import { Deployments, type DeploymentTarget } from '../github/deployments.js';

/**
 * The reconcile action's deployment: the run's, kept in the job's state (so the post step of a
 * killed or cancelled job finishes it), warnings as NYL-DEPLOYMENT annotations.
 */
export function deploymentStep(
  octokit: ConstructorParameters<typeof Deployments>[0],
  target: DeploymentTarget,
  plan: string | undefined,
): DeploymentRun {
  return new DeploymentRun(actionDeployments(octokit, target), plan, {
    started: (id) => core.saveState('deployment', String(id)),
    done: () => core.saveState('deployment-done', 'true'),
  });
}

/** A job's deployments: what the API refuses as a masked NYL-DEPLOYMENT warning (main and post step). */
export function actionDeployments(
  octokit: ConstructorParameters<typeof Deployments>[0],
  target: DeploymentTarget,
): Deployments {
  return new Deployments(octokit, target, (message) => core.warning(masker.mask(message), { title: 'NYL-DEPLOYMENT' }));
}
