/**
 * Reviewed changes, end to end with the bundled actions and the real @actions/github client
 * against a local server that keeps pull request comments: the plan action comments the plan on
 * a pull request and updates that comment after another push; the deploy of the merge commit
 * (reconcile with plan-from-pr) executes exactly the reviewed plan when the merge resolves to the
 * same documents, and refuses a plan another merge made stale, posting the new plan on the PR.
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { REPOSITORY, type Step, setup, step, type Work } from './helpers/action-step.js';
import { FakeGitHub } from './helpers/fake-github.js';
import { command, ENV_DEV, git, tempDir } from './helpers/repo.js';

const TOKEN = 'ghs_prplan0000token';
let gh: FakeGitHub;
beforeAll(async () => {
  gh = await new FakeGitHub(REPOSITORY).start();
});
afterAll(async () => {
  await gh.close();
});

/** base (idempotent, outputs v) → app (reads it); other stands alone. Each unit writes one line per run. */
function config(marks: string, v: { base?: string; app?: string; other?: string } = {}): string {
  const mark = (u: string) => `echo run >> ${marks}/${u}`;
  return (
    ENV_DEV +
    command('base', `${mark('base')}; echo v=${v.base ?? '1'} >> "$NYL_OUTPUT"`, { spec: { idempotent: true } }) +
    command('app', `${mark('app')}; echo "\${{ units.base.outputs.v }} ${v.app ?? 'a1'}"`) +
    command('other', `${mark('other')}; echo ${v.other ?? 'o1'}`)
  );
}

function runs(marks: string, u: string): number {
  const f = join(marks, u);
  return existsSync(f) ? readFileSync(f, 'utf8').split('\n').filter(Boolean).length : 0;
}

function commit(w: Work, text: string, message: string): string {
  writeFileSync(join(w.dir, 'nyl.yaml'), text);
  git(w.dir, 'commit', '-qam', message);
  return git(w.dir, 'rev-parse', 'HEAD');
}

/** The plan action on a pull_request event for PR `pr`, the work tree at the PR's head. */
function planStep(w: Work, pr: number): Promise<Step> {
  const event = join(tempDir('nyl-event-'), 'event.json');
  writeFileSync(event, JSON.stringify({ pull_request: { number: pr } }));
  return step('plan', w, {
    inputs: { environments: 'dev', token: TOKEN },
    env: { GITHUB_EVENT_NAME: 'pull_request', GITHUB_EVENT_PATH: event, GITHUB_API_URL: gh.url },
  });
}

/** Merges branch pr-N into `main` (the branch checked out when undefined), as GitHub merges pull request #N. */
function mergePull(w: Work, main: string | undefined, pr: number): string {
  if (main) git(w.dir, 'checkout', '-q', main);
  git(w.dir, 'merge', '-q', '--no-ff', '-m', `Merge pull request #${pr}`, `pr-${pr}`);
  const merge = git(w.dir, 'rev-parse', 'HEAD');
  gh.pulls.set(merge, [{ number: pr, merge_commit_sha: merge }]);
  return merge;
}

/** The deploy of a pushed merge commit: reconcile with plan-from-pr. */
function deployStep(w: Work, sha: string): Promise<Step> {
  return step('reconcile', w, {
    inputs: { environment: 'dev', 'plan-from-pr': 'true', token: TOKEN },
    env: { GITHUB_EVENT_NAME: 'push', GITHUB_SHA: sha, GITHUB_API_URL: gh.url },
  });
}

