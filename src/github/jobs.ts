import { getOctokit } from '@actions/github';
import type { JobLookup, JobState } from '../core/ops/lease/github-job.js';
import type { GithubJob } from '../core/state/documents.js';

type Octokit = ReturnType<typeof getOctokit>;
type Job = {
  id: number;
  status: string;
  conclusion: string | null;
  html_url: string | null;
  runner_name: string | null;
};

const DEFAULT_API = 'https://api.github.com';

function client(token: string, apiUrl: string | undefined): Octokit {
  return getOctokit(token, { baseUrl: apiUrl || process.env.GITHUB_API_URL || DEFAULT_API });
}

function repoOf(job: GithubJob): { owner: string; repo: string } {
  const [owner = '', repo = ''] = job.repository.split('/');
  return { owner, repo };
}

/** The jobs of the job's run attempt that ran on its runner (a runner runs one job at a time). */
async function jobsOnRunner(octokit: Octokit, job: GithubJob): Promise<Job[]> {
  const jobs = (await octokit.paginate(octokit.rest.actions.listJobsForWorkflowRunAttempt, {
    ...repoOf(job),
    run_id: Number(job.runId),
    attempt_number: Number(job.runAttempt),
    per_page: 100,
  })) as Job[];
  return job.runnerName ? jobs.filter((j) => j.runner_name === job.runnerName) : [];
}

function stateOf(j: Job, fallbackUrl: string): JobState {
  const url = j.html_url ?? fallbackUrl;
  return j.status === 'completed'
    ? { kind: 'completed', conclusion: j.conclusion ?? 'unknown', url }
    : { kind: 'running', status: j.status, url };
}

/** Why the API could not answer, in the operator's terms. */
function why(e: unknown): string {
  const status = (e as { status?: number }).status;
  if (status === 401) return 'the Actions API refused the token (401)';
  if (status === 403 || status === 404)
    return `the Actions API answered ${status}: the token needs \`actions: read\` on the repository`;
  return `the Actions API could not be reached: ${(e as Error)?.message ?? String(e)}`;
}

/**
 * Asks the Actions API about the GitHub job that holds a lease: by its id when the holder knew
 * it, else among its run attempt's jobs by the runner it ran on. A run attempt that has completed
 * has completed every job of it.
 */
export function actionsJobLookup(token: string, apiUrl?: string): JobLookup {
  return async (job) => {
    const octokit = client(token, job.apiUrl ?? apiUrl);
    const runUrl = `${job.serverUrl}/${job.repository}/actions/runs/${job.runId}/attempts/${job.runAttempt}`;
    try {
      if (job.jobId) {
        const j = (await octokit.rest.actions.getJobForWorkflowRun({ ...repoOf(job), job_id: job.jobId })).data as Job;
        return stateOf(j, job.jobUrl ?? runUrl);
      }
      const mine = await jobsOnRunner(octokit, job);
      const live = mine.find((j) => j.status !== 'completed');
      if (live) return stateOf(live, runUrl);
      if (mine.length) return stateOf(mine[mine.length - 1] as Job, runUrl);
      const run = (
        await octokit.rest.actions.getWorkflowRunAttempt({
          ...repoOf(job),
          run_id: Number(job.runId),
          attempt_number: Number(job.runAttempt),
        })
      ).data as { status: string | null; conclusion: string | null; html_url: string };
      if (run.status === 'completed')
        return { kind: 'completed', conclusion: run.conclusion ?? 'unknown', url: run.html_url ?? runUrl };
      return { kind: 'unknown', why: `no job of run attempt ${runUrl} ran on runner ${job.runnerName ?? '(unknown)'}` };
    } catch (e) {
      return { kind: 'unknown', why: why(e) };
    }
  };
}

/**
 * The job this process runs in (GITHUB_RUN_ID, GITHUB_RUN_ATTEMPT, RUNNER_NAME): its id and page,
 * recorded with the lease so that a taker can ask about it directly. Undefined when the API cannot tell.
 */
export async function currentJob(token: string, env: NodeJS.ProcessEnv = process.env) {
  if (!env.GITHUB_RUN_ID || !env.GITHUB_REPOSITORY || !env.RUNNER_NAME) return undefined;
  try {
    const mine = await jobsOnRunner(client(token, env.GITHUB_API_URL), {
      serverUrl: env.GITHUB_SERVER_URL ?? 'https://github.com',
      repository: env.GITHUB_REPOSITORY,
      runId: env.GITHUB_RUN_ID,
      runAttempt: env.GITHUB_RUN_ATTEMPT ?? '1',
      job: env.GITHUB_JOB ?? '',
      runnerName: env.RUNNER_NAME,
    });
    const j = mine.find((x) => x.status !== 'completed');
    return j?.html_url ? { jobId: j.id, jobUrl: j.html_url } : undefined;
  } catch {
    return undefined;
  }
}
