/**
 * A GitHub runner for the workflows `nyl init` writes, as far as the tutorial needs one: the jobs
 * of a workflow file (read from the commit the event names) in their `needs:` order, each on a
 * fresh checkout, their `if:` and the steps' `if:`, `with:` and `env:` evaluated as GitHub does;
 * every Nyl step run as the runner runs a node action (its action.yml's defaults, main and post
 * entry points, through the built bundles: test/helpers/action-step.ts), the post steps at the end
 * of the job. `run:` steps only print outputs in these workflows and are not run (the log says
 * so). A job's runner can die in the middle of a unit: SIGKILL to nyl and its tools, no post step,
 * the job left as GitHub leaves a job whose runner is lost.
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';
import { parse } from 'yaml';
import { type Running, type Step, startStep } from './action-step.js';
import { git, sleep, tempDir } from './repo.js';
import { condition, interpolate, type Scope, type Value } from './tutorial-expr.js';
import { type Job, SERVER_URL, type SimulatedGitHub } from './tutorial-github.js';

const ROOT = resolve(__dirname, '../..');
export const TOKEN = 'ghs_tutorial0000token';

export interface Event {
  name: 'push' | 'pull_request' | 'workflow_dispatch';
  /** The commit the workflow runs on (GITHUB_SHA) and its ref. */
  sha: string;
  ref: string;
  inputs?: Record<string, string>;
  pr?: number;
}

/** The runner of this job dies while this unit runs (after its output reached a heartbeat). */
export interface Dies {
  job: string;
  unit: string;
}

export interface JobOutcome {
  key: string;
  name: string;
  result: 'success' | 'failure' | 'skipped' | 'lost';
  job?: Job;
  steps: { name: string; step?: Step }[];
}

export interface WorkflowRun {
  file: string;
  event: Event;
  runId: number;
  attempt: number;
  jobs: JobOutcome[];
  /**
   * What a person reads in the Actions tab: each step's log (annotations as Error:/Warning:), then
   * its job summary (markdown).
   */
  log: string;
}

type Doc = Record<string, unknown>;
interface StepDef {
  name?: string;
  id?: string;
  uses?: string;
  run?: string;
  with?: Doc;
  env?: Doc;
  if?: unknown;
}
interface JobDef {
  name?: string;
  needs?: string | string[];
  if?: unknown;
  env?: Doc;
  steps: StepDef[];
}

/** `needs:` order: a job after every job it needs, else in file order. */
function ordered(jobs: Record<string, JobDef>): string[] {
  const out: string[] = [];
  const visit = (k: string) => {
    if (out.includes(k)) return;
    for (const n of [jobs[k]?.needs ?? []].flat()) visit(n);
    out.push(k);
  };
  for (const k of Object.keys(jobs)) visit(k);
  return out;
}

/** The workflow runner's log lines of a step's stdout: workflow commands as the Actions tab shows them. */
export function logOf(stdout: string): string {
  const out: string[] = [];
  for (const line of stdout.split('\n')) {
    const m = /^::([a-z-]+)(?: [^:]*)?::(.*)$/.exec(line);
    if (!m) out.push(line);
    else if (m[1] === 'error' || m[1] === 'warning' || m[1] === 'notice')
      out.push(`${(m[1][0] as string).toUpperCase()}${m[1].slice(1)}: ${(m[2] as string).replace(/%0A/g, '\n')}`);
    else if (m[1] === 'group') out.push(m[2] as string);
  }
  return out.join('\n');
}

interface ActionMeta {
  main: string;
  post?: string;
  postIf?: string;
  defaults: Record<string, string>;
}

