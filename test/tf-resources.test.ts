/**
 * Terraform at the resource level, against the real `terraform` on PATH (skipped, saying so, where
 * there is none), with the built-in `terraform_data` resource only: the plan lists each unit's
 * resource changes (counts, addresses, actions, attribute names, never a value); every apply goes
 * through a plan file whose changes its receipt, the transition and the run history keep; a
 * reviewed token is planned again before anything runs and applied exactly, or refused naming the
 * units and resources that differ; deletes and replaces wait for a person; verify records which
 * resources drifted; the plan action comments the changes (500 resources within GitHub's limit)
 * and plans a fork's pull request at the unit level. A counting wrapper given as `spec.binary`
 * shows which terraform commands ran.
 */
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readPlanComment } from '../src/actions/pr-plan.js';
import { REPOSITORY, setup, step, type Work } from './helpers/action-step.js';
import { FakeGitHub } from './helpers/fake-github.js';
import {
  type CliResult,
  commitFiles,
  ENV_DEV,
  git,
  makeRepo,
  nyl,
  nylJson,
  parseTable,
  sleep,
  tempDir,
  waitForFile,
} from './helpers/repo.js';
import { startTfHttpBackend } from './helpers/tf-http-backend.js';

for (const k of Object.keys(process.env)) if (k.startsWith('TF_')) delete process.env[k];

const HAS_TERRAFORM = spawnSync('terraform', ['version'], { stdio: 'ignore' }).status === 0;
if (!HAS_TERRAFORM) console.log('skipping terraform resource-level tests: terraform is not on PATH');
const suite = HAS_TERRAFORM ? describe : describe.skip;

// biome-ignore lint/suspicious/noExplicitAny: JSON documents read back from refs and --json
type Json = any;

const LOCAL = ['-e', 'dev', '--local'];
const GITIGNORE = [
  '.terraform/',
  '.terraform.lock.hcl',
  '*.tfstate',
  '*.tfstate.backup',
  'started',
  'release',
  '',
].join('\n');

/**
 * One input changes `a` in place, replaces `b` and deletes `gone` (which exists only for the first
 * value). Values are distinctive strings, so a test can tell that none is ever printed.
 */
const NET_TF = `variable "name" {
  type = string
}

resource "terraform_data" "a" {
  input = var.name
}

resource "terraform_data" "b" {
  input            = "fixed"
  triggers_replace = var.name
}

resource "terraform_data" "gone" {
  count = var.name == "alpha-7f3q" ? 1 : 0
  input = "first"
}

output "greet" {
  value = "hi \${var.name}"
}
`;

/** A counting wrapper for `spec.binary`: each invocation's subcommand is appended to $TF_COUNT_LOG. */
const WRAPPER = '#!/bin/sh\n[ -n "$TF_COUNT_LOG" ] && echo "$1" >> "$TF_COUNT_LOG"\nexec terraform "$@"\n';

function tfUnit(name: string, spec: Record<string, unknown>, extra = ''): string {
  return `---\nkind: Terraform\nname: ${name}\n${extra}spec: ${JSON.stringify(spec)}\n`;
}

const out = (r: CliResult) => `exit ${r.code}\n${r.stdout}\n${r.stderr}`;
const results = (stdout: string) => Object.fromEntries(parseTable(stdout).map((r) => [r.UNIT, r.RESULT ?? '']));
const observedUnit = (dir: string, unit: string): Json =>
  JSON.parse(git(dir, 'show', `refs/nyl/dev/observed:units/${unit}.json`));
const tfState = (dir: string, module: string): Json =>
  JSON.parse(readFileSync(join(dir, module, 'terraform.tfstate'), 'utf8'));
/** Address → the resource's `input` in the state (what was applied). */
function applied(dir: string, module: string): Record<string, unknown> {
  const s = tfState(dir, module);
  const outp: Record<string, unknown> = {};
  for (const r of s.resources ?? [])
    for (const i of r.instances ?? [])
      outp[`${r.type}.${r.name}${i.index_key !== undefined ? `[${i.index_key}]` : ''}`] = i.attributes?.input?.value;
  return outp;
}
/** The lines under the table that list one unit's changes. */
function changeLines(stdout: string, unit: string, label = 'changes'): string[] {
  const lines = stdout.split('\n');
  const at = lines.findIndex((l) => l.startsWith(`${label} of ${unit}:`));
  if (at < 0) return [];
  const outp = [lines[at] as string];
  // Its lines are indented; a blank line (then the facts) or the next unit ends them.
  for (const l of lines.slice(at + 1)) {
    if (!l.startsWith('  ')) break;
    outp.push(l);
  }
  return outp;
}
const tokenOf = (stdout: string) => /\n {2}token: +(v\d\.\S+)\n/.exec(stdout)?.[1] as string;
const counted = (log: string) => (existsSync(log) ? readFileSync(log, 'utf8').split('\n').filter(Boolean) : []);
const tally = (log: string) => {
  const t: Record<string, number> = {};
  for (const c of counted(log)) t[c] = (t[c] ?? 0) + 1;
  return t;
};

