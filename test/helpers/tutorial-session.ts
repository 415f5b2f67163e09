/**
 * The reader of the tutorial: a terminal (bash, one block after another, keeping the folder and
 * the exports of the last block), a home with a git identity, `nyl` on PATH (the built CLI), and
 * github.com simulated (tutorial-github.ts,
 * tutorial-workflow.ts): the page's https://github.com/your-name/hello-nyl.git is the simulation's
 * bare repository, by git's `url.<base>.insteadOf` in the reader's ~/.gitconfig.
 */
import { spawn } from 'node:child_process';
import { chmodSync, cpSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { tempDir } from './repo.js';
import type { Item } from './tutorial-doc.js';
import { SimulatedGitHub } from './tutorial-github.js';
import { type Dies, type Event, Runner, type WorkflowRun } from './tutorial-workflow.js';

const ROOT = resolve(__dirname, '../..');

export interface Ran {
  code: number;
  output: string;
}

/** The environment of the test process without what a runner or a developer's shell sets for nyl. */
function readerEnv(): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env))
    if (v !== undefined && !/^(GITHUB_|GH_|INPUT_|STATE_|ACTIONS_|RUNNER_|NYL_|GIT_)/.test(k) && k !== 'CI') env[k] = v;
  return env;
}

export class Session {
  readonly gh: SimulatedGitHub;
  readonly runner: Runner;
  readonly home: string;
  private readonly state: string;
  private readonly env: Record<string, string>;
  runs: WorkflowRun[] = [];

  constructor(
    readonly repoUrl: string,
    repository: string,
    knobs: Record<string, string>,
  ) {
    this.gh = new SimulatedGitHub(repository);
    this.runner = new Runner(this.gh, knobs);
    this.home = tempDir('nyl-tutorial-home-');
    this.state = tempDir('nyl-tutorial-shell-');
    const bin = join(tempDir('nyl-tutorial-bin-'), 'bin');
    mkdirSync(bin);
    // The CLI from a copy of dist/, so that another build of dist/ cannot swap files under it.
    const dist = join(dirname(bin), 'dist');
    cpSync(join(ROOT, 'dist'), dist, { recursive: true });
    writeFileSync(join(bin, 'nyl'), `#!/bin/sh\nexec node ${dist}/cli.js "$@"\n`);
    chmodSync(join(bin, 'nyl'), 0o755);
    writeFileSync(
      join(this.home, '.gitconfig'),
      `[user]\n\tname = Your Name\n\temail = you@example.com\n[url "file://${this.gh.bare}"]\n\tinsteadOf = ${repoUrl}\n`,
    );
    this.env = {
      ...readerEnv(),
      HOME: this.home,
      PATH: `${bin}:${process.env.PATH}`,
      GIT_CONFIG_NOSYSTEM: '1',
      // The page's api.github.com.
      GITHUB_API_URL: '',
    };
    writeFileSync(join(this.state, 'cwd'), this.home);
    writeFileSync(join(this.state, 'env.sh'), '');
  }

  async start(): Promise<void> {
    await this.gh.start();
    this.env.GITHUB_API_URL = this.gh.url;
  }

  cwd(): string {
    return readFileSync(join(this.state, 'cwd'), 'utf8').trim();
  }

