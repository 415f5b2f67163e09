import { getOctokit } from '@actions/github';

/**
 * GitHub Deployments that say what Nyl recorded. Nyl creates the deployment itself (not the job's
 * `environment:` key, which would mark a superseded older job as the latest deployment), when its
 * run takes the lease, and moves its status as the run ends: `in_progress`, then `success`,
 * `failure` or `error`; `inactive` for what a teardown destroyed. One deployment per environment
 * and workflow run: a re-run attempt finishes the one its first attempt created. The API failing
 * never fails a deploy: every call's failure is reported through `warn`, naming what GitHub will
 * show wrong, and the rest is skipped.
 */

type Octokit = ReturnType<typeof getOctokit>;

export type DeploymentState = 'in_progress' | 'success' | 'failure' | 'error' | 'inactive';

export interface DeploymentTarget {
  owner: string;
  repo: string;
  /** The GitHub environment's name. */
  environment: string;
  production: boolean;
  /** The workflow run (its id; attempts share it): a re-run finds the deployment it made. */
  githubRun?: string;
  /** Its attempt: the first has no earlier deployment to look for (one API call less). */
  githubRunAttempt?: number;
  /** The job's page, for each status's log_url. */
  logUrl?: string;
}

export interface DeploymentStart {
  /** The source commit. */
  sha: string;
  /** Nyl's environment, run id and plan token, kept in the deployment's payload. */
  nyl: { environment: string; run?: string; plan?: string };
  /** GitHub's production_environment (the Environment's `production`; default the target's). */
  production?: boolean;
}

const DEFAULT_API = 'https://api.github.com';
/** A call GitHub does not answer within this is given up (warned): a deploy never waits on it. */
const CALL_MS = 15_000;

