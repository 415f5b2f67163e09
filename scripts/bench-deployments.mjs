// Row 11: the GitHub API calls of the reconcile action with `deployments: true` (issue 27: "at most
// a few API calls per run"). The action runs as the runner runs it: `node dist/reconcile/index.js`
// with INPUT_* (the action.yml defaults, then environment, deployments: true, token), GITHUB_* and
// RUNNER_* variables and the output, state and summary files, in a work repository whose origin is
// a bare repository over file://; then its post step (`node dist/post/index.js` with the main
// step's STATE_*). GITHUB_API_URL points at a tiny HTTP server in this process that records every
// request and answers the Deployments API (create, list by sha and environment, statuses) and the
// Actions API's jobs of a run attempt (what any reconcile with a token asks, to record its job with
// the lease). Four scenarios, one after the other in the same repository, each counted exactly.
import { spawn } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { join } from 'node:path';
import { parse as parseYaml } from 'yaml';
import { childEnv, commitAll, ENV_NAME, generateConfig, git, log, ROOT, setIdentity, tempDir } from './bench-lib.mjs';

export const REPOSITORY = 'o/r';
export const RUNNER_NAME = 'nyl-bench-runner';
const SERVER_URL = 'https://github.com';
const STEP_TIMEOUT_MS = 180_000;

/**
 * The scenarios in the order they run, each with the Deployments API calls it must make, in order
 * (`create`, `list`, then each status by its state), and what the run must report.
 */
export const SCENARIOS = [
  {
    key: 'first',
    what: 'first attempt, 1 Command unit executed',
    expected: ['create', 'in_progress', 'success'],
    result: 'success',
    executed: 1,
  },
  {
    key: 'attempt2',
    what: 'attempt 2 of the same run, a new commit executed',
    expected: ['list', 'create', 'in_progress', 'success'],
    result: 'success',
    executed: 1,
  },
  {
    key: 'older',
    what: 'an older commit, superseded',
    expected: [],
    result: 'superseded',
    executed: 0,
  },
  {
    // DeploymentRun.finish: a success that started no deployment (no lease was taken) first asks
    // whether GitHub already shows the commit (the environment's latest deployment: another
    // commit's here), then starts one (create, in_progress: attempt 1 looks for no earlier one)
    // and sets success.
    key: 'nothing',
    what: 'nothing to execute on a new commit',
    expected: ['list', 'create', 'in_progress', 'success'],
    result: 'success',
    executed: 0,
  },
];

// ---- the GitHub API, recorded ------------------------------------------------------------------

/**
 * A request as the row names it: `create`, `list` (deployments), a new status by its state,
 * `statuses` (a deployment's, read), `jobs`, else method and path.
 */
export function callName(r, repository = REPOSITORY) {
  const base = `/repos/${repository}`;
  if (r.path === `${base}/deployments`) return r.method === 'POST' ? 'create' : r.method === 'GET' ? 'list' : r.method;
  if (/\/deployments\/\d+\/statuses$/.test(r.path) && r.method === 'POST') return String(r.body?.state ?? 'status');
  if (/\/deployments\/\d+\/statuses$/.test(r.path) && r.method === 'GET') return 'statuses';
  if (/\/actions\/runs\/\d+\/attempts\/\d+\/jobs$/.test(r.path) && r.method === 'GET') return 'jobs';
  return `${r.method} ${r.path}`;
}

export const isDeploymentsCall = (r, repository = REPOSITORY) => r.path.startsWith(`/repos/${repository}/deployments`);

/**
 * The server: every request recorded (method, path, query, body); deployments and their statuses
 * kept in memory so that a list answers what was created (newest first); anything else 404.
 */