/** A Nyl action by its `uses:` (`owner/nyl/actions/reconcile@v1`, or the root `owner/nyl@v1`). */
function nylAction(uses: string): ActionMeta | undefined {
  const m = /^[^/]+\/[^/@]+(?:\/(actions\/[\w-]+))?@.+$/.exec(uses);
  if (!m || uses.startsWith('actions/')) return undefined;
  const file = join(ROOT, m[1] ?? '', 'action.yml');
  const meta = parse(readFileSync(file, 'utf8')) as {
    inputs?: Record<string, { default?: unknown }>;
    runs: { main: string; post?: string; 'post-if'?: string };
  };
  const defaults: Record<string, string> = {};
  for (const [k, v] of Object.entries(meta.inputs ?? {})) if (v.default !== undefined) defaults[k] = String(v.default);
  const entry = (p: string) => basename(dirname(p));
  return {
    main: entry(meta.runs.main),
    ...(meta.runs.post ? { post: entry(meta.runs.post), postIf: meta.runs['post-if'] ?? 'always()' } : {}),
    defaults,
  };
}

export class Runner {
  constructor(
    private readonly gh: SimulatedGitHub,
    /**
     * Test knobs for the steps of a job whose runner dies (NYL_HEARTBEAT_INTERVAL: the test waits
     * for a heartbeat to carry the unit's output); other jobs run with the defaults.
     */
    private readonly knobs: Record<string, string> = {},
  ) {}

  /**
   * Runs `.github/workflows/<file>` of the event's commit; or, with `rerun`, its failed jobs again
   * as "Re-run failed jobs" does: the same run, its next attempt, the jobs that succeeded kept.
   */
  async run(file: string, event: Event, o: { dies?: Dies; rerun?: WorkflowRun } = {}): Promise<WorkflowRun> {
    const { dies, rerun } = o;
    const text = git(this.gh.bare, 'show', `${event.sha}:.github/workflows/${file}`);
    const wf = parse(text) as { jobs: Record<string, JobDef>; on?: Doc };
    if (event.name === 'workflow_dispatch') {
      const declared = ((wf.on?.workflow_dispatch as Doc | undefined)?.inputs ?? {}) as Record<string, Doc>;
      const unknown = Object.keys(event.inputs ?? {}).filter((k) => !(k in declared));
      if (unknown.length) throw new Error(`${file} has no workflow_dispatch input ${unknown.join(', ')}`);
      const defaults = Object.entries(declared).map(([k, d]) => [k, d.default === undefined ? '' : String(d.default)]);
      event = { ...event, inputs: { ...Object.fromEntries(defaults), ...event.inputs } };
    }
    const runId = rerun?.runId ?? this.gh.newRunId();
    const attempt = (rerun?.attempt ?? 0) + 1;
    const outcomes: JobOutcome[] = [];
    const log: string[] = [];
    for (const key of ordered(wf.jobs)) {
      const def = wf.jobs[key] as JobDef;
      const kept = rerun?.jobs.find((j) => j.key === key && j.result === 'success');
      if (kept) {
        outcomes.push(kept);
        continue;
      }
      const needs = Object.fromEntries(outcomes.map((o) => [o.key, o.result === 'lost' ? 'failure' : o.result]));
      const mine = [def.needs ?? []].flat();
      const scope = this.scope(
        event,
        { needs, steps: {} },
        mine.every((n) => needs[n] === 'success'),
      );
      const name = interpolate(def.name ?? key, scope);
      if (!condition(def.if, scope)) {
        outcomes.push({ key, name, result: 'skipped', steps: [] });
        continue;
      }
      log.push(`▶ job ${name}`);
      const o = await this.job(
        key,
        name,
        def,
        event,
        { runId, attempt },
        dies?.job === key ? dies.unit : undefined,
        log,
      );
      outcomes.push(o);
      log.push(`◀ job ${name}: ${o.result}`);
    }
    return { file, event, runId, attempt, jobs: outcomes, log: log.join('\n') };
  }