describe('plans on pull requests', () => {
  it('comments the plan, updates it after a push, and the merge with the same documents executes exactly it', async () => {
    const marks = tempDir('nyl-marks-');
    const w = setup(config(marks));
    expect((await step('reconcile', w, { inputs: { environment: 'dev' } })).code).toBe(0);
    const main = git(w.dir, 'rev-parse', 'HEAD');
    git(w.dir, 'checkout', '-q', '-b', 'pr-5');
    commit(w, config(marks, { app: 'a2' }), 'change app');

    const first = await planStep(w, 5);
    expect(first.code, first.stdout + first.stderr).toBe(0);
    const comments = () => gh.commentsOn(5);
    expect(comments()).toHaveLength(1);
    const body = comments()[0]?.body ?? '';
    expect(body).toMatch(/^<!-- nyl-plan: dev -->\n### nyl plan for `dev`: 1 to execute, 2 unchanged\n/);
    expect(body).toContain('| app | Command | execute | desired document changed |');
    expect(body).toContain(`**Token**: \`${first.outputs.token}\``);
    expect(first.outputs.token).toMatch(/^v2\.[0-9a-f]{12}\.[0-9a-f]{12}\.[0-9a-f]{12}$/);
    expect(first.outputs).toMatchObject({ execute: '1', maybe: '0', current: '2' });
    expect(first.summary).toContain('| app | Command | execute |');
    // The plan wrote nothing under refs/nyl/ of the remote.
    const tips = git(w.bare, 'for-each-ref', 'refs/nyl/');

    // A second push to the PR: the same comment, updated in place.
    commit(w, config(marks, { app: 'a3' }), 'change app again');
    const second = await planStep(w, 5);
    expect(second.code).toBe(0);
    expect(comments()).toHaveLength(1);
    expect(gh.calls().filter((c) => c.startsWith('PATCH '))).toHaveLength(1);
    expect(comments()[0]?.body).toContain(`**Token**: \`${second.outputs.token}\``);
    expect(second.outputs.token).not.toBe(first.outputs.token);
    expect(git(w.bare, 'for-each-ref', 'refs/nyl/')).toBe(tips);

    // The merge commit: another commit, the same documents: the reviewed token is valid.
    const merge = mergePull(w, main, 5);
    const deploy = await deployStep(w, merge);
    expect(deploy.code, deploy.stdout + deploy.stderr).toBe(0);
    expect(deploy.stdout).toContain(`executing the plan reviewed on pull request #5: ${second.outputs.token}`);
    expect(deploy.outputs).toMatchObject({ result: 'success', executed: '1', current: '2' });
    expect({ base: runs(marks, 'base'), app: runs(marks, 'app'), other: runs(marks, 'other') }).toEqual({
      base: 1,
      app: 2,
      other: 1,
    });
  });

  it('a pull request that edits only a deploy script: the comment names the file, the merge deploys it and its summary says why', async () => {
    const marks = tempDir('nyl-marks-');
    const script = (v: string) => `#!/bin/bash\necho run >> ${marks}/deploy # ${v}\n`;
    const w = setup(`${ENV_DEV}${command('deploy', './scripts/deploy.sh')}${command('other', 'true')}`);
    mkdirSync(join(w.dir, 'scripts'));
    writeFileSync(join(w.dir, 'scripts/deploy.sh'), script('v1'), { mode: 0o755 });
    git(w.dir, 'add', 'scripts');
    git(w.dir, 'commit', '-qm', 'deploy script');
    expect((await step('reconcile', w, { inputs: { environment: 'dev' } })).code).toBe(0);
    expect(runs(marks, 'deploy')).toBe(1);
    const main = git(w.dir, 'rev-parse', 'HEAD');
    git(w.dir, 'checkout', '-q', '-b', 'pr-9');
    writeFileSync(join(w.dir, 'scripts/deploy.sh'), script('v2'));
    git(w.dir, 'commit', '-qam', 'deploy: v2');

    const plan = await planStep(w, 9);
    expect(plan.code, plan.stdout + plan.stderr).toBe(0);
    const body = gh.commentsOn(9)[0]?.body ?? '';
    expect(body).toContain('| deploy | Command | execute | files changed: scripts/deploy.sh |');
    expect(body).toContain('| other | Command | current |');

    const merge = mergePull(w, main, 9);
    const deploy = await deployStep(w, merge);
    expect(deploy.code, deploy.stdout + deploy.stderr).toBe(0);
    expect(deploy.outputs).toMatchObject({ result: 'success', executed: '1', current: '1' });
    expect(runs(marks, 'deploy')).toBe(2);
    expect(deploy.summary).toContain('files changed: scripts/deploy.sh');
  });

  it('a merge after another pull request changed a shared unit: stale, refused (exit 2), the new plan posted on the PR, nothing executed', async () => {
    const marks = tempDir('nyl-marks-');
    const w = setup(config(marks));
    expect((await step('reconcile', w, { inputs: { environment: 'dev' } })).code).toBe(0);
    const main = git(w.dir, 'rev-parse', 'HEAD');
    // PR #6 changes other; its plan is reviewed.
    git(w.dir, 'checkout', '-q', '-b', 'pr-6');
    commit(w, config(marks, { other: 'o2' }), 'change other');
    const reviewed = await planStep(w, 6);
    expect(reviewed.code).toBe(0);
    expect(gh.commentsOn(6)).toHaveLength(1);
    // PR #7 changes base, the unit app needs; it is merged and deployed first.
    git(w.dir, 'checkout', '-q', main);
    git(w.dir, 'checkout', '-q', '-b', 'pr-7');
    commit(w, config(marks, { base: '2' }), 'change base');
    git(w.dir, 'checkout', '-q', main);
    git(w.dir, 'merge', '-q', '--no-ff', '-m', 'Merge pull request #7', 'pr-7');
    expect((await step('reconcile', w, { inputs: { environment: 'dev' } })).code).toBe(0);
    const before = { base: runs(marks, 'base'), app: runs(marks, 'app'), other: runs(marks, 'other') };
    // Then PR #6 is merged: its reviewed plan no longer holds.
    const merge = mergePull(w, undefined, 6);
    const deploy = await deployStep(w, merge);
    expect(deploy.code).toBe(1);
    expect(deploy.outputs).toMatchObject({ result: 'refused', 'exit-code': '2' });
    const stale = deploy.annotations.find((a) => a.props.title === 'NYL-PLAN-STALE (dev)');
    expect(stale?.message).toMatch(
      /^plan v2\.\S+ is stale: the desired state changed \([0-9a-f]{12} → [0-9a-f]{12}\); units whose rows changed: base, app\n/,
    );
    expect({ base: runs(marks, 'base'), app: runs(marks, 'app'), other: runs(marks, 'other') }).toEqual(before);
    // The new plan, as a reply on the PR the reviewer looks at.
    const replies = gh.commentsOn(6);
    expect(replies).toHaveLength(2);
    expect(replies[1]?.body).toMatch(/^### nyl plan for `dev`: /);
    expect(replies[1]?.body).toContain('**The plan reviewed here went stale before the deploy of');
    expect(replies[1]?.body).toContain('| other | Command | execute |');
  });

  it('a plan comment planted by someone without write access is neither updated nor executed', async () => {
    const marks = tempDir('nyl-marks-');
    const w = setup(config(marks));
    expect((await step('reconcile', w, { inputs: { environment: 'dev' } })).code).toBe(0);
    const main = git(w.dir, 'rev-parse', 'HEAD');
    git(w.dir, 'checkout', '-q', '-b', 'pr-8');
    commit(w, config(marks, { app: 'a2' }), 'change app');
    const planted =
      '<!-- nyl-plan: dev -->\n### nyl plan for `dev`: nothing to execute\n\n**Token**: `v2.000000000000.000000000000.000000000000`\n';
    gh.plant(8, planted, { login: 'mallory', type: 'User' });

    const planned = await planStep(w, 8);
    expect(planned.code, planned.stdout + planned.stderr).toBe(0);
    const comments = gh.commentsOn(8);
    expect(comments).toHaveLength(2);
    expect(comments[0]?.body).toBe(planted);
    expect(comments[1]?.body).toContain(`**Token**: \`${planned.outputs.token}\``);

    const merge = mergePull(w, main, 8);
    const deploy = await deployStep(w, merge);
    expect(deploy.code, deploy.stdout + deploy.stderr).toBe(0);
    expect(deploy.stdout).toContain(`executing the plan reviewed on pull request #8: ${planned.outputs.token}`);
    expect(runs(marks, 'app')).toBe(2);
  });

  it('a deploy with plan-from-pr of a commit of no pull request is refused: nothing to execute', async () => {
    const w = setup(config(tempDir('nyl-marks-')));
    const sha = git(w.dir, 'rev-parse', 'HEAD');
    const deploy = await deployStep(w, sha);
    expect(deploy.code).toBe(1);
    expect(deploy.outputs).toMatchObject({ result: 'refused', 'exit-code': '2' });
    expect(deploy.annotations.find((a) => a.props.title === 'NYL-PLAN-MISSING (dev)')?.message).toBe(
      `no reviewed plan of dev to execute: commit ${sha} belongs to no pull request; nothing was executed\nfix: merge through a pull request whose plan job commented the plan (the plan workflow), or run the deploy without plan-from-pr`,
    );
  });
});