/** A repository with the `net` module and the wrapper, one Terraform unit `net` (plus `extra` documents). */
function netRepo(name: string, extra = '', unitExtra = ''): { dir: string; log: string } {
  const dir = makeRepo({
    '.gitignore': GITIGNORE,
    'tf/net/main.tf': NET_TF,
    'bin/tf': WRAPPER,
    'nyl.yaml': ENV_DEV + tfUnit('net', { module: 'tf/net', binary: 'bin/tf', variables: { name } }, unitExtra) + extra,
  });
  spawnSync('chmod', ['+x', join(dir, 'bin/tf')]);
  git(dir, 'add', 'bin/tf');
  git(dir, 'commit', '-qm', 'executable wrapper');
  return { dir, log: join(tempDir('nyl-tf-count-'), 'count.log') };
}

function setName(dir: string, from: string, to: string, message = to): void {
  const text = readFileSync(join(dir, 'nyl.yaml'), 'utf8');
  commitFiles(dir, { 'nyl.yaml': text.replace(`"name":"${from}"`, `"name":"${to}"`) }, message);
}

suite('terraform at the resource level (real terraform)', async () => {
  it('plans resource changes (counts, addresses, attributes, no values); deletes and replaces wait for approval; --approve applies; receipts, transition and run history keep the changes', async () => {
    const { dir, log } = netRepo('alpha-7f3q');
    const env = { TF_COUNT_LOG: log };

    const first = await nyl(dir, ['plan', ...LOCAL], env);
    expect(first.code, out(first)).toBe(0);
    expect(parseTable(first.stdout)[0]).toMatchObject({
      UNIT: 'net',
      RESULT: 'execute',
      DETAIL: 'new unit; +3 ~0 -/+0 -0',
    });
    expect(changeLines(first.stdout, 'net')).toEqual([
      'changes of net: +3 ~0 -/+0 -0',
      '  +  terraform_data.a',
      '  +  terraform_data.b',
      '  +  terraform_data.gone[0]',
      '  outputs: + greet',
    ]);
    expect(tokenOf(first.stdout)).toMatch(/^v3\.none\.none\.[0-9a-f]{12}\.[0-9a-f]{12}$/);
    // Speculative: no state lock taken, nothing kept; the plan ran terraform plan and show once.
    expect(tally(log)).toEqual({ init: 1, plan: 1, show: 1 });

    const applyRun = await nyl(dir, ['reconcile', ...LOCAL], env);
    expect(applyRun.code, out(applyRun)).toBe(0);
    expect(results(applyRun.stdout)).toEqual({ net: 'executed' });
    expect(parseTable(applyRun.stdout)[0]?.DETAIL).toBe('+3 ~0 -/+0 -0');
    const receipt = observedUnit(dir, 'net').receipt;
    expect(receipt.changes).toEqual({
      counts: { create: 3, update: 0, replace: 0, delete: 0, read: 0 },
      resources: [
        ['terraform_data.a', 'create'],
        ['terraform_data.b', 'create'],
        ['terraform_data.gone[0]', 'create'],
      ],
    });
    expect(git(dir, 'log', '-1', '--format=%B', 'refs/nyl/dev/observed')).toContain('"changes":"+3 ~0 -/+0 -0"');
    // Reconcile plans once (into a file) and applies that file: no second plan.
    expect(tally(log)).toMatchObject({ plan: 2, show: 2, apply: 1 });

    setName(dir, 'alpha-7f3q', 'beta-9k2w');
    const second = (await nylJson(dir, ['plan', ...LOCAL], env)).json;
    const row = (second.rows as Json[])[0];
    expect(row).toMatchObject({ unit: 'net', result: 'awaiting-approval', gate: 'destructive' });
    expect(row.detail).toMatch(
      /^desired document changed; \+0 ~1 -\/\+1 -1; deletes or replaces resources: waits for approval/,
    );
    expect(row.changes.counts).toEqual({ create: 0, update: 1, replace: 1, delete: 1, read: 0 });
    expect(row.changes.resources.map((r: Json) => [r.action, r.address])).toEqual([
      ['delete', 'terraform_data.gone[0]'],
      ['replace', 'terraform_data.b'],
      ['update', 'terraform_data.a'],
    ]);
    expect(row.changes.resources[1].attributes).toContain('triggers_replace');
    expect(row.changes.resources[2].attributes).toContain('input');
    for (const r of row.changes.resources) expect(r.digest).toMatch(/^[0-9a-f]{12}$/);
    expect(row.changes.outputs).toEqual([{ name: 'greet', action: 'update' }]);
    expect((second.facts as Json).plan).toBe('0 to execute, 1 awaiting approval, 0 unchanged');
    const planFile = join(tempDir('nyl-plan-file-'), 'net.plan.json');
    const text = await nyl(dir, ['plan', ...LOCAL, '--out', planFile], env);
    expect(changeLines(text.stdout, 'net')).toEqual([
      'changes of net: +0 ~1 -/+1 -1',
      '  -    terraform_data.gone[0]',
      '  -/+  terraform_data.b (id, output, triggers_replace)',
      '  ~    terraform_data.a (input, output)',
      '  outputs: ~ greet',
    ]);
    // No value anywhere the plan is shown or kept.
    const kept = readFileSync(planFile, 'utf8');
    for (const shown of [text.stdout, text.stderr, JSON.stringify(second), kept])
      for (const value of ['alpha-7f3q', 'beta-9k2w', 'fixed', 'first']) expect(shown).not.toContain(value);

    // Without approval: nothing applied, the rest of the run goes on, exit 2.
    const waits = await nyl(dir, ['reconcile', ...LOCAL], env);
    expect(waits.code, out(waits)).toBe(2);
    expect(results(waits.stdout)).toEqual({ net: 'awaiting-approval' });
    expect(parseTable(waits.stdout)[0]?.DETAIL).toContain(
      'its plan deletes or replaces resources (replace terraform_data.b, delete terraform_data.gone[0]): nothing was applied',
    );
    expect(waits.stdout + waits.stderr).toContain('nyl reconcile -e dev --approve net --local');
    expect(applied(dir, 'tf/net')).toEqual({
      'terraform_data.a': 'alpha-7f3q',
      'terraform_data.b': 'fixed',
      'terraform_data.gone[0]': 'first',
    });
    expect(observedUnit(dir, 'net').receipt.changes.counts.create).toBe(3);
    const appliesBefore = tally(log).apply;

    const approved = await nyl(dir, ['reconcile', ...LOCAL, '--approve', 'net'], env);
    expect(approved.code, out(approved)).toBe(0);
    expect(results(approved.stdout)).toEqual({ net: 'executed' });
    expect(applied(dir, 'tf/net')).toEqual({ 'terraform_data.a': 'beta-9k2w', 'terraform_data.b': 'fixed' });
    expect(tally(log).apply).toBe((appliesBefore ?? 0) + 1);
    const message = git(dir, 'log', '-1', '--format=%B', 'refs/nyl/dev/observed');
    expect(message).toContain('"changes":"+0 ~1 -/+1 -1"');
    expect(message).toMatch(/\napproved: \{"at":"[^"]+","by":"[^"]+","units":\["net"\]\}/);
    expect(observedUnit(dir, 'net').receipt.changes.resources).toEqual([
      ['terraform_data.gone[0]', 'delete'],
      ['terraform_data.b', 'replace'],
      ['terraform_data.a', 'update'],
    ]);
    const run = /\n {2}run: +(\S+)\n/.exec(approved.stdout)?.[1] as string;
    const show = await nyl(dir, ['runs', 'show', ...LOCAL, run]);
    expect(show.code, out(show)).toBe(0);
    expect(show.stdout).toContain(
      'changes of net: +0 ~1 -/+1 -1\n  -    terraform_data.gone[0]\n  -/+  terraform_data.b\n  ~    terraform_data.a',
    );
  });

  it('a token reviewed on a branch is applied on the merge commit: one plan and one apply, its replace approved by the review', async () => {
    const { dir, log } = netRepo('alpha-7f3q');
    const env = { TF_COUNT_LOG: log };
    expect((await nyl(dir, ['reconcile', ...LOCAL, '--approve', 'net'], env)).code).toBe(0);
    git(dir, 'checkout', '-q', '-b', 'pr-1');
    setName(dir, 'alpha-7f3q', 'gamma-5t1x');
    const reviewed = await nyl(dir, ['plan', ...LOCAL], env);
    expect(reviewed.code, out(reviewed)).toBe(0);
    expect(results(reviewed.stdout)).toEqual({ net: 'awaiting-approval' });
    const token = tokenOf(reviewed.stdout);
    expect(token).toMatch(/^v3\./);
    git(dir, 'checkout', '-q', 'main');
    git(dir, 'merge', '-q', '--no-ff', '-m', 'Merge pull request #1', 'pr-1');

    writeFileSync(log, '');
    const deploy = await nyl(dir, ['reconcile', ...LOCAL, '--plan', token], env);
    expect(deploy.code, out(deploy)).toBe(0);
    expect(results(deploy.stdout)).toEqual({ net: 'executed' });
    expect(applied(dir, 'tf/net')).toEqual({ 'terraform_data.a': 'gamma-5t1x', 'terraform_data.b': 'fixed' });
    // Planned again once before the run (compared with the review), that file applied: never two plans.
    expect(tally(log)).toEqual({ init: 1, plan: 1, show: 1, apply: 1, output: 1 });
  });

  it('refused after the state changed underneath: a plan file names the unit and the resource, a bare token the unit; nothing is applied; the refusal is in the run history', async () => {
    const { dir, log } = netRepo('alpha-7f3q');
    const env = { TF_COUNT_LOG: log };
    expect((await nyl(dir, ['reconcile', ...LOCAL], env)).code).toBe(0);
    setName(dir, 'alpha-7f3q', 'delta-3m8v');
    const file = join(tempDir('nyl-plan-file-'), 'plan.json');
    const reviewed = await nyl(dir, ['plan', ...LOCAL, '--out', file], env);
    expect(reviewed.code, out(reviewed)).toBe(0);
    const token = tokenOf(reviewed.stdout);
    expect(JSON.parse(readFileSync(file, 'utf8'))).toMatchObject({ schema: 'nyl.plan/v1', environment: 'dev', token });

    // Behind nyl's back: `a` leaves the state, so the plan now creates it instead of updating it.
    const rm = spawnSync('terraform', ['state', 'rm', 'terraform_data.a'], {
      cwd: join(dir, 'tf/net'),
      encoding: 'utf8',
    });
    expect(rm.status, rm.stderr).toBe(0);
    const before = applied(dir, 'tf/net');

    const byFile = await nyl(dir, ['reconcile', ...LOCAL, '--plan', file], env);
    expect(byFile.code, out(byFile)).toBe(2);
    expect(byFile.stderr).toContain('error NYL-PLAN-STALE (dev)');
    expect(byFile.stderr).toContain(
      'is stale: the resource changes differ from the reviewed plan: net: terraform_data.a (create, was update)',
    );
    const byToken = await nyl(dir, ['reconcile', ...LOCAL, '--plan', token], env);
    expect(byToken.code, out(byToken)).toBe(2);
    expect(byToken.stderr).toContain('is stale: the resource changes of net differ from the reviewed plan');
    expect(applied(dir, 'tf/net')).toEqual(before);
    expect(tally(log).apply).toBe(1);
    const runs = ((await nylJson(dir, ['runs', ...LOCAL])).json.facts as Json).runs as Json[];
    expect(runs.filter((r) => r.state === 'refused').map((r) => r.detail)).toEqual([
      'NYL-PLAN-STALE',
      'NYL-PLAN-STALE',
    ]);

    // A file that is not a plan of this environment is refused before anything is read.
    writeFileSync(file, '{"schema":"nyl.plan/v1","environment":"prod","source":"x","token":"v2.a.b.c"}');
    const other = await nyl(dir, ['reconcile', ...LOCAL, '--plan', file], env);
    expect(other.code, out(other)).toBe(1);
    expect(other.stderr).toContain(
      `error NYL-PLAN-FILE\n  the plan file ${file} cannot be used: it is a plan of prod, not of dev`,
    );
  });

  it('a bare token of a review where one unit could not be planned: the planned unit is checked and applied, the other waits for approval', async () => {
    // `flaky` plans only with TF_VAR_ok=yes: the review runs without it.
    const FLAKY = (v: string) => `variable "ok" {
  type = string
  validation {
    condition     = var.ok == "yes"
    error_message = "ok must be yes"
  }
}

resource "terraform_data" "f" {
  input            = "f"
  triggers_replace = "${v}"
}
`;
    const { dir, log } = netRepo('alpha-7f3q', tfUnit('flaky', { module: 'tf/flaky', binary: 'bin/tf' }));
    commitFiles(dir, { 'tf/flaky/main.tf': FLAKY('one') });
    const ok = { TF_COUNT_LOG: log, TF_VAR_ok: 'yes' };
    expect((await nyl(dir, ['reconcile', ...LOCAL], ok)).code).toBe(0);
    setName(dir, 'alpha-7f3q', 'delta-3m8v');
    commitFiles(dir, { 'tf/flaky/main.tf': FLAKY('two') });

    const reviewed = await nyl(dir, ['plan', ...LOCAL], { TF_COUNT_LOG: log, TF_VAR_ok: 'no' });
    expect(reviewed.code, out(reviewed)).toBe(0);
    expect(reviewed.stdout).toContain('warning NYL-PLAN-RESOURCES (flaky)');
    expect(results(reviewed.stdout)).toEqual({ flaky: 'execute', net: 'awaiting-approval' });
    const token = tokenOf(reviewed.stdout);
    // The digest covers net only; the token says flaky (the first plannable unit by name) is left out.
    expect(token).toMatch(/^v3\.[^.]+\.[^.]+\.[^.]+\.[0-9a-f]{12}-1$/);

    const deploy = await nyl(dir, ['reconcile', ...LOCAL, '--plan', token], ok);
    expect(deploy.code, out(deploy)).toBe(2);
    expect(deploy.stderr).not.toContain('NYL-PLAN-STALE');
    // net's replace and delete were reviewed: applied; flaky's replace was not: it waits.
    expect(results(deploy.stdout)).toEqual({ flaky: 'awaiting-approval', net: 'executed' });
    expect(applied(dir, 'tf/net')).toEqual({ 'terraform_data.a': 'delta-3m8v', 'terraform_data.b': 'fixed' });
    const approved = await nyl(dir, ['reconcile', ...LOCAL, '--approve', 'flaky'], ok);
    expect(approved.code, out(approved)).toBe(0);
    expect(results(approved.stdout)).toEqual({ flaky: 'executed', net: 'current' });
  });

  it('an http backend: plans take no lock; the reviewed file is applied under the one lock of its apply; a state changed in the backend is refused', async () => {
    const backend = await startTfHttpBackend();
    try {
      const dir = makeRepo({
        '.gitignore': GITIGNORE,
        'tf/net/main.tf': backend.hcl + NET_TF,
        'nyl.yaml': ENV_DEV + tfUnit('net', { module: 'tf/net', variables: { name: 'alpha-7f3q' } }),
      });
      const locks = () => backend.requests.filter((r) => r.method === 'LOCK').length;
      expect((await nyl(dir, ['reconcile', ...LOCAL])).code).toBe(0);
      setName(dir, 'alpha-7f3q', 'delta-3m8v');
      const file = join(tempDir('nyl-plan-file-'), 'plan.json');
      let before = locks();
      const reviewed = await nyl(dir, ['plan', ...LOCAL, '--out', file]);
      expect(reviewed.code, out(reviewed)).toBe(0);
      expect(changeLines(reviewed.stdout, 'net')[0]).toBe('changes of net: +0 ~1 -/+1 -1');
      expect(locks() - before).toBe(0);

      before = locks();
      const deploy = await nyl(dir, ['reconcile', ...LOCAL, '--plan', file]);
      expect(deploy.code, out(deploy)).toBe(0);
      expect(results(deploy.stdout)).toEqual({ net: 'executed' });
      expect(locks() - before).toBe(1);
      expect(backend.lock()).toBeUndefined();
      expect(JSON.stringify(JSON.parse(backend.state() as string).resources.map((r: Json) => r.name))).toBe(
        '["a","b"]',
      );

      // Reviewed again, then `a` leaves the backend's state behind nyl's back: refused, nothing applied.
      setName(dir, 'delta-3m8v', 'zeta-2k9w');
      expect((await nyl(dir, ['plan', ...LOCAL, '--out', file])).code).toBe(0);
      // Not spawnSync: the backend answers from this very process.
      const rm = spawn('terraform', ['state', 'rm', 'terraform_data.a'], { cwd: join(dir, 'tf/net'), stdio: 'ignore' });
      expect(await new Promise((res) => rm.on('close', res))).toBe(0);
      const stale = await nyl(dir, ['reconcile', ...LOCAL, '--plan', file]);
      expect(stale.code, out(stale)).toBe(2);
      expect(stale.stderr).toContain('net: terraform_data.a (create, was update)');
    } finally {
      await backend.close();
    }
  });

  it('a secret in an address (a for_each key) is masked where the plan is kept, and the reviewed plan still applies', async () => {
    const dir = makeRepo({
      '.gitignore': GITIGNORE,
      'tf/k/main.tf':
        'variable "name" {\n  type = string\n}\n\nresource "terraform_data" "k" {\n  for_each = toset([var.name])\n  input    = "x"\n}\n',
      'nyl.yaml': ENV_DEV + tfUnit('k', { module: 'tf/k', variables: { name: 'zeta1234' } }),
    });
    const env = { DEPLOY_SECRET: 'zeta1234' };
    const file = join(tempDir('nyl-plan-file-'), 'plan.json');
    const reviewed = await nyl(dir, ['plan', ...LOCAL, '--out', file], env);
    expect(reviewed.code, out(reviewed)).toBe(0);
    expect(reviewed.stdout).toContain('terraform_data.k["***"]');
    const kept = readFileSync(file, 'utf8');
    expect(kept).toContain('terraform_data.k[\\"***\\"]');
    expect(kept).not.toContain('zeta1234');
    const deploy = await nyl(dir, ['reconcile', ...LOCAL, '--plan', file], env);
    expect(deploy.code, out(deploy)).toBe(0);
    expect(results(deploy.stdout)).toEqual({ k: 'executed' });
    expect(deploy.stdout).not.toContain('zeta1234');
    expect(observedUnit(dir, 'k').receipt.changes).toEqual({
      counts: { create: 1, update: 0, replace: 0, delete: 0, read: 0 },
      resources: [['terraform_data.k["***"]', 'create']],
    });
  });

  it('a unit whose inputs wait for an upstream is not planned against a guess; destructiveChanges: allow applies a replace unasked; OpenTofu through spec.binary', async () => {
    const consumer = `---\nkind: OpenTofu\nname: app\ndestructiveChanges: allow\nspec: ${JSON.stringify({
      module: 'tf/app',
      binary: 'bin/tf',
      variables: { name: '${{ units.net.outputs.greet }}' },
    })}\n`;
    const { dir, log } = netRepo('alpha-7f3q', consumer);
    commitFiles(dir, { 'tf/app/main.tf': NET_TF });
    const env = { TF_COUNT_LOG: log };
    const plan = await nyl(dir, ['plan', ...LOCAL], env);
    expect(plan.code, out(plan)).toBe(0);
    expect(changeLines(plan.stdout, 'app')).toEqual([
      'changes of app: its resource changes are known once net executes',
    ]);
    expect(changeLines(plan.stdout, 'net')[0]).toBe('changes of net: +3 ~0 -/+0 -0');
    expect(tally(log).plan).toBe(1);
    expect((await nyl(dir, ['reconcile', ...LOCAL], env)).code).toBe(0);

    // net's output changes: app's b is replaced (allowed for app), net itself waits (its default).
    setName(dir, 'alpha-7f3q', 'eps-4h6j');
    const r = await nyl(dir, ['reconcile', ...LOCAL], env);
    expect(r.code, out(r)).toBe(2);
    expect(results(r.stdout)).toEqual({ net: 'awaiting-approval', app: 'current' });
    const both = await nyl(dir, ['reconcile', ...LOCAL, '--approve', 'net'], env);
    expect(both.code, out(both)).toBe(0);
    expect(results(both.stdout)).toEqual({ net: 'executed', app: 'executed' });
    expect(parseTable(both.stdout)[1]?.DETAIL).toBe('+0 ~1 -/+1 -0');
    expect(applied(dir, 'tf/app')['terraform_data.a']).toBe('hi eps-4h6j');
  });

  it('a speculative plan neither waits for nor breaks an apply that holds the state lock', async () => {
    const slow = `${NET_TF}
resource "terraform_data" "slow" {
  provisioner "local-exec" {
    command = "touch started; i=0; while [ ! -f release ] && [ $i -lt 1200 ]; do sleep 0.05; i=$((i + 1)); done"
  }
}
`;
    const dir = makeRepo({
      '.gitignore': GITIGNORE,
      'tf/net/main.tf': slow,
      'nyl.yaml': ENV_DEV + tfUnit('net', { module: 'tf/net', variables: { name: 'alpha-7f3q' } }),
    });
    const module = join(dir, 'tf/net');
    expect(spawnSync('terraform', ['init', '-input=false'], { cwd: module }).status).toBe(0);
    // An apply by hand holds the lock while its provisioner sleeps.
    const holder = spawn('terraform', ['apply', '-auto-approve', '-input=false', '-var', 'name=alpha-7f3q'], {
      cwd: module,
      stdio: 'ignore',
    });
    const holderDone = new Promise<number | null>((res) => holder.on('close', res));
    await waitForFile(join(module, 'started'), 30_000);
    const lock = join(module, '.terraform.tfstate.lock.info');
    expect(existsSync(lock)).toBe(true);
    const plan = await nyl(dir, ['plan', ...LOCAL]);
    expect(plan.code, out(plan)).toBe(0);
    // Done while the apply still holds its lock: the plan neither waited for it nor took it.
    expect(existsSync(lock)).toBe(true);
    expect(plan.stdout).toContain('changes of net:');
    expect(plan.stdout).not.toContain('could not be planned');
    // The provisioner holds the apply (and its lock) until now: no fixed pause to outlast.
    writeFileSync(join(module, 'release'), '');
    expect(await holderDone).toBe(0);
    await sleep(10);
  });

  it('verify records which resources drifted and how; the next reconcile repairs it', async () => {
    const { dir } = netRepo('alpha-7f3q');
    expect((await nyl(dir, ['reconcile', ...LOCAL])).code).toBe(0);
    const rm = spawnSync('terraform', ['state', 'rm', 'terraform_data.b'], {
      cwd: join(dir, 'tf/net'),
      encoding: 'utf8',
    });
    expect(rm.status, rm.stderr).toBe(0);
    const v = await nyl(dir, ['verify', ...LOCAL]);
    expect(v.code, out(v)).toBe(3);
    expect(changeLines(v.stdout, 'net', 'drift')).toEqual(['drift of net: +1 ~0 -/+0 -0', '  +  terraform_data.b']);
    expect(observedUnit(dir, 'net').drift).toMatchObject({
      state: 'drifted',
      resources: [['terraform_data.b', 'create']],
    });
    const status = await nyl(dir, ['status', ...LOCAL]);
    expect(status.stdout).toContain('terraform_data.b will be created');
    expect(changeLines(status.stdout, 'net', 'drift')).toEqual([
      'drift of net: +1 ~0 -/+0 -0',
      '  +  terraform_data.b',
    ]);
    const statusJson = await nylJson(dir, ['status', ...LOCAL]);
    expect((statusJson.json.rows as Json[])[0]).toMatchObject({
      unit: 'net',
      result: 'drifted',
      drift: { counts: { create: 1 }, resources: [{ address: 'terraform_data.b', action: 'create' }] },
    });
    const repair = await nyl(dir, ['reconcile', ...LOCAL]);
    expect(repair.code, out(repair)).toBe(0);
    expect(parseTable(repair.stdout)[0]).toMatchObject({ RESULT: 'executed', DETAIL: '+1 ~0 -/+0 -0' });
  });
});