  private scope(event: Event, ctx: { needs: Record<string, string>; steps: Record<string, Doc> }, success: boolean) {
    const github: Doc = {
      event_name: event.name,
      sha: event.sha,
      ref: event.ref,
      token: TOKEN,
      actor: 'your-name',
      repository: this.gh.repository,
      event: { pull_request: event.pr ? { number: event.pr } : undefined },
    };
    const roots: Doc = {
      github,
      inputs: event.inputs ?? {},
      needs: Object.fromEntries(Object.entries(ctx.needs).map(([k, r]) => [k, { result: r }])),
      steps: ctx.steps,
    };
    const scope: Scope = {
      success,
      lookup: (path) => {
        let v: unknown = roots;
        for (const p of path) v = v && typeof v === 'object' ? (v as Doc)[p] : undefined;
        if (v === undefined || v === null) return null;
        if (typeof v === 'object') throw new Error(`${path.join('.')} is an object, not a value`);
        return v as Value;
      },
    };
    return scope;
  }

  private async job(
    key: string,
    name: string,
    def: JobDef,
    event: Event,
    { runId, attempt }: { runId: number; attempt: number },
    dieIn: string | undefined,
    log: string[],
  ): Promise<JobOutcome> {
    const job: Job = {
      id: 7000 + this.gh.jobs.length + 1,
      runId,
      attempt,
      name,
      runnerName: `GitHub Actions ${this.gh.jobs.length + 1}`,
      status: 'in_progress',
      conclusion: null,
    };
    this.gh.jobs.push(job);
    const steps: Record<string, Doc> = {};
    const outcome: JobOutcome = { key, name, result: 'success', job, steps: [] };
    const posts: { meta: ActionMeta; inputs: Record<string, string>; env: Record<string, string>; state: Step }[] = [];
    let workspace = '';
    for (const s of def.steps) {
      const scope = this.scope(event, { needs: {}, steps }, outcome.result === 'success');
      const title = interpolate(s.name ?? s.uses ?? s.run?.split('\n')[0] ?? '', scope);
      if (!condition(s.if, scope)) continue;
      if (s.uses?.startsWith('actions/checkout@')) {
        workspace = this.checkout(event);
        continue;
      }
      if (!s.uses) {
        log.push(`▶ ${title}\n(a run: step; not run by this simulation)`);
        continue;
      }
      const meta = nylAction(s.uses);
      if (!meta)
        throw new Error(`step ${title}: this simulation runs actions/checkout and Nyl's actions, not ${s.uses}`);
      const inputs = { ...this.with(meta.defaults, scope), ...this.with(s.with ?? {}, scope) };
      const env = {
        ...this.runnerEnv(event, job),
        ...(dieIn ? this.knobs : {}),
        ...this.with(def.env ?? {}, scope),
        ...this.with(s.env ?? {}, scope),
      };
      log.push(`▶ ${title}`);
      const running = startStep(
        meta.main,
        { dir: workspace, bare: this.gh.bare, ctl: '' },
        { inputs, env, runId: String(runId) },
      );
      const step = dieIn ? await this.dies(running, inputs.environment as string, dieIn) : await running.done;
      log.push(logOf(step.stdout));
      if (step.summary.trim()) log.push(`▶ job summary of ${title}`, step.summary);
      outcome.steps.push({ name: title, step });
      if (dieIn) {
        outcome.result = 'lost';
        return outcome;
      }
      if (s.id) steps[s.id] = { outputs: step.outputs, outcome: step.code === 0 ? 'success' : 'failure' };
      if (step.code !== 0) outcome.result = 'failure';
      if (meta.post) posts.push({ meta, inputs, env, state: step });
    }
    for (const p of posts.reverse()) {
      const scope = this.scope(event, { needs: {}, steps }, outcome.result === 'success');
      if (!p.meta.post || !condition(p.meta.postIf, scope)) continue;
      const post = await startStep(
        p.meta.post,
        { dir: workspace, bare: this.gh.bare, ctl: '' },
        {
          inputs: p.inputs,
          env: p.env,
          state: p.state.state,
          runId: String(runId),
        },
      ).done;
      if (post.stdout.trim()) log.push(`▶ Post ${p.meta.main}\n${logOf(post.stdout)}`);
    }
    job.status = 'completed';
    job.conclusion = outcome.result;
    return outcome;
  }