export async function startFakeGitHub(repository = REPOSITORY) {
  const requests = [];
  const deployments = [];
  const base = `/repos/${repository}`;
  const server = createServer((req, res) => {
    let text = '';
    req.on('data', (d) => {
      text += d;
    });
    req.on('end', () => {
      const u = new URL(req.url ?? '/', 'http://127.0.0.1');
      let body;
      try {
        body = text ? JSON.parse(text) : undefined;
      } catch {
        body = text;
      }
      const method = req.method ?? '';
      requests.push({ method, path: u.pathname, query: u.search, body });
      const send = (status, data) => {
        res.writeHead(status, { 'content-type': 'application/json; charset=utf-8' });
        res.end(JSON.stringify(data));
      };
      const view = (d) => ({ id: d.id, sha: d.sha, ref: d.sha, environment: d.environment, payload: d.payload });
      if (u.pathname === `${base}/deployments` && method === 'POST') {
        const d = {
          id: 900 + deployments.length,
          sha: String(body?.ref),
          environment: String(body?.environment),
          payload: body?.payload ?? {},
          statuses: [],
        };
        deployments.push(d);
        return send(201, view(d));
      }
      if (u.pathname === `${base}/deployments` && method === 'GET') {
        const sha = u.searchParams.get('sha');
        const env = u.searchParams.get('environment');
        const found = deployments.filter((d) => (!sha || d.sha === sha) && (!env || d.environment === env));
        return send(200, found.reverse().map(view));
      }
      const st = /\/deployments\/(\d+)\/statuses$/.exec(u.pathname);
      const d = st && u.pathname.startsWith(base) && deployments.find((x) => x.id === Number(st[1]));
      if (st && !d) return send(404, { message: 'Not Found' });
      if (d && method === 'GET') return send(200, d.statuses.map((state, i) => ({ id: i + 1, state })).reverse());
      if (d && method === 'POST') {
        d.statuses.push(String(body?.state));
        // A success makes the environment's earlier successful deployments inactive (auto_inactive).
        if (body?.state === 'success' && body?.auto_inactive !== false)
          for (const o of deployments)
            if (o !== d && o.environment === d.environment && o.statuses.at(-1) === 'success')
              o.statuses.push('inactive');
        return send(201, { id: d.statuses.length, state: body?.state });
      }
      const jobs = new RegExp(`^${base}/actions/runs/(\\d+)/attempts/(\\d+)/jobs$`).exec(u.pathname);
      if (jobs && method === 'GET') {
        const id = Number(jobs[1]) * 10 + Number(jobs[2]);
        return send(200, {
          total_count: 1,
          jobs: [
            {
              id,
              status: 'in_progress',
              conclusion: null,
              html_url: `${SERVER_URL}/${repository}/actions/runs/${jobs[1]}/job/${id}`,
              runner_name: RUNNER_NAME,
            },
          ],
        });
      }
      send(404, { message: 'Not Found' });
    });
  });
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${server.address().port}`,
    requests,
    deployments,
    mark: () => requests.length,
    since: (m) => requests.slice(m),
    /** What GitHub shows as deployed: the latest deployment of the environment whose last status is success. */
    deployedSha: (environment) =>
      deployments.filter((d) => d.environment === environment && d.statuses.at(-1) === 'success').at(-1)?.sha,
    close: () => new Promise((r) => server.close(() => r())),
  };
}

// ---- the runner's side -------------------------------------------------------------------------

/** The defaults of the action's inputs, as the runner passes them (an expression, such as the token's, left out). */
export function actionDefaults(action) {
  const y = parseYaml(readFileSync(join(ROOT, 'actions', action, 'action.yml'), 'utf8'));
  const out = {};
  for (const [k, v] of Object.entries(y?.inputs ?? {}))
    if (v?.default !== undefined && !String(v.default).includes('${{')) out[k] = String(v.default);
  return out;
}

/** A GITHUB_OUTPUT / GITHUB_STATE file: `name<<delimiter` heredocs, or `name=value` lines. */
export function parseCommandFile(text) {
  const out = {};
  const lines = text.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i];
    if (!line) continue;
    const h = /^([^=]+?)<<(.+)$/.exec(line);
    if (h) {
      const value = [];
      for (i++; i < lines.length && lines[i] !== h[2]; i++) value.push(lines[i]);
      out[h[1]] = value.join('\n');
    } else {
      const eq = line.indexOf('=');
      if (eq > 0) out[line.slice(0, eq)] = line.slice(eq + 1);
    }
  }
  return out;
}

const inputVar = (name) => `INPUT_${name.replace(/ /g, '_').toUpperCase()}`;

/** The bench's environment without anything a runner sets for a step (the bench may itself run in Actions). */
const baseEnv = Object.fromEntries(
  Object.entries(childEnv).filter(([k]) => !/^(GITHUB_|INPUT_|STATE_|ACTIONS_|RUNNER_)/.test(k) && k !== 'CI'),
);

/** `node <entry>` as the runner starts a step: its exit, output, state and the time it took. */
function runStep(file, { cwd, env }) {
  return new Promise((resolve, reject) => {
    const t0 = performance.now();
    const child = spawn(process.execPath, [file], { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => {
      stdout += d;
    });
    child.stderr.on('data', (d) => {
      stderr += d;
    });
    const timer = setTimeout(() => child.kill('SIGKILL'), STEP_TIMEOUT_MS);
    child.on('error', (e) => {
      clearTimeout(timer);
      reject(e);
    });
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, stdout, stderr, ms: performance.now() - t0 });
    });
  });
}

/** One job's use of the action: its main step, then its post step given the main step's state. */
async function job(ctx, w, gh, { runId, attempt }) {
  const files = tempDir('deploy-step');
  const paths = Object.fromEntries(['output', 'state', 'summary'].map((f) => [f, join(files, f)]));
  for (const p of Object.values(paths)) writeFileSync(p, '');
  const runnerTemp = join(files, 'runner-temp');
  mkdirSync(runnerTemp);
  const inputs = { ...w.defaults, environment: ENV_NAME, deployments: 'true', token: 'x' };
  const env = {
    ...baseEnv,
    NO_PROXY: '127.0.0.1,localhost',
    no_proxy: '127.0.0.1,localhost',
    CI: 'true',
    GITHUB_ACTIONS: 'true',
    GITHUB_API_URL: gh.url,
    GITHUB_SERVER_URL: SERVER_URL,
    GITHUB_REPOSITORY: REPOSITORY,
    GITHUB_RUN_ID: String(runId),
    GITHUB_RUN_ATTEMPT: String(attempt),
    GITHUB_JOB: 'deploy',
    GITHUB_ACTOR: 'nyl-bench',
    GITHUB_EVENT_NAME: 'push',
    GITHUB_WORKSPACE: w.dir,
    GITHUB_OUTPUT: paths.output,
    GITHUB_STATE: paths.state,
    GITHUB_STEP_SUMMARY: paths.summary,
    RUNNER_NAME,
    RUNNER_TEMP: runnerTemp,
    ...Object.fromEntries(Object.entries(inputs).map(([k, v]) => [inputVar(k), v])),
  };
  const sha = git(w.dir, ['rev-parse', 'HEAD']);
  const m = gh.mark();
  const made = gh.deployments.length;
  const main = await runStep(join(ctx.cliDir, 'reconcile', 'index.js'), { cwd: w.dir, env });
  const mainCalls = gh.since(m);
  const outputs = parseCommandFile(readFileSync(paths.output, 'utf8'));
  const state = parseCommandFile(readFileSync(paths.state, 'utf8'));
  const m2 = gh.mark();
  const post = await runStep(join(ctx.cliDir, 'post', 'index.js'), {
    cwd: w.dir,
    env: { ...env, ...Object.fromEntries(Object.entries(state).map(([k, v]) => [`STATE_${k}`, v])) },
  });
  const postCalls = gh.since(m2);
  ctx.drop(files);
  const warnings = main.stdout
    .split('\n')
    .filter((l) => l.startsWith('::warning') && l.includes('NYL-DEPLOYMENT'))
    .concat(post.stdout.split('\n').filter((l) => l.startsWith('::warning')));
  return {
    runId: String(runId),
    attempt,
    sha,
    main: { exit: main.code, signal: main.signal, ms: main.ms, stderr: main.stderr.slice(-1500) },
    post: { exit: post.code, ms: post.ms },
    result: outputs.result,
    // A superseded job's report has no rows: no counts among its outputs.
    executed: Number(outputs.executed ?? 0),
    calls: mainCalls.map((r) => callName(r)),
    postCalls: postCalls.map((r) => callName(r)),
    deploymentCalls: mainCalls.filter((r) => isDeploymentsCall(r)).map((r) => callName(r)),
    otherCalls: mainCalls.filter((r) => !isDeploymentsCall(r)).map((r) => callName(r)),
    postDeploymentCalls: postCalls.filter((r) => isDeploymentsCall(r)).map((r) => callName(r)),
    warnings,
    // The deployments this job created: their statuses, and whether it started as the run took the lease (a run id).
    created: gh.deployments
      .slice(made)
      .map((d) => ({ id: d.id, sha: d.sha, statuses: [...d.statuses], run: d.payload?.nyl?.run ?? null })),
    deployed: gh.deployedSha(ENV_NAME),
  };
}

/** The work repository: nyl.yaml with one Command unit, committed and pushed to a bare origin over file://. */
function setUp() {
  const root = tempDir('deployments');
  const bare = join(root, 'remote.git');
  git(root, ['init', '-q', '--bare', '-b', 'main', bare]);
  const dir = join(root, 'work');
  mkdirSync(dir);
  git(dir, ['init', '-q', '-b', 'main']);
  setIdentity(dir);
  writeFileSync(join(dir, 'nyl.yaml'), generateConfig(1));
  writeFileSync(join(dir, 'README.md'), 'nyl bench, row 11\n');
  commitAll(dir, 'bench: 1 Command unit');
  git(dir, ['remote', 'add', 'origin', `file://${bare}`]);
  git(dir, ['push', '-q', 'origin', 'main']);
  return { root, dir, bare, defaults: actionDefaults('reconcile') };
}