// ---- the plan action -----------------------------------------------------------------------

const TOKEN = 'ghs_tfresources000token';
let gh: FakeGitHub;
beforeAll(async () => {
  if (HAS_TERRAFORM) gh = await new FakeGitHub(REPOSITORY).start();
});
afterAll(async () => {
  await gh?.close();
});

/** A module of `n` terraform_data resources (created, all of them, on its first apply). */
const manyTf = (n: number, tag: string) =>
  `resource "terraform_data" "r" {\n  count = ${n}\n  input = "${tag}-\${count.index}"\n}\n`;

function planEvent(pr: number, head = REPOSITORY): string {
  const event = join(tempDir('nyl-event-'), 'event.json');
  writeFileSync(
    event,
    JSON.stringify({
      pull_request: { number: pr, head: { repo: { full_name: head } } },
      repository: { full_name: REPOSITORY },
    }),
  );
  return event;
}

function withModule(w: Work, files: Record<string, string>): void {
  for (const [path, text] of Object.entries(files)) {
    mkdirSync(join(w.dir, path, '..'), { recursive: true });
    writeFileSync(join(w.dir, path), text);
  }
  writeFileSync(join(w.dir, '.gitignore'), `${readFileSync(join(w.dir, '.gitignore'), 'utf8')}${GITIGNORE}`);
  git(w.dir, 'add', '-A');
  git(w.dir, 'commit', '-qm', 'module');
}