/** `p`, or a rejection once `ms` have passed. */
function bounded<T>(p: Promise<T>, ms = CALL_MS): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${ms / 1000}s`)), ms);
  });
  return Promise.race([p, late]).finally(() => clearTimeout(timer));
}

export function deploymentsClient(token: string, apiUrl?: string): Octokit {
  return getOctokit(token, { baseUrl: apiUrl || process.env.GITHUB_API_URL || DEFAULT_API });
}

/** GitHub's answer to a call that failed: its status code, or its message. */
function apiFailure(e: unknown): string {
  const status = (e as { status?: number }).status;
  if (status === 403 && /rate limit/i.test((e as Error).message ?? '')) return 'rate limited (403)';
  if (status === 429) return 'rate limited (429)';
  return status ? `answered ${status}` : `could not be reached (${(e as Error)?.message ?? e})`;
}

const WHAT_IT_SHOWS: Record<DeploymentState, string> = {
  in_progress: 'this deploy will not show as in progress',
  success: 'the environment will still show the commit deployed before',
  failure: 'this deploy will show as in progress',
  error: 'this deploy will show as in progress',
  inactive: 'the environment will still show as deployed',
};

export class Deployments {
  /** API calls made (the cost on a runner). */
  calls = 0;
  /** The deployment of this run, once created or found. */
  id: number | undefined;
  /** The last state GitHub accepted. */
  state: DeploymentState | undefined;

  constructor(
    private readonly octokit: Octokit,
    private target: DeploymentTarget,
    private readonly warn: (message: string) => void,
  ) {}

  get environment(): string {
    return this.target.environment;
  }

  set logUrl(url: string) {
    this.target.logUrl = url;
  }

  /** Finds this workflow run's deployment of the commit (a re-run), or creates it; then in_progress. */
  async start(s: DeploymentStart, onId?: (id: number) => void): Promise<number | undefined> {
    try {
      this.id = (await this.earlier(s.sha)) ?? (await this.create(s));
      onId?.(this.id);
    } catch (e) {
      this.warn(
        `the GitHub deployment of ${s.sha.slice(0, 12)} to ${this.target.environment} could not be created: the Deployments API ${apiFailure(e)}; GitHub will not show this deploy (give the token \`deployments: write\`)`,
      );
      return undefined;
    }
    await this.status('in_progress', {});
    return this.id;
  }

  /** Moves this run's deployment to `state`; false when the API refused it (warned). */
  async status(state: DeploymentState, o: { url?: string; description?: string }): Promise<boolean> {
    if (this.id === undefined) return false;
    try {
      this.calls++;
      await bounded(
        this.octokit.rest.repos.createDeploymentStatus({
          owner: this.target.owner,
          repo: this.target.repo,
          deployment_id: this.id,
          state,
          ...(o.url ? { environment_url: o.url } : {}),
          ...(this.target.logUrl ? { log_url: this.target.logUrl } : {}),
          ...(o.description ? { description: o.description.slice(0, 140) } : {}),
          auto_inactive: state === 'success',
        }),
      );
      this.state = state;
      return true;
    } catch (e) {
      this.warn(
        `the GitHub deployment ${this.id} (${this.target.environment}) could not be set to ${state}: the Deployments API ${apiFailure(e)}; ${WHAT_IT_SHOWS[state]}`,
      );
      return false;
    }
  }

  /**
   * Whether GitHub already shows the commit as deployed here (its latest deployment of the
   * environment is of the commit, its last status success): then a run that did nothing adds none.
   */
  async showsSuccess(sha: string): Promise<boolean> {
    try {
      this.calls++;
      const { owner, repo, environment } = this.target;
      const r = await bounded(this.octokit.rest.repos.listDeployments({ owner, repo, environment, per_page: 1 }));
      const d = r.data[0];
      if (!d || d.sha !== sha) return false;
      this.calls++;
      const st = await bounded(
        this.octokit.rest.repos.listDeploymentStatuses({ owner, repo, deployment_id: d.id, per_page: 1 }),
      );
      return st.data[0]?.state === 'success';
    } catch {
      return false; // asked again by creating one: a failure there is warned
    }
  }

  /** The latest deployment of the environment (for a teardown): its id, or undefined. */
  async latest(): Promise<number | undefined> {
    try {
      this.calls++;
      const r = await bounded(
        this.octokit.rest.repos.listDeployments({
          owner: this.target.owner,
          repo: this.target.repo,
          environment: this.target.environment,
          per_page: 1,
        }),
      );
      this.id = r.data[0]?.id;
      return this.id;
    } catch (e) {
      this.warn(
        `the GitHub deployments of ${this.target.environment} could not be read: the Deployments API ${apiFailure(e)}; ${WHAT_IT_SHOWS.inactive}`,
      );
      return undefined;
    }
  }

  /** A deployment this workflow run made of the commit before (an earlier attempt). */
  private async earlier(sha: string): Promise<number | undefined> {
    if (!this.target.githubRun || (this.target.githubRunAttempt ?? 2) <= 1) return undefined;
    this.calls++;
    const r = await bounded(
      this.octokit.rest.repos.listDeployments({
        owner: this.target.owner,
        repo: this.target.repo,
        sha,
        environment: this.target.environment,
        per_page: 30,
      }),
    );
    const mine = r.data.find(
      (d) => (d.payload as { githubRun?: string } | undefined)?.githubRun === this.target.githubRun,
    );
    return mine?.id;
  }

  private async create(s: DeploymentStart): Promise<number> {
    this.calls++;
    const r = await bounded(
      this.octokit.rest.repos.createDeployment({
        owner: this.target.owner,
        repo: this.target.repo,
        ref: s.sha,
        environment: this.target.environment,
        // Nyl decided what runs; GitHub's checks on the commit are not its gate, nor is merging the ref.
        required_contexts: [],
        auto_merge: false,
        production_environment: s.production ?? this.target.production,
        description: `nyl reconcile ${s.nyl.environment}`,
        payload: { nyl: s.nyl, ...(this.target.githubRun ? { githubRun: this.target.githubRun } : {}) },
      }),
    );
    const id = (r.data as { id?: number }).id;
    if (id === undefined)
      throw Object.assign(new Error('no deployment was created (202: a merge was needed)'), { status: 202 });
    return id;
  }
}
