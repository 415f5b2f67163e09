/**
 * The site action (`actions/site`, and the root action with `command: site`), run from the built
 * bundles as the runner runs them, in a fresh clone of a bare remote whose refs hold real state
 * made with the built CLI: a succeeded run, a failed one, a promotion gate that waits. And the
 * example workflow that publishes the folder to GitHub Pages.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { type Step, setup, step, type Work } from './helpers/action-step.js';
import { command, commitFiles, ENV_DEV, git, nyl, nylJson, tempDir } from './helpers/repo.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const TOKEN = 'site-action-token-1234';
/** Masked when the runs are recorded (a secret-looking name in the CLI's environment). */
const RECORDED = { DEPLOY_TOKEN: 'r3corded-s3cret-55' };
/**
 * Printed and output by a unit through a plain variable, so stored as it is in the refs; the
 * action is given it as a secret (SITE_API_KEY): only the action's masking keeps it off the pages.
 */
const LATE = 'l4te-s3cret-value-88';

const ENVS = `${ENV_DEV}---\nkind: Environment\nname: staging\npromotion: {after: [dev]}\n`;
const WEB = command(
  'web',
  'echo "greeting is $GREETING"; echo "token is $DEPLOY_TOKEN"; echo "note=$GREETING" >> "$NYL_OUTPUT"',
);
const KEEP = command('keep', 'echo keep-ran');

function filesOf(dir: string): string[] {
  return readdirSync(dir).flatMap((n) => {
    const p = join(dir, n);
    return statSync(p).isDirectory() ? filesOf(p).map((f) => join(n, f)) : [n];
  });
}
const read = (dir: string, f: string) => readFileSync(join(dir, f), 'utf8');

const errors = (s: Step) => s.annotations.filter((a) => a.command === 'error');
/** `core.setFailed`: an `::error::` without properties. */
const setFailed = (s: Step) => errors(s).filter((a) => !Object.keys(a.props).length);

function expectNoStackTrace(s: Step): void {
  expect(`${s.stdout}${s.stderr}`).not.toMatch(/^\s+at .+\(.+:\d+:\d+\)$|^\s+at .+:\d+:\d+$/m);
  expect(`${s.stdout}${s.stderr}`).not.toContain('NYL-INTERNAL');
}

function expectInputError(s: Step, message: string): void {
  expect(s.code, s.stdout + s.stderr).toBe(1);
  expect(s.stderr).toBe('');
  expect(errors(s)).toEqual([
    { command: 'error', props: { title: 'NYL-INPUT' }, message },
    { command: 'error', props: {}, message },
  ]);
  expect(s.outputs).toEqual({});
  expect(s.summary).toBe('');
  expectNoStackTrace(s);
}

const refsOf = (repo: string) => git(repo, 'for-each-ref', '--format=%(objectname) %(refname)', 'refs/nyl/');

/** A fresh clone of the remote, as actions/checkout leaves it: no refs/nyl/* of its own. */
function checkout(w: Work): Work {
  const dir = join(tempDir('nyl-site-checkout-'), 'repo');
  git(ROOT, 'clone', '-q', `file://${w.bare}`, dir);
  return { dir, bare: w.bare, ctl: '' };
}