  private with(values: Doc, scope: Scope): Record<string, string> {
    return Object.fromEntries(Object.entries(values).map(([k, v]) => [k, interpolate(v, scope)]));
  }

  /** What the runner sets for every step of this job. */
  private runnerEnv(event: Event, job: Job): Record<string, string> {
    const payload = join(tempDir('nyl-tutorial-event-'), 'event.json');
    const repository = { full_name: this.gh.repository };
    const body =
      event.name === 'pull_request'
        ? { pull_request: { number: event.pr, head: { repo: repository } }, repository }
        : { ref: event.ref, after: event.sha, inputs: event.inputs, repository };
    writeFileSync(payload, JSON.stringify(body));
    return {
      // A runner has no git identity: who asked is the workflow's actor (or the job's env).
      GIT_AUTHOR_NAME: '',
      GIT_AUTHOR_EMAIL: '',
      GIT_COMMITTER_NAME: '',
      GIT_COMMITTER_EMAIL: '',
      GITHUB_EVENT_NAME: event.name,
      GITHUB_EVENT_PATH: payload,
      GITHUB_SHA: event.sha,
      GITHUB_REF: event.ref,
      GITHUB_REPOSITORY: this.gh.repository,
      GITHUB_SERVER_URL: SERVER_URL,
      GITHUB_API_URL: this.gh.url,
      GITHUB_RUN_ATTEMPT: String(job.attempt),
      GITHUB_JOB: job.name,
      GITHUB_ACTOR: 'your-name',
      RUNNER_NAME: job.runnerName,
    };
  }

  /** actions/checkout: a full clone at the event's commit (a push: its branch; a pull request: its test merge). */
  private checkout(event: Event): string {
    const dir = join(tempDir('nyl-tutorial-runner-'), 'work');
    git(tempDir(), 'clone', '-q', `file://${this.gh.bare}`, dir);
    if (event.pr) {
      git(dir, 'fetch', '-q', 'origin', `refs/pull/${event.pr}/merge`);
      git(dir, 'checkout', '-q', '--detach', event.sha);
    } else git(dir, 'checkout', '-q', '-B', event.ref.replace('refs/heads/', ''), event.sha);
    return dir;
  }

  /**
   * The runner's machine dies while `unit` runs: once the run's record on the remote holds the
   * unit's output (its last heartbeat), nyl and every tool it started are killed at once.
   */
  private async dies(running: Running, environment: string, unit: string): Promise<Step> {
    const deadline = Date.now() + 30_000;
    const tailed = () =>
      git(this.gh.bare, 'for-each-ref', '--format=%(refname)', `refs/nyl/${environment}/runs/`)
        .split('\n')
        .some((ref) => {
          try {
            return !!ref && git(this.gh.bare, 'show', `${ref}:units/${unit}/tail.txt`).trim() !== '';
          } catch {
            return false;
          }
        });
    let ended: Step | undefined;
    running.done.then((s) => {
      ended = s;
    });
    while (!tailed()) {
      if (ended)
        throw new Error(`the step ended before ${unit} ran (exit ${ended.code}):\n${ended.stdout}\n${ended.stderr}`);
      if (Date.now() > deadline) throw new Error(`${unit} never reached a heartbeat of the ${environment} run`);
      await sleep(100);
    }
    running.child.kill('SIGKILL');
    const step = await running.done;
    const groups = step.state['groups-file'];
    const listed = groups && existsSync(groups) ? readFileSync(groups, 'utf8') : '';
    for (const line of listed.split('\n')) {
      const pgid = Number(line.split(' ')[0]?.replace(/^\+/, ''));
      if (line.startsWith('-') || !Number.isInteger(pgid) || pgid <= 0) continue;
      try {
        process.kill(-pgid, 'SIGKILL');
      } catch {
        /* gone */
      }
    }
    return step;
  }
}
