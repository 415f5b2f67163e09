/**
 * github.com as the tutorial needs it, on this machine: the repository is a bare git repository
 * over file://, the REST API is test/helpers/fake-github.ts (pull request comments, the pull
 * requests of a commit, Deployments) behind a front that also answers the Actions API about the
 * jobs this simulation runs (whether a job that held a lease has finished), and pull requests are
 * merge commits made as GitHub makes them (`refs/pull/N/merge` for the plan, a merge commit on
 * main when merged).
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { FakeGitHub } from './fake-github.js';
import { git, tempDir } from './repo.js';

export const SERVER_URL = 'https://github.com';

/** A job of a workflow run, as the Actions API describes it. */
export interface Job {
  id: number;
  runId: number;
  attempt: number;
  name: string;
  runnerName: string;
  status: 'queued' | 'in_progress' | 'completed';
  conclusion: string | null;
}

export interface PullRequest {
  number: number;
  branch: string;
  /** refs/pull/N/merge: the test merge the plan workflow checks out. */
  testMerge: string;
  /** The merge commit on main, once merged. */
  merged?: string;
}

export class SimulatedGitHub {
  readonly fake: FakeGitHub;
  readonly jobs: Job[] = [];
  readonly pulls: PullRequest[] = [];
  /** The repository on "github.com": the remote the tutorial pushes to. */
  readonly bare: string;
  url = '';
  private server: Server | undefined;
  private nextRun = 4001;

  constructor(readonly repository: string) {
    this.fake = new FakeGitHub(repository);
    this.bare = join(tempDir('nyl-tutorial-github-'), `${repository.split('/')[1]}.git`);
    git(tempDir(), 'init', '-q', '--bare', '-b', 'main', this.bare);
  }

  async start(): Promise<this> {
    await this.fake.start();
    this.server = createServer((req, res) => {
      this.answer(req, res).catch((e: unknown) => {
        res.writeHead(500, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ message: String(e) }));
      });
    });
    await new Promise<void>((r) => this.server?.listen(0, '127.0.0.1', r));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
    return this;
  }

  close(): Promise<void> {
    return Promise.all([this.fake.close(), new Promise<void>((r) => this.server?.close(() => r()))]).then(() => {});
  }

  newRunId(): number {
    return this.nextRun++;
  }

  jobUrl(j: Job): string {
    return `${SERVER_URL}/${this.repository}/actions/runs/${j.runId}/job/${j.id}`;
  }

  /** The Actions API here; everything else goes to the fake GitHub. */
  private async answer(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const path = (req.url ?? '/').split('?')[0] as string;
    const base = `/repos/${this.repository}/actions`;
    const send = (status: number, data: unknown) => {
      res.writeHead(status, { 'content-type': 'application/json; charset=utf-8' });
      res.end(JSON.stringify(data));
    };
    const view = (j: Job) => ({
      id: j.id,
      run_id: j.runId,
      run_attempt: j.attempt,
      name: j.name,
      status: j.status,
      conclusion: j.conclusion,
      html_url: this.jobUrl(j),
      runner_name: j.runnerName,
    });
    const attemptJobs = new RegExp(`^${base}/runs/(\\d+)/attempts/(\\d+)/jobs$`).exec(path);
    if (attemptJobs) {
      const found = this.jobs.filter((j) => j.runId === Number(attemptJobs[1]) && j.attempt === Number(attemptJobs[2]));
      return send(200, { total_count: found.length, jobs: found.map(view) });
    }
    const one = new RegExp(`^${base}/jobs/(\\d+)$`).exec(path);
    if (one) {
      const j = this.jobs.find((x) => x.id === Number(one[1]));
      return j ? send(200, view(j)) : send(404, { message: 'Not Found' });
    }
    if (path.startsWith(`${base}/`)) return send(404, { message: 'Not Found' });
    await this.forward(req, res);
  }

  private async forward(req: IncomingMessage, res: ServerResponse): Promise<void> {
    let body = '';
    for await (const chunk of req) body += chunk;
    const headers: Record<string, string> = {};
    for (const h of ['content-type', 'authorization', 'accept'])
      if (typeof req.headers[h] === 'string') headers[h] = req.headers[h] as string;
    const r = await fetch(`${this.fake.url}${req.url}`, { method: req.method, headers, body: body || undefined });
    res.writeHead(r.status, { 'content-type': r.headers.get('content-type') ?? 'application/json' });
    // The fake's links name github.example; the page shows github.com's.
    res.end((await r.text()).replaceAll('https://github.example/', `${SERVER_URL}/`));
  }

  /** A scratch clone of the repository, to make the commits GitHub makes. */
  private scratch(): string {
    const dir = join(tempDir('nyl-tutorial-merge-'), 'repo');
    git(tempDir(), 'clone', '-q', `file://${this.bare}`, dir);
    return dir;
  }

  /** Opens the pull request of `branch` into main, or updates it: its test merge, as refs/pull/N/merge. */
  openPullRequest(branch: string): PullRequest {
    let pr = this.pulls.find((p) => p.branch === branch && !p.merged);
    if (!pr) {
      pr = { number: this.pulls.length + 1, branch, testMerge: '' };
      this.pulls.push(pr);
    }
    const dir = this.scratch();
    const head = git(dir, 'rev-parse', `origin/${branch}`);
    git(dir, 'merge', '-q', '--no-ff', '-m', `Merge ${head} into main`, `origin/${branch}`);
    pr.testMerge = git(dir, 'rev-parse', 'HEAD');
    git(dir, 'push', '-q', '-f', 'origin', `HEAD:refs/pull/${pr.number}/merge`);
    return pr;
  }

  /** Merges the open pull request of `branch` ("Create a merge commit") and pushes main. */
  merge(branch: string): PullRequest {
    const pr = this.pulls.find((p) => p.branch === branch && !p.merged);
    if (!pr) throw new Error(`no open pull request from ${branch}: open it first (github: pull-request ${branch})`);
    const dir = this.scratch();
    const [owner] = this.repository.split('/');
    git(
      dir,
      'merge',
      '-q',
      '--no-ff',
      '-m',
      `Merge pull request #${pr.number} from ${owner}/${branch}`,
      `origin/${branch}`,
    );
    pr.merged = git(dir, 'rev-parse', 'HEAD');
    git(dir, 'push', '-q', 'origin', 'main');
    this.fake.pulls.set(pr.merged, [{ number: pr.number, merge_commit_sha: pr.merged }]);
    return pr;
  }

  main(): string {
    return git(this.bare, 'rev-parse', 'main');
  }
}
