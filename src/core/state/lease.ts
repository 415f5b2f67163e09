import { hostname, userInfo } from 'node:os';
import { Exit, type Problem, problem } from '../util/errors.js';
import { isoTime, withOffset } from '../util/time.js';
import type { GithubJob, Holder, LeaseDoc, RunRecord } from './documents.js';
import type { EnvState } from './read.js';

/** Deadlines are written by the holder's clock; another runner's clock may differ this much. */
export const CLOCK_SKEW_MS = 60_000;
export const GRACE_MS = 10 * 60_000;
export const RESOLUTION_TIMEOUT_MS = 30 * 60_000;

/** The job this process runs in, as far as the API told (set by the face that asked it). */
let knownJob: { jobId: number; jobUrl: string } | undefined;
export function setCurrentJob(job: { jobId: number; jobUrl: string } | undefined): void {
  knownJob = job;
}

export function currentHolder(env: NodeJS.ProcessEnv = process.env): Holder {
  let user = 'unknown';
  try {
    user = userInfo().username || 'unknown';
  } catch {
    /* no passwd entry (containers) */
  }
  const h: Holder = { id: `${user}@${hostname() || 'localhost'}` };
  if (env.GITHUB_ACTOR) h.actor = env.GITHUB_ACTOR;
  const server = env.GITHUB_SERVER_URL ?? 'https://github.com';
  if (env.GITHUB_RUN_ID) {
    h.workflowRun = `${server}/${env.GITHUB_REPOSITORY ?? ''}/actions/runs/${env.GITHUB_RUN_ID}`;
    h.github = {
      serverUrl: server,
      ...(env.GITHUB_API_URL ? { apiUrl: env.GITHUB_API_URL } : {}),
      repository: env.GITHUB_REPOSITORY ?? '',
      runId: env.GITHUB_RUN_ID,
      runAttempt: env.GITHUB_RUN_ATTEMPT ?? '1',
      job: env.GITHUB_JOB ?? '',
      ...(env.RUNNER_NAME ? { runnerName: env.RUNNER_NAME } : {}),
      ...(knownJob ?? {}),
    };
  }
  return h;
}

/** Where people look at a GitHub holder: its job's page, else its run attempt's. */
export function githubUrl(g: GithubJob): string {
  return g.jobUrl ?? `${g.serverUrl}/${g.repository}/actions/runs/${g.runId}/attempts/${g.runAttempt}`;
}

export function holderText(h: Holder): string {
  const where = h.github ? githubUrl(h.github) : h.workflowRun;
  return h.actor ? `${h.id} (${h.actor}${where ? `, ${where}` : ''})` : h.id;
}

export type LeaseVerdict =
  | { kind: 'free' }
  | { kind: 'held'; run: string; operation: string; holder: Holder; deadline: string; via: 'lease' | 'run-ref' }
  /** The deadline passed by this machine's clock: the holder may be gone (a taker confirms it first). */
  | { kind: 'expired'; run: string; deadline: string; via: 'lease' | 'run-ref' }
  | { kind: 'broken'; run: string; lease: LeaseDoc };

function expired(deadline: string, now: number): boolean {
  return Date.parse(deadline) + CLOCK_SKEW_MS < now;
}

/** Who holds the environment: a live lease, or an unfinished run ref whose deadline is ahead. */
export function leaseVerdict(state: EnvState, now: number): LeaseVerdict {
  const l = state.lease;
  if (l?.state === 'held' && !expired(l.deadline, now))
    return { kind: 'held', run: l.run, operation: l.operation, holder: l.holder, deadline: l.deadline, via: 'lease' };
  // Deleting the lease ref does not free the environment: a live run ref holds it too. While a
  // lease document exists it is the authority: a run ref it does not name lost the lease.
  if (!l) {
    let late: RunRecord | undefined;
    for (const r of state.runs.values()) {
      const rec = r.record;
      if (!rec || rec.phase === 'finished') continue;
      if (!expired(rec.deadline, now))
        return {
          kind: 'held',
          run: rec.run,
          operation: rec.operation,
          holder: rec.holder,
          deadline: rec.deadline,
          via: 'run-ref',
        };
      late ??= rec;
    }
    if (late) return { kind: 'expired', run: late.run, deadline: late.deadline, via: 'run-ref' };
  }
  if (l?.state === 'broken') return { kind: 'broken', run: l.run, lease: l };
  if (l?.state === 'held') {
    // A holder that marked its run finished (it stopped after losing the lease) needs no wait.
    const rec = state.runs.get(l.run)?.record;
    if (rec?.phase === 'finished') return { kind: 'free' };
    return { kind: 'expired', run: l.run, deadline: l.deadline, via: 'lease' };
  }
  return { kind: 'free' };
}

/** As `held`: what a live holder whose deadline this machine's clock says passed is. */
export function asHeld(
  state: EnvState,
  v: Extract<LeaseVerdict, { kind: 'expired' }>,
): Extract<LeaseVerdict, { kind: 'held' }> {
  const rec = state.runs.get(v.run)?.record;
  const l = state.lease?.run === v.run ? state.lease : undefined;
  return {
    kind: 'held',
    run: v.run,
    operation: l?.operation ?? rec?.operation ?? 'unknown',
    holder: l?.holder ?? rec?.holder ?? { id: 'unknown' },
    deadline: v.deadline,
    via: v.via,
  };
}

/**
 * NYL-CLOCK-SKEW: times written by other runners that this machine's clock cannot agree with —
 * a renewal ahead of it. (A holder seen renewing past its deadline is reported where it is seen.)
 */
export function clockSkewProblems(state: EnvState, now: number): Problem[] {
  const out: Problem[] = [];
  const ahead = (t: string | undefined) => t !== undefined && Date.parse(t) > now + CLOCK_SKEW_MS;
  const l = state.lease;
  const seen = new Set<string>();
  const report = (what: string, at: string) => {
    if (seen.has(what)) return;
    seen.add(what);
    out.push(
      skewProblem(
        state.environment,
        `${what} at ${withOffset(at)} by its holder's clock, ${Math.round((Date.parse(at) - now) / 1000)}s ahead of this machine's clock (${withOffset(isoTime(now))})`,
      ),
    );
  };
  if (l && ahead(l.renewedAt)) report(`the lease of run ${l.run} was renewed`, l.renewedAt);
  for (const r of state.runs.values())
    if (r.record && r.record.phase !== 'finished' && ahead(r.record.updatedAt))
      report(`run ${r.id} wrote its record`, r.record.updatedAt);
  return out;
}

export function skewProblem(env: string, message: string): Problem {
  return problem(
    'NYL-CLOCK-SKEW',
    `${message}; runners' clocks disagree, so nyl judges the lease by what it sees change, not by these times`,
    {
      severity: 'warning',
      subject: env,
      exit: Exit.ok,
      fix: 'synchronize the clocks (NTP) of the machines that run nyl',
    },
  );
}

export function newLease(
  environment: string,
  run: string,
  operation: string,
  holder: Holder,
  now: number,
  deadlineMs: number,
): LeaseDoc {
  const at = isoTime(now);
  return {
    schema: 'nyl.lease/v1',
    environment,
    state: 'held',
    run,
    operation,
    holder,
    acquiredAt: at,
    renewedAt: at,
    deadline: isoTime(now + deadlineMs),
  };
}

export function runRecordDeadline(rec: RunRecord): number {
  return Date.parse(rec.deadline);
}
