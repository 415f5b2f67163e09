/**
 * GitHub Deployments from the reconcile action, run as the runner runs it (dist/ bundles, INPUT_*
 * variables, its state and output files, SIGKILL then the post step), against a local server that
 * records and answers the Deployments API, driven by the real @actions/github client. What GitHub
 * shows as deployed (the latest deployment whose status is success) must be what Nyl recorded.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { action, REPOSITORY, type Step, setup, startStep, step, type Work } from './helpers/action-step.js';
import { FakeGitHub } from './helpers/fake-github.js';
import { command, commitFiles, ENV_DEV, git, makeRepo, nyl, sleep, tempDir, waitForFile } from './helpers/repo.js';

const TOKEN = 'ghs_deployments000token';
let gh: FakeGitHub;
beforeAll(async () => {
  gh = await new FakeGitHub(REPOSITORY).start();
});
afterAll(async () => {
  await gh.close();
});

const head = (w: Work) => git(w.dir, 'rev-parse', 'HEAD').trim();
const out = (s: Step) => `exit ${s.code}\n${s.stdout}\n${s.stderr}`;
const warnings = (s: Step, title: string) =>
  s.annotations.filter((a) => a.command === 'warning' && a.props.title === title).map((a) => a.message);
const deploy = (w: Work, runId: string, inputs: Record<string, string> = {}) =>
  action('reconcile', w, { deployments: 'true', token: TOKEN, ...inputs }, { runId, env: { GITHUB_API_URL: gh.url } });
const statesOf = (sha: string, env = 'dev') =>
  gh.deployments.filter((d) => d.sha === sha && d.environment === env).map((d) => d.statuses.map((s) => s.state));

describe('reconcile with deployments: true', () => {
  it('success, then a failing unit, then an uncertain one: GitHub shows the commit Nyl applied last, always', async () => {
    const w = setup(ENV_DEV + command('a', 'echo a'));
    const first = head(w);
    const calls = gh.requests.length;
    const ok = await deploy(w, '2001');
    expect(ok.code, out(ok)).toBe(0);
    // Three calls on a first attempt: create, in_progress, success.
    expect(gh.requests.slice(calls).map((r) => `${r.method} ${r.path.replace(/\d+/g, 'N')}`)).toEqual([
      `POST /repos/${REPOSITORY}/deployments`,
      `POST /repos/${REPOSITORY}/deployments/N/statuses`,
      `POST /repos/${REPOSITORY}/deployments/N/statuses`,
    ]);
    expect(ok.summary).toMatch(/- \*\*deployment\*\*: `\d+` in `dev`, `success`/);
    const d = gh.deployments.find((x) => x.sha === first);
    expect(d).toMatchObject({ environment: 'dev', production_environment: false });
    expect(ok.outputs['environment-url']).toBe('');
    expect(d?.payload).toMatchObject({ nyl: { environment: 'dev', run: ok.outputs.run }, githubRun: '2001' });
    expect(d?.statuses.map((s) => s.state)).toEqual(['in_progress', 'success']);
    expect(d?.statuses[1]).toMatchObject({
      log_url: `https://github.com/${REPOSITORY}/actions/runs/2001`,
      description: '1 unit executed',
    });
    const created = gh.requests.find((r) => r.method === 'POST' && r.path.endsWith('/deployments'));
    expect(created?.body).toMatchObject({ ref: first, required_contexts: [], auto_merge: false });
    expect(gh.deployedSha('dev')).toBe(first);

    // A failing unit: failure; GitHub still shows the first commit as deployed.
    commitFiles(w.dir, { 'nyl.yaml': `${ENV_DEV}${command('a', 'echo a')}${command('b', 'exit 7')}` });
    git(w.dir, 'push', '-q', 'origin', 'main');
    const failing = head(w);
    const failed = await deploy(w, '2002');
    expect(failed.outputs['exit-code']).toBe('1');
    expect(statesOf(failing)).toEqual([['in_progress', 'failure']]);
    expect(gh.deployedSha('dev')).toBe(first);

    // An uncertain unit (its timeout): error.
    commitFiles(w.dir, {
      'nyl.yaml': `${ENV_DEV}${command('a', 'echo a')}${command('b', 'sleep 5', { timeout: '1s' })}`,
    });
    const uncertainSha = head(w);
    const uncertain = await deploy(w, '2003');
    expect(uncertain.outputs['exit-code'], out(uncertain)).toBe('4');
    expect(statesOf(uncertainSha)).toEqual([['in_progress', 'error']]);
    expect(gh.deployedSha('dev')).toBe(first);
  });

  it('the Environment’s url and production flag: environment_url on the success, production_environment, the output; in another GitHub environment', async () => {
    const env = 'kind: Environment\nname: dev\nproduction: true\nurl: https://${{ units.web.outputs.host }}/app\n';
    const w = setup(env + command('web', 'echo host=web.example >> "$NYL_OUTPUT"'));
    const s = await deploy(w, '2101', { 'deployment-environment': 'Production' });
    expect(s.code, out(s)).toBe(0);
    expect(s.outputs['environment-url']).toBe('https://web.example/app');
    const d = gh.deployments.find((x) => x.sha === head(w) && x.environment === 'Production');
    expect(d?.production_environment).toBe(true);
    expect(d?.statuses.at(-1)).toMatchObject({ state: 'success', environment_url: 'https://web.example/app' });
    expect(s.summary).toContain('- **url**: [https://web.example/app](https://web.example/app)');
  });

  it('plan-from-pr: the deployment’s payload names the reviewed plan’s token', async () => {
    const w = setup(ENV_DEV + command('a', 'echo a'));
    git(w.dir, 'checkout', '-q', '-b', 'pr-9');
    commitFiles(w.dir, { 'nyl.yaml': `${ENV_DEV}${command('a', 'echo a2')}` });
    const event = join(tempDir('nyl-event-'), 'event.json');
    writeFileSync(
      event,
      JSON.stringify({
        pull_request: { number: 9, head: { repo: { full_name: REPOSITORY } } },
        repository: { full_name: REPOSITORY },
      }),
    );
    const plan = await step('plan', w, {
      inputs: { environments: 'dev', token: TOKEN },
      env: { GITHUB_EVENT_NAME: 'pull_request', GITHUB_EVENT_PATH: event, GITHUB_API_URL: gh.url },
    });
    expect(plan.code, out(plan)).toBe(0);
    const token = plan.outputs.token as string;
    expect(token).toMatch(/^v2\./);
    expect(gh.commentsOn(9)[0]?.body).toContain(token);
    git(w.dir, 'checkout', '-q', 'main');
    git(w.dir, 'merge', '-q', '--no-ff', '-m', 'Merge pull request #9', 'pr-9');
    const merge = head(w);
    gh.pulls.set(merge, [{ number: 9, merge_commit_sha: merge }]);
    const s = await step('reconcile', w, {
      inputs: { environment: 'dev', 'plan-from-pr': 'true', deployments: 'true', token: TOKEN },
      runId: '2201',
      env: { GITHUB_EVENT_NAME: 'push', GITHUB_SHA: merge, GITHUB_API_URL: gh.url },
    });
    expect(s.code, out(s)).toBe(0);
    const d = gh.deployments.find((x) => x.sha === merge);
    expect(d?.payload).toMatchObject({ nyl: { environment: 'dev', plan: token } });
    expect(d?.statuses.map((x) => x.state)).toEqual(['in_progress', 'success']);
  });

  it('a superseded older job creates no deployment: GitHub keeps naming the newer commit', async () => {
    const w = setup(ENV_DEV + command('a', 'echo a'));
    const older = head(w);
    commitFiles(w.dir, { 'nyl.yaml': `${ENV_DEV}${command('a', 'echo a2')}` });
    const newer = head(w);
    expect((await deploy(w, '3001')).code).toBe(0);
    const before = gh.deployments.length;
    git(w.dir, 'checkout', '-q', older);
    const queued = await deploy(w, '3002');
    expect(queued.code, out(queued)).toBe(0);
    expect(queued.outputs.result).toBe('superseded');
    expect(gh.deployments).toHaveLength(before);
    expect(gh.deployments.some((d) => d.sha === older)).toBe(false);
    expect(gh.deployedSha('dev')).toBe(newer);

    // A refused job (a stale plan): no deployment either.
    git(w.dir, 'checkout', '-q', 'main');
    commitFiles(w.dir, { 'nyl.yaml': `${ENV_DEV}${command('a', 'echo a3')}` });
    const refused = await deploy(w, '3003', { plan: 'v2.000000000000.000000000000.000000000000' });
    expect(refused.outputs['exit-code'], out(refused)).toBe('2');
    expect(gh.deployments).toHaveLength(before);
    expect(gh.deployedSha('dev')).toBe(newer);
  });

  it('nothing to execute on a new source: a success of that source', async () => {
    const w = setup(ENV_DEV + command('a', 'echo a'));
    expect((await deploy(w, '4001')).code).toBe(0);
    commitFiles(w.dir, { 'README.md': 'unrelated\n' });
    const docs = head(w);
    const again = await deploy(w, '4002');
    expect(again.code, out(again)).toBe(0);
    expect(statesOf(docs).map((s) => s.at(-1))).toEqual(['success']);
    expect(gh.deployedSha('dev')).toBe(docs);
    // The same commit again, nothing to do, GitHub already showing it: no second deployment.
    const count = gh.deployments.length;
    const third = await deploy(w, '4003');
    expect(third.code, out(third)).toBe(0);
    expect(gh.deployments).toHaveLength(count);
  });

  it('a main step SIGKILLed mid-run: its post step sets error; the re-run attempt finishes that same deployment', async () => {
    // Idempotent: the re-run converges it (the second time it finds `started` and ends at once).
    const run = '[ -f "$NYL_CTL/started" ] && exit 0; touch "$NYL_CTL/started"; sleep 30';
    const w = setup(ENV_DEV + command('slow', run, { spec: { idempotent: true } }));
    const env = { GITHUB_API_URL: gh.url, NYL_CTL: w.ctl };
    const inputs = { environment: 'dev', deployments: 'true', token: TOKEN };
    const sha = head(w);
    const main = startStep('reconcile', w, { inputs, runId: '5001', env });
    await waitForFile(`${w.ctl}/started`);
    // The deployment is started beside the unit (its API calls do not hold the run up).
    for (let i = 0; i < 100 && !gh.deployments.find((d) => d.sha === sha)?.statuses.length; i++) await sleep(50);
    await sleep(200);
    main.child.kill('SIGKILL');
    const killed = await main.done;
    expect(killed.state.deployment).toMatch(/^\d+$/);
    const post = await step('post', w, { inputs, state: killed.state, runId: '5001', env });
    expect(post.code, out(post)).toBe(0);
    expect(statesOf(sha)).toEqual([['in_progress', 'error']]);

    // Attempt 2 of the same workflow run: the same deployment, not a second one.
    const rerun = await step('reconcile', w, { inputs, runId: '5001', env: { ...env, GITHUB_RUN_ATTEMPT: '2' } });
    expect(rerun.code, out(rerun)).toBe(0);
    const mine = gh.deployments.filter((d) => d.sha === sha);
    expect(mine).toHaveLength(1);
    expect(mine[0]?.statuses.map((s) => s.state)).toEqual(['in_progress', 'error', 'in_progress', 'success']);
    expect(gh.deployedSha('dev')).toBe(sha);
  }, 60_000);

  it('cancelled by the runner (SIGINT): the run ends cancelled, its deployment error', async () => {
    const run = '[ -f "$NYL_CTL/started" ] && exit 0; touch "$NYL_CTL/started"; sleep 30';
    const w = setup(ENV_DEV + command('slow', run, { spec: { idempotent: true } }));
    const env = { GITHUB_API_URL: gh.url, NYL_CTL: w.ctl };
    const sha = head(w);
    const main = startStep('reconcile', w, {
      inputs: { environment: 'dev', deployments: 'true', token: TOKEN },
      runId: '5101',
      env,
    });
    await waitForFile(`${w.ctl}/started`);
    for (let i = 0; i < 100 && !gh.deployments.find((d) => d.sha === sha)?.statuses.length; i++) await sleep(50);
    main.child.kill('SIGINT');
    const s = await main.done;
    expect(s.outputs['exit-code'], out(s)).toBe('4');
    expect(statesOf(sha)).toEqual([['in_progress', 'error']]);
    expect(s.state['deployment-done']).toBe('true');
    // Its post step has nothing left to finish.
    const post = await step('post', w, {
      inputs: { environment: 'dev', token: TOKEN },
      state: s.state,
      runId: '5101',
      env,
    });
    expect(post.code, out(post)).toBe(0);
    expect(statesOf(sha)).toEqual([['in_progress', 'error']]);
  }, 60_000);

  it('the Deployments API refusing (403) is a warning naming what GitHub will show wrong; the deploy succeeds', async () => {
    const w = setup(ENV_DEV + command('a', 'echo a'));
    gh.deploymentsFail = 403;
    try {
      const s = await deploy(w, '6001');
      expect(s.code, out(s)).toBe(0);
      expect(s.outputs.result).toBe('success');
      expect(warnings(s, 'NYL-DEPLOYMENT'), out(s)).toEqual([
        expect.stringMatching(
          /^the GitHub deployment of [0-9a-f]{12} to dev could not be created: the Deployments API answered 403; GitHub will not show this deploy/,
        ),
      ]);
    } finally {
      gh.deploymentsFail = undefined;
    }
  });

  it('from a workstation: nyl reconcile --deployments records the run; nyl teardown --deployments marks it inactive', async () => {
    const dir = makeRepo({ 'nyl.yaml': ENV_DEV + command('a', 'echo a', { spec: { destroy: 'true' } }) });
    const sha = git(dir, 'rev-parse', 'HEAD').trim();
    const env = { GITHUB_TOKEN: TOKEN, GITHUB_REPOSITORY: REPOSITORY, GITHUB_API_URL: gh.url };
    const r = await nyl(
      dir,
      ['reconcile', '-e', 'dev', '--local', '--deployments', '--deployment-environment', 'laptop'],
      env,
    );
    expect(r.code, `${r.stdout}${r.stderr}`).toBe(0);
    const d = gh.deployments.find((x) => x.sha === sha && x.environment === 'laptop');
    expect(d?.statuses.map((x) => x.state)).toEqual(['in_progress', 'success']);
    const t = await nyl(
      dir,
      ['teardown', '-e', 'dev', '--local', '--deployments', '--deployment-environment', 'laptop'],
      env,
    );
    expect(t.code, `${t.stdout}${t.stderr}`).toBe(0);
    expect(d?.statuses.at(-1)?.state).toBe('inactive');
    // Without a token: refused before anything runs.
    const none = await nyl(dir, ['reconcile', '-e', 'dev', '--local', '--deployments'], {
      GITHUB_TOKEN: '',
      GH_TOKEN: '',
    });
    expect(none.code).toBe(1);
    expect(none.stderr).toContain('--deployments needs a token with deployments: write in GITHUB_TOKEN or GH_TOKEN');
  });

  it('from a workstation, the API refusing is a warning on the report; the exit code is the run’s', async () => {
    const dir = makeRepo({ 'nyl.yaml': ENV_DEV + command('a', 'echo a') });
    gh.deploymentsFail = 500;
    try {
      const env = { GITHUB_TOKEN: TOKEN, GITHUB_REPOSITORY: REPOSITORY, GITHUB_API_URL: gh.url };
      const r = await nyl(dir, ['reconcile', '-e', 'dev', '--local', '--deployments'], env);
      expect(r.code, `${r.stdout}${r.stderr}`).toBe(0);
      expect(`${r.stdout}${r.stderr}`).toContain('warning NYL-DEPLOYMENT (dev)');
      expect(`${r.stdout}${r.stderr}`).toContain('could not be created: the Deployments API answered 500');
    } finally {
      gh.deploymentsFail = undefined;
    }
  });
});