const push = (w) => git(w.dir, ['push', '-q', 'origin', 'main']);

/**
 * Row 11. (a) run 4101 attempt 1 of the first commit, which executes the unit; (b) attempt 2 of
 * run 4101 after a commit that changes the unit's command; (c) run 4102 of the first commit,
 * checked out again (older than the recorded source: superseded); (d) run 4103 of a commit that
 * changes only README.md. Each scenario's calls, checked against its expected sequence.
 */
export async function benchDeployments(ctx) {
  const gh = await startFakeGitHub();
  const w = setUp();
  const out = { repository: REPOSITORY, inputs: w.defaults, scenarios: {} };
  try {
    const first = git(w.dir, ['rev-parse', 'HEAD']);
    const plan = {
      first: { runId: 4101, attempt: 1, before: () => {} },
      attempt2: {
        runId: 4101,
        attempt: 2,
        before: () => {
          writeFileSync(join(w.dir, 'nyl.yaml'), generateConfig(1, { tags: { 0: 'attempt 2' } }));
          commitAll(w.dir, 'bench: the unit changed');
          push(w);
        },
      },
      older: { runId: 4102, attempt: 1, before: () => git(w.dir, ['checkout', '-q', first]) },
      nothing: {
        runId: 4103,
        attempt: 1,
        before: () => {
          git(w.dir, ['checkout', '-q', 'main']);
          writeFileSync(join(w.dir, 'README.md'), 'nyl bench, row 11: a change no unit uses\n');
          commitAll(w.dir, 'bench: README only');
          push(w);
        },
      },
    };
    let shown; // the commit GitHub should show as deployed: the last one nyl recorded
    for (const s of SCENARIOS) {
      const p = plan[s.key];
      p.before();
      const r = await job(ctx, w, gh, p);
      if (s.result === 'success') shown = r.sha;
      r.expectedDeployed = shown;
      out.scenarios[s.key] = r;
      const label = `row 11 (${s.what}, run ${r.runId} attempt ${r.attempt})`;
      ctx.check(
        r.main.exit === 0,
        `${label}: the main step exited ${r.main.exit ?? r.main.signal}: ${r.main.stderr || '(no stderr)'}`,
      );
      ctx.check(r.post.exit === 0, `${label}: the post step exited ${r.post.exit}`);
      ctx.check(r.result === s.result, `${label}: result ${r.result}, expected ${s.result}`);
      ctx.check(r.executed === s.executed, `${label}: ${r.executed} executed, expected ${s.executed}`);
      ctx.check(!r.warnings.length, `${label}: warnings ${r.warnings.join(' | ')}`);
      ctx.check(
        r.deployed === shown,
        `${label}: GitHub shows ${r.deployed?.slice(0, 7) ?? 'nothing'} deployed, nyl recorded ${shown?.slice(0, 7)}`,
      );
      log(
        `deployments ${s.key} (run ${r.runId} attempt ${r.attempt}, ${r.result}): ${r.calls.join(', ') || 'no calls'}; post step: ${r.postCalls.join(', ') || 'no calls'}; ${Math.round(r.main.ms)} ms`,
      );
    }
  } finally {
    await gh.close();
    ctx.drop(w.root);
  }
  return out;
}