  /** A terminal block: bash, in the folder the last block ended in, with its exports. */
  shell(code: string): Promise<Ran> {
    const script = [
      'exec 2>&1',
      `trap 'pwd > ${this.state}/cwd; export -p > ${this.state}/env.sh' EXIT`,
      `cd "$(cat ${this.state}/cwd)"`,
      `. ${this.state}/env.sh`,
      'set -e',
      code,
    ].join('\n');
    return new Promise((res, rej) => {
      const child = spawn('bash', ['--noprofile', '--norc', '-c', script], {
        env: this.env,
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let output = '';
      child.stdout.on('data', (d) => {
        output += d;
      });
      child.stderr.on('data', (d) => {
        output += d;
      });
      const timer = setTimeout(() => child.kill('SIGKILL'), 60_000);
      child.on('error', rej);
      child.on('close', (code) => {
        clearTimeout(timer);
        res({ code: code ?? -1, output });
      });
    });
  }

  /** A file block: written where the terminal is. */
  file(item: Extract<Item, { kind: 'file' }>): void {
    const path = join(this.cwd(), item.path);
    mkdirSync(dirname(path), { recursive: true });
    writeFileSync(path, this.edited(item, path));
  }

  private edited(item: Extract<Item, { kind: 'file' }>, path: string): string {
    if (item.mode === 'write') return item.content;
    if (!existsSync(path)) throw new Error(`${item.path} does not exist: nothing to add to`);
    const text = readFileSync(path, 'utf8');
    if (item.mode === 'append') return `${text}${text.endsWith('\n') ? '' : '\n'}${item.content}`;
    const { from } = item.mode;
    const at = text.split('\n').findIndex((l) => l.startsWith(from));
    if (at < 0) throw new Error(`${item.path} has no line that starts with ${JSON.stringify(from)}`);
    return `${text.split('\n').slice(0, at).join('\n')}\n${item.content}`;
  }

  /**
   * An event on github.com: `pull-request BRANCH`, `merge BRANCH[, JOB dies in UNIT]`,
   * `run FILE [input=value …]`, `rerun` (the failed jobs of the last workflow run), `runner-lost JOB`; what it shows (the log of its workflow run, and
   * for a pull request the comments on it) and the result of each job that ran.
   */
  async github(event: string): Promise<{ output: string; results: Record<string, string> }> {
    const [what = '', ...args] = event.split(/\s+/);
    let run: WorkflowRun | undefined;
    const before = new Map(this.gh.fake.comments.map((c) => [c.id, c.body]));
    if (what === 'pull-request') {
      const pr = this.gh.openPullRequest(args[0] as string);
      run = await this.runner.run('plan.yml', this.at(pr.testMerge, `refs/pull/${pr.number}/merge`, pr.number));
    } else if (what === 'merge') {
      const dies = /^([^,\s]+),?\s+(\S+) dies in (\S+)$/.exec(args.join(' '));
      const pr = this.gh.merge(dies ? (dies[1] as string) : (args[0] as string));
      const die: Dies | undefined = dies ? { job: dies[2] as string, unit: dies[3] as string } : undefined;
      run = await this.runner.run(
        'deploy.yml',
        { name: 'push', sha: pr.merged as string, ref: 'refs/heads/main' },
        { dies: die },
      );
    } else if (what === 'run') {
      const inputs = Object.fromEntries(args.slice(1).map((a) => a.split('=', 2) as [string, string]));
      const event: Event = { name: 'workflow_dispatch', sha: this.gh.main(), ref: 'refs/heads/main', inputs };
      run = await this.runner.run(args[0] as string, event);
    } else if (what === 'rerun') {
      const last = this.runs.at(-1);
      if (!last) throw new Error('no workflow run to re-run');
      run = await this.runner.run(last.file, last.event, { rerun: last });
    } else if (what === 'runner-lost') {
      this.loseRunner(args[0] as string);
      return { output: '', results: {} };
    } else
      throw new Error(`unknown github event ${JSON.stringify(event)}: pull-request, merge, run, rerun or runner-lost`);
    this.runs.push(run);
    const results = Object.fromEntries(run.jobs.map((j) => [j.key, j.result]));
    // The comments this event wrote or changed, as the pull request shows them.
    const comments = this.gh.fake.comments.filter((c) => before.get(c.id) !== c.body).map((c) => `${c.body}\n`);
    return { output: [run.log, ...comments].join('\n'), results };
  }

  private at(sha: string, ref: string, pr: number): Event {
    return { name: 'pull_request', sha, ref, pr };
  }

  /** GitHub gives up on a lost runner: its job completes, failed. */
  private loseRunner(key: string): void {
    const lost = this.runs.flatMap((r) => r.jobs).findLast((j) => j.key === key && j.result === 'lost');
    if (!lost?.job) throw new Error(`no job ${key} lost its runner`);
    lost.job.status = 'completed';
    lost.job.conclusion = 'failure';
  }
}