describe('the site action', () => {
  let w: Work;
  let devRuns: { run: string; state: string }[];

  beforeAll(async () => {
    w = setup(ENVS + WEB + KEEP);
    const env = { ...RECORDED, GREETING: LATE };
    const ok = await nyl(w.dir, ['reconcile', '-e', 'dev'], env);
    expect(ok.code, ok.stdout + ok.stderr).toBe(0);
    commitFiles(w.dir, { 'nyl.yaml': ENVS + WEB + KEEP + command('bad', 'echo failing-now; exit 3') });
    git(w.dir, 'push', '-q', 'origin', 'main');
    const bad = await nyl(w.dir, ['reconcile', '-e', 'dev'], env);
    expect(bad.code, bad.stdout + bad.stderr).toBe(1);
    const gated = await nyl(w.dir, ['reconcile', '-e', 'staging'], env);
    expect(gated.code, gated.stdout + gated.stderr).toBe(2);
    const runs = await nylJson<{ facts: { runs: { run: string; state: string }[] } }>(w.dir, ['runs', '-e', 'dev']);
    devRuns = runs.json.facts.runs;
    expect(devRuns.map((r) => r.state).sort()).toEqual(['failed', 'succeeded']);
    // The late secret is in the refs as it is: only the action's masking can keep it off the site.
    const first = devRuns.find((r) => r.state === 'succeeded')?.run as string;
    const logs = await nyl(w.dir, ['runs', 'logs', '-e', 'dev', first]);
    expect(logs.stdout).toContain(`greeting is ${LATE}`);
  }, 120_000);

  it('fetches the refs from the remote and writes the site: pages, outputs, summary; no secret anywhere', async () => {
    const c = checkout(w);
    expect(refsOf(c.dir)).toBe('');
    const remoteBefore = refsOf(w.bare);
    const s = await step('site', c, { inputs: { out: '_site', token: TOKEN }, env: { SITE_API_KEY: LATE } });
    expect(s.code, s.stdout + s.stderr).toBe(0);
    expect(errors(s)).toEqual([]);
    expect(refsOf(w.bare)).toBe(remoteBefore); // it wrote nothing to the remote

    const folder = join(c.dir, '_site');
    const files = filesOf(folder);
    const html = files.filter((f) => f.endsWith('.html'));
    expect(files).toEqual(expect.arrayContaining(['index.html', 'site.css', 'env/dev/index.html']));
    expect(files).toContain('env/staging/index.html');
    for (const r of devRuns) expect(read(folder, `env/dev/run/${r.run}.html`)).toContain(r.run);
    expect(s.outputs).toEqual({ folder, pages: String(html.length) });

    expect(s.summary).toContain(`## nyl site: ${html.length} pages written`);
    expect(s.summary).toContain(`- **pages**: ${html.length}\n`);
    expect(s.summary).toContain('- **environments**: 2 (`dev`, `staging`)\n');
    expect(s.summary).toMatch(/^- \*\*needs a person\*\*: [1-9]\d*$/m);
    expect(s.summary).toMatch(/^- \*\*dev\*\* unit `bad` failed/m);
    expect(s.summary).toContain(`- **folder**: \`${folder}\`\n`);
    expect(s.summary).toContain('- **logs**: included\n');

    // Logs and outputs are on the pages, their secrets masked: the recorded one, the late one, the token.
    const all = files.map((f) => read(folder, f)).join('\n');
    expect(all).toContain('<details class="log"');
    expect(all).toContain('<h2>Outputs</h2>');
    expect(all).toContain('greeting is ***');
    expect(all).toContain('token is ***');
    for (const f of files)
      for (const secret of [LATE, RECORDED.DEPLOY_TOKEN, TOKEN]) expect(read(folder, f), f).not.toContain(secret);
    // The runner learns the secrets from ::add-mask::; nothing else the step shows carries them.
    expect(s.stdout).toContain(`::add-mask::${TOKEN}\n`);
    expect(s.stdout).toContain(`::add-mask::${LATE}\n`);
    const shown = s.stdout
      .split('\n')
      .filter((l) => !l.startsWith('::add-mask::'))
      .join('\n');
    for (const secret of [LATE, TOKEN]) {
      expect(shown).not.toContain(secret);
      expect(s.stderr + s.summary + Object.values(s.outputs).join('\n')).not.toContain(secret);
    }
  });

  it('the root action with command: site builds one environment, leaving logs and outputs out', async () => {
    const c = checkout(w);
    const s = await step('main', c, {
      inputs: { command: 'site', out: 'public/site', environment: 'dev', logs: 'false', outputs: 'false' },
      env: { SITE_API_KEY: LATE },
    });
    expect(s.code, s.stdout + s.stderr).toBe(0);
    const folder = join(c.dir, 'public', 'site');
    const files = filesOf(folder);
    expect(files).toContain('env/dev/index.html');
    expect(files.some((f) => f.startsWith('env/staging/'))).toBe(false);
    expect(s.outputs).toEqual({ folder, pages: String(files.filter((f) => f.endsWith('.html')).length) });
    for (const f of files) {
      const text = read(folder, f);
      expect(text, f).not.toContain('<details class="log"');
      expect(text, f).not.toContain('<h2>Logs</h2>');
      expect(text, f).not.toContain('<h2>Outputs</h2>');
      expect(text, f).not.toContain('greeting is');
      expect(text, f).not.toContain(LATE);
    }
    expect(s.summary).toContain('- **environments**: 1 (`dev`)\n');
    expect(s.summary).toContain('- **logs**: left out (logs: false)\n');
    expect(s.summary).toContain('- **outputs**: left out (outputs: false)\n');
  });

  it('an unknown environment fails the step with its code and fix, no folder and no stack trace', async () => {
    const c = checkout(w);
    const s = await step('site', c, { inputs: { environment: 'prdo' } });
    expect(s.code, s.stdout + s.stderr).toBe(1);
    expect(s.stderr).toBe('');
    const coded = errors(s).filter((a) => a.props.title);
    expect(coded.map((a) => a.props.title)).toEqual(['NYL-ENV-UNKNOWN (prdo)']);
    expect(coded[0]?.message).toMatch(/prdo[\s\S]*\nfix: /);
    expect(setFailed(s).map((a) => a.message)).toEqual([expect.stringMatching(/^NYL-ENV-UNKNOWN: .*prdo/)]);
    expect(s.summary).toMatch(/^## nyl site: failed\n[\s\S]*\*\*NYL-ENV-UNKNOWN\*\* \(prdo\): [\s\S]*fix: /);
    expect(s.outputs).toEqual({});
    expect(existsSync(join(c.dir, '_site'))).toBe(false);
    expectNoStackTrace(s);
  });

  it('bad inputs fail with NYL-INPUT before anything runs', async () => {
    const c = checkout(w);
    expectInputError(await step('site', c, { inputs: { logs: 'maybe' } }), 'input logs: logs must be true or false');
    expectInputError(
      await step('site', c, { inputs: { environment: 'dev', group: 'line' } }),
      'inputs environment and group: set one, not both (neither builds every environment)',
    );
    expectInputError(
      await step('main', c, { inputs: { command: 'sight' } }),
      'input command: "sight" is not one of reconcile, recover, verify, lease-break, plan, site',
    );
  });
});

describe('examples/workflows/site.yml', () => {
  const file = join(ROOT, 'examples', 'workflows', 'site.yml');

  it('passes lint-workflows with the site action and the root action', () => {
    const r = spawnSync(
      process.execPath,
      [
        join(ROOT, 'scripts', 'lint-workflows.mjs'),
        file,
        join(ROOT, 'action.yml'),
        join(ROOT, 'actions/site/action.yml'),
      ],
      { cwd: ROOT, encoding: 'utf8' },
    );
    expect(r.stdout + r.stderr).toBe('lint-workflows: 1 workflows and 2 action metadata files, no problems\n');
    expect(r.status).toBe(0);
  });

  it('the lint asks of a site job contents: read only, and no concurrency group', () => {
    const dir = tempDir('nyl-site-lint-');
    const wf = join(dir, 'site-jobs.yml');
    writeFileSync(
      wf,
      [
        'on: workflow_dispatch',
        'jobs:',
        '  enough:',
        '    runs-on: ubuntu-latest',
        '    permissions: { contents: read }',
        '    steps:',
        '      - uses: your-org/nyl/actions/site@v1',
        '      - uses: your-org/nyl@v1',
        '        with: { command: site, group: line, logs: false }',
        '  lacking:',
        '    runs-on: ubuntu-latest',
        '    permissions: { pages: write }',
        '    steps:',
        '      - uses: your-org/nyl/actions/site@v1',
        '        with: { out: public, wait-lease: 5m }',
        '',
      ].join('\n'),
    );
    const r = spawnSync(process.execPath, [join(ROOT, 'scripts', 'lint-workflows.mjs'), wf], {
      cwd: ROOT,
      encoding: 'utf8',
    });
    expect(r.status).toBe(1);
    const found = r.stdout
      .trim()
      .split('\n')
      .map((l) => l.replace(/^.*?:(\d+):\d+: /, '$1 '));
    expect(found).toEqual([
      '12 job "lacking" runs Nyl with permissions that lack contents: read (site: to fetch refs/nyl/<environment>/* (the site writes nothing there)) [nyl-permissions]',
      expect.stringMatching(/^15 input "wait-lease" is not defined by actions\/site\/action\.yml; .*\[nyl-action\]$/),
    ]);
  });

  it('builds the site after each deploy, hourly and by hand, and deploys it to Pages', () => {
    const wf = parse(readFileSync(file, 'utf8'));
    expect(wf.on.workflow_run).toEqual({ workflows: ['deploy'], types: ['completed'] });
    expect(wf.on.schedule[0].cron).toMatch(/^\d+ \* \* \* \*$/);
    expect(wf.on).toHaveProperty('workflow_dispatch');
    expect(wf.concurrency).toEqual({ group: 'pages', 'cancel-in-progress': false });
    // The deploy workflow it follows is named so.
    expect(parse(readFileSync(join(ROOT, 'examples/workflows/deploy.yml'), 'utf8')).name).toBe('deploy');

    const { build, deploy } = wf.jobs;
    expect(Object.keys(wf.jobs)).toEqual(['build', 'deploy']);
    expect(build.permissions).toEqual({ contents: 'read' });
    const uses = build.steps.map((s: { uses?: string }) => s.uses?.replace(/@.*/, ''));
    expect(uses).toEqual([
      'actions/checkout',
      'your-org/nyl/actions/site',
      'actions/configure-pages',
      'actions/upload-pages-artifact',
    ]);
    expect(build.steps[1].with.out).toBe('_site');
    expect(build.steps[3].with.path).toBe('_site');

    expect(deploy.needs).toBe('build');
    expect(deploy.permissions).toEqual({ pages: 'write', 'id-token': 'write' });
    expect(deploy.environment).toEqual({ name: 'github-pages', url: '${{ steps.deployment.outputs.page_url }}' });
    expect(deploy.steps).toEqual([expect.objectContaining({ id: 'deployment', uses: 'actions/deploy-pages@v5' })]);
  });
});
