import type { GithubJob } from '../../state/documents.js';
import { githubUrl } from '../../state/lease.js';

/**
 * Whether the GitHub Actions job that holds a lease has finished: a completed job (any
 * conclusion: success, failure, cancelled, a lost runner) can no longer write, so its lease can
 * be taken over without a person. The faces provide the lookup (the Actions API, with the
 * workflow's token or GITHUB_TOKEN); the core only asks.
 */
export type JobState =
  | { kind: 'running'; status: string; url: string }
  | { kind: 'completed'; conclusion: string; url: string }
  | { kind: 'unknown'; why: string };

export type JobLookup = (job: GithubJob) => Promise<JobState>;

/** A lookup that always says why it cannot tell (no token, not in GitHub's reach). */
export function noLookup(why: string): JobLookup {
  return async () => ({ kind: 'unknown', why });
}

/** What NYL-LEASE-HELD adds about a GitHub holder's job. */
export function jobNote(job: GithubJob, state: JobState): string {
  if (state.kind === 'running') return `its GitHub job ${state.url} is ${state.status.replace('_', ' ')}`;
  if (state.kind === 'completed') return `its GitHub job ${state.url} has completed (${state.conclusion})`;
  return `whether its GitHub job ${githubUrl(job)} has finished could not be checked: ${state.why}`;
}