suite('the plan action with resource-plans (real terraform)', async () => {
  it('comments the changes of 500 resources under GitHub’s limit, counted where cut; plan-from-pr applies exactly them', async () => {
    const w = setup(`${ENV_DEV}${tfUnit('fleet', { module: 'tf/fleet' })}`);
    withModule(w, { 'tf/fleet/main.tf': manyTf(500, 'v1') });
    git(w.dir, 'checkout', '-q', '-b', 'pr-7');
    const plan = await step('plan', w, {
      inputs: { environments: 'dev', token: TOKEN, 'resource-plans': 'true' },
      env: { GITHUB_EVENT_NAME: 'pull_request', GITHUB_EVENT_PATH: planEvent(7), GITHUB_API_URL: gh.url },
    });
    expect(plan.code, plan.stdout + plan.stderr).toBe(0);
    const body = gh.commentsOn(7)[0]?.body ?? '';
    expect(body.length).toBeLessThan(65_536);
    expect(body).toContain('#### Resource changes');
    expect(body).toContain('**fleet** (Terraform) `+500 ~0 -/+0 -0`');
    expect(body).toContain('500 resource changes of fleet');
    const listed = body.split('\n').filter((l) => /^- `\+` `terraform_data\.r\[\d+\]`$/.test(l)).length;
    const cut = /- … (\d+) more resource changes not shown here/.exec(body);
    expect(listed + Number(cut?.[1] ?? 0)).toBe(500);
    expect(body).not.toContain('v1-');
    const kept = readPlanComment(body);
    expect(kept.token).toMatch(/^v3\./);
    expect(kept.changes?.fleet?.resources).toHaveLength(500);
    expect(plan.summary).toContain('#### Resource changes');

    git(w.dir, 'checkout', '-q', 'main');
    git(w.dir, 'merge', '-q', '--no-ff', '-m', 'Merge pull request #7', 'pr-7');
    const merge = git(w.dir, 'rev-parse', 'HEAD');
    gh.pulls.set(merge, [{ number: 7, merge_commit_sha: merge }]);
    const deploy = await step('reconcile', w, {
      inputs: { environment: 'dev', 'plan-from-pr': 'true', token: TOKEN },
      env: { GITHUB_EVENT_NAME: 'push', GITHUB_SHA: merge, GITHUB_API_URL: gh.url },
    });
    expect(deploy.code, deploy.stdout + deploy.stderr).toBe(0);
    expect(
      JSON.parse(readFileSync(join(w.dir, 'tf/fleet/terraform.tfstate'), 'utf8')).resources[0].instances,
    ).toHaveLength(500);
    expect(deploy.summary).toContain('**fleet** (Terraform) `+500 ~0 -/+0 -0`');
  });

  it('a pull request from a fork is planned at the unit level: one line per unit saying why, no terraform run, a unit-level token', async () => {
    const log = join(tempDir('nyl-tf-count-'), 'count.log');
    const w = setup(
      `${ENV_DEV}${tfUnit('net', { module: 'tf/net', binary: 'bin/tf', variables: { name: 'alpha-7f3q' } })}`,
    );
    withModule(w, { 'tf/net/main.tf': NET_TF, 'bin/tf': WRAPPER });
    spawnSync('chmod', ['+x', join(w.dir, 'bin/tf')]);
    git(w.dir, 'commit', '-qam', 'executable');
    const plan = await step('plan', w, {
      inputs: { environments: 'dev', token: TOKEN, 'resource-plans': 'true' },
      env: {
        GITHUB_EVENT_NAME: 'pull_request',
        GITHUB_EVENT_PATH: planEvent(8, 'someone/fork'),
        GITHUB_API_URL: gh.url,
        TF_COUNT_LOG: log,
      },
    });
    expect(plan.code, plan.stdout + plan.stderr).toBe(0);
    const body = gh.commentsOn(8)[0]?.body ?? '';
    expect(body).toContain(
      '**net** (Terraform): not planned at the resource level: a pull request from a fork (someone/fork) is not run with this repository’s credentials; the deploy of the merge plans it',
    );
    expect(readPlanComment(body).token).toMatch(/^v2\./);
    expect(counted(log)).toEqual([]);
  });
});
