import type { OpReport, RunReport } from '../core/ops/workspace/report.js';
import type { ProgressEvent } from '../core/ops/workspace/workspace.js';
import { Exit } from '../core/util/errors.js';
import { masker } from '../core/util/mask.js';
import type { DeploymentState, Deployments } from './deployments.js';

/**
 * A reconcile's GitHub deployment, as a run sees it: started when the run takes the lease,
 * finished from the report (or the error) it ends with. A job that takes no lease (superseded,
 * refused, nothing to do) starts none, except that a success with nothing to execute still shows
 * the environment at its commit. A face keeps the deployment where a later step can finish it
 * (the actions' post step, after a killed or cancelled main step: `error`).
 */

/** What a run's end makes of its deployment: none, or a final state and why. */
export type DeploymentEnd =
  | { state: Exclude<DeploymentState, 'in_progress' | 'inactive'>; description: string }
  | undefined;

const count = (r: RunReport, result: string) => r.rows.filter((x) => x.result === result).length;

/** The Nyl result → deployment status table of docs/github-actions.md. */
export function deploymentEnd(ended: RunReport | OpReport | { error: unknown }, started: boolean): DeploymentEnd {
  if ('error' in ended)
    return started ? { state: 'error', description: 'nyl stopped before the run landed' } : undefined;
  if ('outcome' in ended || !('rows' in ended)) return undefined; // superseded, or not a run
  const r = ended;
  if (r.exit === Exit.ok) {
    const executed = count(r, 'executed') + count(r, 'recovered');
    return {
      state: 'success',
      description: executed ? `${executed} unit${executed === 1 ? '' : 's'} executed` : 'nothing to execute: current',
    };
  }
  if (!started) return undefined; // refused before it took the lease
  if (r.exit === Exit.failed) return { state: 'failure', description: `${count(r, 'failed')} units failed` };
  if (r.exit === Exit.refused)
    return { state: 'failure', description: `${count(r, 'awaiting-approval')} units await approval; not all applied` };
  return {
    state: 'error',
    description: `${count(r, 'uncertain')} units uncertain; the next run converges or recovers them`,
  };
}

/** Where a face keeps the deployment for a later step (the actions' post step). */
export interface DeploymentKeeper {
  started?: (id: number) => void;
  done?: () => void;
}

export class DeploymentRun {
  private started: Promise<number | undefined> | undefined;

  constructor(
    private readonly deployments: Deployments,
    private plan: string | undefined,
    private readonly keep: DeploymentKeeper = {},
  ) {}

  /** The deployment and the last state GitHub took, for the job summary; undefined when there is none. */
  shown(): { id: number; environment: string; state: string } | undefined {
    const d = this.deployments;
    return d.id !== undefined && d.state ? { id: d.id, environment: d.environment, state: d.state } : undefined;
  }

  /** The reviewed plan's token, once known (plan-from-pr reads it from the pull request). */
  reviewedPlan(token: string): void {
    this.plan = token;
  }

  /** The page its statuses link to as their log. */
  logsAt(url: string): void {
    this.deployments.logUrl = url;
  }

  /** The core's events: a reconcile that takes the lease starts the deployment. */
  onEvent(e: ProgressEvent): void {
    if (e.type !== 'lease-taken' || e.operation !== 'reconcile' || !e.source || this.started) return;
    const nyl = { environment: e.environment, run: e.run, ...(this.plan ? { plan: this.plan } : {}) };
    // Kept as soon as it exists, before in_progress: a kill in between leaves it to the post step.
    this.started = this.deployments.start({ sha: e.source, nyl, production: e.production }, (id) =>
      this.keep.started?.(id),
    );
  }

  /** Ends the deployment as the run ended; a success with none started creates one (a new source, nothing to do). */
  async finish(ended: RunReport | OpReport | { error: unknown }, url?: string): Promise<void> {
    const id = await this.started;
    const end = deploymentEnd(ended, id !== undefined);
    if (!end) return;
    if (id === undefined) {
      // One that could not be started was warned about: not tried twice.
      if (this.started) return;
      if (end.state !== 'success' || !('rows' in ended) || !ended.source) return;
      if (await this.deployments.showsSuccess(ended.source)) return;
      const nyl = { environment: ended.environment, ...(this.plan ? { plan: this.plan } : {}) };
      const production = 'production' in ended ? ended.production : undefined;
      if ((await this.deployments.start({ sha: ended.source, nyl, production })) === undefined) return;
    }
    const done = await this.deployments.status(end.state, { url, description: masker.mask(end.description) });
    if (done) this.keep.done?.();
  }
}
