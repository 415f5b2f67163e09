/**
 * GitHub-native coordination, against a local HTTP server that answers the parts of the Actions
 * API nyl uses (nyl asks it with the real @actions/github client): the lease of a GitHub job is
 * taken over without a person once the API says the job completed; held while it is in progress;
 * today's behaviour, with the reason, when the API refuses. And deploys never go backwards: a
 * reconcile of a commit older than the recorded one is superseded, nothing run.
 */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  command,
  commitFiles,
  ENV_DEV,
  git,
  makeRepo,
  nyl,
  nylJson,
  parseTable,
  startNyl,
  tempDir,
  waitForFile,
} from './helpers/repo.js';

const REPO = 'acme/app';
const SERVER = 'https://github.example';
const RUN = '4242';
const JOB_ID = 7001;
const JOB_URL = `${SERVER}/${REPO}/actions/runs/${RUN}/job/${JOB_ID}`;

/** The job the fake API describes: its status and conclusion can change between requests. */
const job = { status: 'in_progress', conclusion: null as string | null, refuse: 0 };
const requests: string[] = [];
let server: Server;
let api = '';

beforeAll(async () => {
  server = createServer((req, res) => {
    requests.push(`${req.method} ${req.url?.split('?')[0]}`);
    const send = (status: number, body: unknown) => {
      res.writeHead(status, { 'content-type': 'application/json' });
      res.end(JSON.stringify(body));
    };
    if (job.refuse) return send(job.refuse, { message: 'Resource not accessible by integration' });
    const view = {
      id: JOB_ID,
      status: job.status,
      conclusion: job.conclusion,
      html_url: JOB_URL,
      runner_name: 'runner-7',
    };
    const base = `/repos/${REPO}/actions`;
    const path = req.url?.split('?')[0] ?? '';
    if (path === `${base}/jobs/${JOB_ID}`) return send(200, view);
    if (path === `${base}/runs/${RUN}/attempts/1/jobs`) return send(200, { total_count: 1, jobs: [view] });
    if (path === `${base}/runs/${RUN}/attempts/1`)
      return send(200, {
        id: Number(RUN),
        status: job.status,
        conclusion: job.conclusion,
        html_url: `${SERVER}/${REPO}/actions/runs/${RUN}`,
      });
    send(404, { message: 'Not Found' });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  api = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  await new Promise((r) => server.close(r));
});

/** What a GitHub runner's job has in its environment (and its token). */
const inJob = () => ({
  GITHUB_ACTIONS: 'true',
  GITHUB_SERVER_URL: SERVER,
  GITHUB_API_URL: api,
  GITHUB_REPOSITORY: REPO,
  GITHUB_RUN_ID: RUN,
  GITHUB_RUN_ATTEMPT: '1',
  GITHUB_JOB: 'reconcile',
  RUNNER_NAME: 'runner-7',
  GITHUB_ACTOR: 'deployer',
  GITHUB_TOKEN: 'ghs_jobtoken1234',
});
/** A workstation with a token. */
const workstation = () => ({ GITHUB_API_URL: api, GITHUB_TOKEN: 'ghp_operator5678' });

function setup() {
  const bare = join(tempDir('nyl-gh-'), 'r.git');
  execFileSync('git', ['init', '--bare', '-q', bare]);
  const ctl = tempDir('nyl-ctl-');
  const dir = makeRepo({
    'nyl.yaml':
      ENV_DEV +
      command(
        'migrate',
        `echo run >> ${ctl}/runs; touch ${ctl}/started; while [ ! -f ${ctl}/go ]; do sleep 0.05; done`,
      ),
  });
  git(dir, 'remote', 'add', 'origin', `file://${bare}`);
  return { dir, bare, ctl };
}

describe('the lease of a GitHub job', () => {
  it('is held while the job runs, named by its URL; taken over at once when the job completed; the reason when the API refuses', async () => {
    job.status = 'in_progress';
    job.conclusion = null;
    job.refuse = 0;
    const s = setup();
    // The holder runs in a GitHub job; its runner is lost mid-unit (nyl killed, the job goes on as far as GitHub knows).
    const holder = startNyl(s.dir, ['reconcile', '-e', 'dev'], inJob());
    await waitForFile(join(s.ctl, 'started'));
    holder.child.kill('SIGKILL');
    await holder.done;
    const lease = JSON.parse(git(s.bare, 'show', 'refs/nyl/dev/lease:lease.json')) as {
      holder: { github: Record<string, unknown> };
    };
    expect(lease.holder.github).toMatchObject({
      repository: REPO,
      runId: RUN,
      runAttempt: '1',
      job: 'reconcile',
      runnerName: 'runner-7',
      jobId: JOB_ID,
      jobUrl: JOB_URL,
    });

    // In progress: held, and the job is named.
    const held = await nyl(s.dir, ['reconcile', '-e', 'dev'], workstation());
    expect(held.code, held.stderr).toBe(2);
    expect(held.stderr).toMatch(
      /^error NYL-LEASE-HELD\n {2}dev is held by run \S+ \(reconcile\) by \S+ \(deployer, https:\/\/github\.example\/acme\/app\/actions\/runs\/4242\/job\/7001\), until /,
    );
    expect(held.stderr).toContain(`\n  its GitHub job ${JOB_URL} is in progress\n`);

    // The API refuses: as without it, and says why.
    job.refuse = 403;
    const refused = await nyl(s.dir, ['reconcile', '-e', 'dev'], workstation());
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain(
      `whether its GitHub job ${JOB_URL} has finished could not be checked: the Actions API answered 403: the token needs \`actions: read\` on the repository`,
    );
    // No token at all: says so.
    const none = await nyl(s.dir, ['reconcile', '-e', 'dev'], { GITHUB_TOKEN: '' });
    expect(none.stderr).toContain('could not be checked: no token to ask the Actions API with: set GITHUB_TOKEN');
    job.refuse = 0;

    // Completed (cancelled): a write that does not import says so, and waits for the import.
    job.status = 'completed';
    job.conclusion = 'cancelled';
    const hold = await nyl(s.dir, ['hold', '-e', 'dev', '--unit', 'migrate', '--reason', 'x'], workstation());
    expect(hold.code).toBe(2);
    expect(hold.stderr).toContain(
      `its GitHub job ${JOB_URL} has completed (cancelled): the next \`nyl reconcile -e dev\` or \`nyl recover -e dev\` breaks its lease and imports it`,
    );
    // …and the next reconcile breaks it and imports at once, recording the break once.
    const next = await nyl(s.dir, ['reconcile', '-e', 'dev'], workstation());
    expect(next.code, next.stderr).toBe(4);
    expect(Object.fromEntries(parseTable(next.stdout).map((r) => [r.UNIT, r.RESULT]))).toEqual({
      migrate: 'uncertain',
    });
    expect(next.stdout).toContain('when its lease was broken');
    const msg = git(s.bare, 'log', '-1', '--format=%B', 'refs/nyl/dev/observed');
    expect(msg).toMatch(
      new RegExp(
        `^leaseBroken: \\{"at":"[^"]+","by":"[^"]+","reason":"GitHub job ${JOB_URL.replace(/[.]/g, '\\.')} completed \\(cancelled\\)"\\}$`,
        'm',
      ),
    );
    expect(readFileSync(join(s.ctl, 'runs'), 'utf8').trim().split('\n')).toHaveLength(1);
  });
});

describe('a deploy never goes backwards by accident', () => {
  it('a queued older source after a newer one is superseded: nothing run, no lease, exit 0', async () => {
    const marks = tempDir('nyl-marks-');
    const dir = makeRepo({ 'nyl.yaml': ENV_DEV + command('app', `echo v1 >> ${marks}/runs`) });
    const old = git(dir, 'rev-parse', 'HEAD');
    commitFiles(dir, { 'nyl.yaml': ENV_DEV + command('app', `echo v2 >> ${marks}/runs`) });
    expect((await nyl(dir, ['reconcile', '-e', 'dev', '--local'])).code).toBe(0);
    const tips = git(dir, 'for-each-ref', 'refs/nyl/');
    // The older job runs last (queue: max gives no order): it checks out the older commit.
    git(dir, 'checkout', '-q', old);
    const r = await nylJson<{ outcome: string; result: string; facts: Record<string, string> }>(dir, [
      'reconcile',
      '-e',
      'dev',
      '--local',
    ]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.json).toMatchObject({ outcome: 'superseded', result: 'superseded' });
    const run = r.json.facts.run as string;
    expect(r.json.facts).toEqual({ source: old, recorded: git(dir, 'rev-parse', 'main'), run });
    // Its one write: a record of its own for the run history (no lease, no state ref moved).
    const after = git(dir, 'for-each-ref', 'refs/nyl/').split('\n');
    expect(after.filter((l) => !l.endsWith(`refs/nyl/dev/ended/${run}`)).join('\n')).toBe(tips);
    expect(after).toHaveLength(tips.split('\n').length + 1);
    expect(readFileSync(join(marks, 'runs'), 'utf8')).toBe('v2\n');
    const text = await nyl(dir, ['reconcile', '-e', 'dev', '--local']);
    expect(text.stdout).toMatch(
      new RegExp(
        `^reconcile dev: superseded\\n  source: ${old}\\n  recorded: [0-9a-f]{40}\\n  run: [0-9a-f-]{36}\\n\\nwarning NYL-SOURCE-OLDER \\(dev\\)\\n`,
      ),
    );
    // On purpose: applied, and recorded with who and why.
    const forced = await nyl(dir, [
      'reconcile',
      '-e',
      'dev',
      '--local',
      '--allow-older-source',
      '--reason',
      'roll back v2',
    ]);
    expect(forced.code, forced.stderr).toBe(0);
    expect(readFileSync(join(marks, 'runs'), 'utf8')).toBe('v2\nv1\n');
    expect(git(dir, 'log', '-1', '--format=%B', 'refs/nyl/dev/observed')).toMatch(
      /^olderSource: \{"by":"[^"]+","reason":"roll back v2","recorded":"[0-9a-f]{40}"\}$/m,
    );
  });

  it('a diverged source is applied with a warning, refused under sourceOrder: strict', async () => {
    const env = (strict: boolean) => `kind: Environment\nname: dev\n${strict ? 'sourceOrder: strict\n' : ''}`;
    for (const strict of [false, true]) {
      const dir = makeRepo({ 'nyl.yaml': env(strict) + command('app', 'echo base') });
      const base = git(dir, 'rev-parse', 'HEAD');
      commitFiles(dir, { 'nyl.yaml': env(strict) + command('app', 'echo main') });
      expect((await nyl(dir, ['reconcile', '-e', 'dev', '--local'])).code).toBe(0);
      git(dir, 'checkout', '-q', '-b', 'other', base);
      commitFiles(dir, { 'nyl.yaml': env(strict) + command('app', 'echo other') });
      const r = await nyl(dir, ['reconcile', '-e', 'dev', '--local']);
      if (!strict) {
        expect(r.code, r.stderr).toBe(0);
        expect(r.stdout).toContain('warning NYL-SOURCE-DIVERGED (dev)');
      } else {
        expect(r.code).toBe(2);
        expect(r.stderr).toMatch(/^error NYL-SOURCE-DIVERGED \(dev\)\n.*refused \(sourceOrder: strict\)/);
        // On purpose: applied, and the transition records who asked and why.
        const forced = await nyl(dir, [
          'reconcile',
          '-e',
          'dev',
          '--local',
          '--allow-older-source',
          '--reason',
          'hotfix',
        ]);
        expect(forced.code, forced.stderr).toBe(0);
        expect(forced.stdout).toContain('applied on purpose (--allow-older-source)');
        expect(git(dir, 'log', '-1', '--format=%B', 'refs/nyl/dev/observed')).toMatch(
          /\nolderSource: \{"by":"[^"]+","reason":"hotfix","recorded":"[0-9a-f]{40}"\}\n?$/,
        );
      }
    }
  });
});
