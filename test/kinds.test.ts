/**
 * The unit kinds beyond Command, end to end with the built `nyl`:
 *
 * - OpenTofu and Terraform against the fake CLIs in test/fixtures/fake-tofu (always by absolute
 *   path: a real `terraform` may be on PATH), over a bare remote reached by file://. The fake's
 *   FAKE_TOFU_LOG records every invocation's argv, so the tests assert exactly what ran.
 * - OciImage against a real docker-registry on 127.0.0.1 (test/helpers/registry.ts), with OCI
 *   layouts built in node and pushed with skopeo.
 * - Command construction (tfCommands, tfOutputs, stateLock, ociCommands, skopeoRef, sourceDigest)
 *   imported from the drivers directly.
 * - Bad specs of these kinds, answered with file, line and field.
 */
import { type ChildProcess, execFileSync, spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ociCommands, skopeoRef, sourceDigest } from '../src/core/drivers/oci.js';
import { splitApplyArgs, stateLock, stripAnsi, tfCommands, tfOutputs } from '../src/core/drivers/tofu.js';
import { makeOciLayout, type OciLayout } from './helpers/oci.js';
import {
  hasRegistryTools,
  missingRegistryTools,
  REGISTRY_TOOLS_MISSING,
  type Registry,
  startRegistry,
} from './helpers/registry.js';
import {
  CLI,
  type CliResult,
  command,
  commitFiles,
  ENV_DEV,
  GIT_ENV,
  git,
  makeRepo,
  parseTable,
} from './helpers/repo.js';

const FAKE = resolve(__dirname, 'fixtures/fake-tofu');
const TOFU = join(FAKE, 'tofu');
const TERRAFORM = join(FAKE, 'terraform');

const ENV = ['-e', 'dev'];
const OBSERVED = 'refs/nyl/dev/observed';
/** What the fake tools leave in a module directory: never committed. */
const GITIGNORE = [
  '.terraform/',
  '.terraform.lock.hcl',
  '*.tfstate',
  '*.tfstate.backup',
  'terraform.tfstate.d/',
  '.terraform.tfstate.lock.info',
  'drift.json',
  '',
].join('\n');

const dirs: string[] = [];
function tempDir(prefix: string): string {
  const d = mkdtempSync(join(tmpdir(), prefix));
  dirs.push(d);
  return d;
}
afterAll(() => {
  if (process.env.NYL_KEEP_TEST_REPOS) return;
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function waitFor(what: string, cond: () => boolean, timeoutMs = 20_000): Promise<void> {
  const until = Date.now() + timeoutMs;
  while (!cond()) {
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`);
    await sleep(25);
  }
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

// biome-ignore lint/suspicious/noExplicitAny: JSON documents read back from the refs
type Json = any;

// ---------------------------------------------------------------------------------------------
// Repositories and the CLI

interface Repo {
  dir: string;
  /** The bare remote (file://), read directly by assertions. */
  bare: string;
  /** FAKE_TOFU_LOG of every tool run by this repository's nyl invocations. */
  toolLog: string;
  /** Extra environment of every nyl invocation. */
  env: Record<string, string>;
  /** stdout and stderr of every nyl invocation, for "never printed" assertions. */
  transcript: string[];
}

/** A work repository with `files` committed and `origin` a bare repository over file://. */
function setup(files: Record<string, string>, env: Record<string, string> = {}): Repo {
  const scratch = tempDir('nyl-kinds-');
  const bare = join(scratch, 'remote.git');
  execFileSync('git', ['init', '--bare', '-q', bare], { env: { ...process.env, GIT_CONFIG_NOSYSTEM: '1' } });
  const dir = makeRepo({ '.gitignore': GITIGNORE, ...files });
  git(dir, 'remote', 'add', 'origin', `file://${bare}`);
  const toolLog = join(scratch, 'tool.log');
  return { dir, bare, toolLog, env: { FAKE_TOFU_LOG: toolLog, ...env }, transcript: [] };
}

/** The environment of a nyl process: no TF_* or FAKE_TOFU_* of the machine running the tests. */
function nylEnv(extra: Record<string, string>): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) if (!/^(TF_|FAKE_TOFU_)/.test(k)) env[k] = v;
  return { ...env, ...GIT_ENV, NYL_PROGRESS: '0', ...extra };
}

interface Running {
  child: ChildProcess;
  done: Promise<CliResult>;
}

function start(repo: Repo, args: string[]): Running {
  const child = spawn('node', [CLI, ...args], {
    cwd: repo.dir,
    env: nylEnv(repo.env),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout?.on('data', (d) => {
    stdout += d;
  });
  child.stderr?.on('data', (d) => {
    stderr += d;
  });
  const done = new Promise<CliResult>((res, rej) => {
    child.on('error', rej);
    child.on('close', (code) => {
      repo.transcript.push(stdout, stderr);
      res({ code: code ?? -1, stdout, stderr });
    });
  });
  return { child, done };
}

const nyl = (repo: Repo, args: string[]) => start(repo, args).done;

async function nylJson(repo: Repo, args: string[]): Promise<CliResult & { json: Json }> {
  const r = await nyl(repo, [...args, '--json']);
  try {
    return { ...r, json: JSON.parse(r.stdout) };
  } catch {
    throw new Error(`not JSON (exit ${r.code}):\n${r.stdout}\n${r.stderr}`);
  }
}

const out = (r: CliResult) => `exit ${r.code}\n${r.stdout}\n${r.stderr}`;

/** A folder with `nyl` on it, as an operator has it: the built CLI. */
let nylBin: string | undefined;
function nylOnPath(): string {
  if (!nylBin) {
    nylBin = tempDir('nyl-bin-');
    writeFileSync(join(nylBin, 'nyl'), `#!/bin/sh\nexec node ${CLI} "$@"\n`, { mode: 0o755 });
  }
  return nylBin;
}

/**
 * Runs the commands of a runbook as an operator pastes them: each in bash, in the repository,
 * `<text>` replaced by a reason and `<token>` by the token the plan printed. Every one must succeed
 * but the last, whose result is returned.
 */
async function pasteRunbook(repo: Repo, commands: string[]): Promise<{ exec: string; last: CliResult }> {
  let token = '';
  let exec = '';
  let last: CliResult = { code: -1, stdout: '', stderr: '' };
  for (const [i, c] of commands.entries()) {
    const line = c.replace(/<text>/g, "'pasted from the runbook'").replace(/<token>/g, token);
    const child = spawn('bash', ['--noprofile', '--norc', '-c', line], {
      cwd: repo.dir,
      env: { ...nylEnv(repo.env), PATH: `${nylOnPath()}:${process.env.PATH ?? ''}` },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout?.on('data', (d) => {
      stdout += d;
    });
    child.stderr?.on('data', (d) => {
      stderr += d;
    });
    const code = await new Promise<number>((res) => child.on('close', (n) => res(n ?? -1)));
    repo.transcript.push(stdout, stderr);
    last = { code, stdout, stderr };
    if (i < commands.length - 1) expect(code, `\`${line}\`: ${out(last)}`).toBe(0);
    if (/ force-unlock /.test(line)) exec = stdout;
    if (/^nyl plan /.test(line)) token = /\n {2}token: +(v[23]\.\S+)\n/.exec(stdout)?.[1] ?? '<no token>';
  }
  return { exec, last };
}

/** UNIT → RESULT (or DRIFT) of a printed table. */
function results(stdout: string): Record<string, string> {
  return Object.fromEntries(parseTable(stdout).map((r) => [r.UNIT, r.RESULT ?? r.DRIFT ?? r.STATE ?? '']));
}

function detailOf(stdout: string, unit: string): string | undefined {
  return parseTable(stdout).find((r) => r.UNIT === unit)?.DETAIL;
}

function observedUnit(bare: string, unit: string): Json {
  return JSON.parse(git(bare, 'show', `${OBSERVED}:units/${unit}.json`));
}

function lastMessage(bare: string, ref = OBSERVED): string {
  return `${git(bare, 'log', '-1', '--format=%B', ref)}\n`;
}

function runRefs(bare: string): string[] {
  return git(bare, 'for-each-ref', '--format=%(refname)', 'refs/nyl/dev/runs/').split('\n').filter(Boolean);
}

/** Every object of a repository (all refs, dangling ones too), decompressed. */
function everyObject(gitDir: string): string {
  return execFileSync('git', ['cat-file', '--batch-all-objects', '--batch'], {
    cwd: gitDir,
    encoding: 'latin1',
    maxBuffer: 256 * 1024 * 1024,
  });
}

/** Every blob reachable from refs/nyl/*, and every commit message and diff on those refs. */
function nylRefContents(gitDir: string): string {
  const refs = git(gitDir, 'for-each-ref', '--format=%(refname)', 'refs/nyl/').split('\n').filter(Boolean);
  let text = '';
  for (const ref of refs) {
    text += git(gitDir, 'log', '-p', '--format=%H%n%B', ref);
    for (const line of git(gitDir, 'rev-list', '--objects', ref).split('\n')) {
      const oid = line.split(' ')[0] as string;
      if (git(gitDir, 'cat-file', '-t', oid) === 'blob') text += git(gitDir, 'cat-file', '-p', oid);
    }
  }
  return text;
}

// ---------------------------------------------------------------------------------------------
// The fake tool's invocation log

interface Invocation {
  pid: number;
  tool: string;
  argv: string[];
  cwd: string;
  tfVars: string[];
  workspace: string;
  /** Exit code, once it exited. */
  code?: number;
}

function invocations(repo: Repo): Invocation[] {
  if (!existsSync(repo.toolLog)) return [];
  const list: Invocation[] = [];
  for (const line of readFileSync(repo.toolLog, 'utf8').split('\n').filter(Boolean)) {
    const e = JSON.parse(line);
    if (e.event === 'start') list.push({ ...e });
    else {
      const s = [...list].reverse().find((i) => i.pid === e.pid && i.code === undefined);
      if (s) s.code = e.code;
    }
  }
  return list;
}

/** Each invocation as its command word (`init`, `apply`, `workspace select`…). */
const verbs = (list: Invocation[]) =>
  list.map((i) =>
    i.argv[0] === 'workspace' ? `workspace ${i.argv[1]}` : (i.argv.find((a) => !a.startsWith('-')) ?? ''),
  );

function expectNoVarArguments(list: Invocation[]): void {
  for (const i of list)
    for (const a of i.argv) {
      expect(a, `argv of ${i.argv.join(' ')}`).not.toMatch(/^--?var(=|$)/);
    }
}

// ---------------------------------------------------------------------------------------------
// Configuration

/** A unit document of a tool kind; the spec on one line as JSON (YAML's flow style). */
function tfUnit(
  kind: 'OpenTofu' | 'Terraform',
  name: string,
  spec: Record<string, unknown>,
  extra: Record<string, unknown> = {},
): string {
  const lines = ['---', `kind: ${kind}`, `name: ${name}`];
  for (const [k, v] of Object.entries(extra)) lines.push(`${k}: ${JSON.stringify(v)}`);
  lines.push(`spec: ${JSON.stringify(spec)}`);
  return `${lines.join('\n')}\n`;
}

const fakeJson = (fake: unknown) => `${JSON.stringify(fake, null, 2)}\n`;

/** The fake tool's behaviour is its module: a change to it is committed, as a change to a module is. */
function writeFake(dir: string, module: string, fake: unknown): void {
  writeFileSync(join(dir, module, 'fake.json'), fakeJson(fake));
  git(dir, 'add', '--', join(module, 'fake.json'));
  git(dir, 'commit', '-q', '-m', `${module}: change`);
}

function tfState(dir: string, module: string, workspace = 'default'): Json {
  const p =
    workspace === 'default'
      ? join(dir, module, 'terraform.tfstate')
      : join(dir, module, 'terraform.tfstate.d', workspace, 'terraform.tfstate');
  return JSON.parse(readFileSync(p, 'utf8'));
}

// =============================================================================================

describe('OpenTofu', () => {
  /** The sensitive value: from TF_VAR_seed (a name the secret masker does not know), so only Nyl's own care keeps it out. */
  const SECRET = 'HUSH-5e11-c0ffee-4242';
  const MODULE = 'infra/net';
  const FAKE_NET = {
    variables: { name: null, region: 'eu', seed: { sensitive: true } },
    outputs: {
      url: 'https://${var.name}.${var.region}.example/${terraform.workspace}',
      name: '${var.name}',
      conn: { value: 'db://${var.seed}', sensitive: true },
    },
  };
  const base = command('base', 'echo id=alpha >> "$NYL_OUTPUT"');
  const net = tfUnit('OpenTofu', 'net', {
    module: MODULE,
    binary: TOFU,
    variables: { name: '${{ units.base.outputs.id }}', region: 'us' },
  });

  it('applies (init, plan -out, show -json, apply of that plan, output -json); records non-sensitive outputs only; variables travel in a var file; current; verify; drift repaired; a sensitive reference fails; the secret is nowhere', async () => {
    const repo = setup(
      { 'nyl.yaml': ENV_DEV + base + net, [`${MODULE}/fake.json`]: fakeJson(FAKE_NET) },
      { TF_VAR_seed: SECRET },
    );
    const { dir, bare } = repo;
    const moduleDir = join(dir, MODULE);

    // --- First reconcile: applies.
    const first = await nyl(repo, ['reconcile', ...ENV]);
    expect(first.code, out(first)).toBe(0);
    expect(results(first.stdout)).toEqual({ base: 'executed', net: 'executed' });

    const ran = invocations(repo);
    expect(verbs(ran)).toEqual(['init', 'plan', 'show', 'apply', 'output']);
    for (const i of ran) {
      expect(i.tool).toBe('tofu');
      expect(i.cwd).toBe(moduleDir);
      expect(i.code).toBe(0);
      expect(i.argv).toContain('-no-color');
      expect(i.tfVars).toEqual(['TF_VAR_seed']); // names only
    }
    expect(ran[0]?.argv).toEqual(['init', '-input=false', '-no-color']);
    expect(ran[4]?.argv).toEqual(['output', '-json', '-no-color']);
    // Variables: one var file Nyl wrote, in a private folder that is gone afterwards; never -var.
    const plan = ran[1]?.argv as string[];
    const varFiles = plan.filter((a) => a.startsWith('-var-file='));
    expect(varFiles).toHaveLength(1);
    const varFile = (varFiles[0] as string).slice('-var-file='.length);
    expect(varFile).toMatch(/\/nyl-tf-[^/]+\/nyl\.auto\.tfvars\.json$/);
    expect(existsSync(varFile)).toBe(false);
    const planFile = (plan.find((a) => a.startsWith('-out=')) as string).slice('-out='.length);
    expect(plan).toEqual([
      'plan',
      '-input=false',
      '-no-color',
      `-out=${planFile}`,
      '-lock=false',
      `-var-file=${varFile}`,
    ]);
    // The plan it read is the plan it applied (no var file again: the plan holds the variables), then removed.
    expect(ran[2]?.argv).toEqual(['show', '-json', '-no-color', planFile]);
    expect(ran[3]?.argv).toEqual(['apply', '-auto-approve', '-input=false', '-no-color', planFile]);
    expect(existsSync(planFile)).toBe(false);
    expectNoVarArguments(ran);
    for (const i of ran) for (const a of i.argv) expect(a).not.toMatch(/alpha|\bus\b/);

    // The receipt: the non-sensitive outputs; the sensitive one only by name.
    const receipt = observedUnit(bare, 'net').receipt;
    expect(Object.keys(receipt.outputs).sort()).toEqual(['name', 'url']);
    expect(receipt.artifacts).toEqual({ sensitiveOutputs: 'conn' });
    // The variable referencing base's output reached the tool with base's value.
    expect
      .soft(receipt.outputs, 'spec.variables.name = ${{ units.base.outputs.id }} must reach the tool as "alpha"')
      .toEqual({ name: 'alpha', url: 'https://alpha.us.example/default' });
    // The sensitive value did reach the tool (so its absence below means something).
    expect(JSON.stringify(tfState(dir, MODULE).outputs.conn)).toContain(SECRET);

    // --- Second reconcile: current, no tool runs at all.
    const second = await nyl(repo, ['reconcile', ...ENV]);
    expect(second.code, out(second)).toBe(0);
    expect(results(second.stdout)).toEqual({ base: 'current', net: 'current' });
    expect(invocations(repo)).toHaveLength(5);

    // --- verify in sync: init, then plan -detailed-exitcode with the var file.
    const sync = await nyl(repo, ['verify', ...ENV]);
    expect(sync.code, out(sync)).toBe(0);
    expect(results(sync.stdout)).toEqual({ base: 'skipped', net: 'in-sync' });
    const verifyRan = invocations(repo).slice(5);
    expect(verbs(verifyRan)).toEqual(['init', 'plan', 'show']);
    expect(verifyRan[1]?.argv.slice(0, 4)).toEqual(['plan', '-detailed-exitcode', '-input=false', '-no-color']);
    expect(verifyRan[1]?.argv.filter((a) => a.startsWith('-var-file='))).toHaveLength(1);
    expect(verifyRan[1]?.code).toBe(0);
    expect(observedUnit(bare, 'net').drift).toMatchObject({ state: 'in-sync' });

    // --- Drift made outside the tool: verify exits 3 with the plan's summary.
    writeFileSync(join(moduleDir, 'drift.json'), JSON.stringify({ resource: 'null_resource.main', change: 'update' }));
    const drift = await nyl(repo, ['verify', ...ENV]);
    expect(drift.code, out(drift)).toBe(3);
    expect(results(drift.stdout)).toMatchObject({ net: 'drifted' });
    expect(drift.stdout).toContain('Plan: 0 to add, 1 to change, 0 to destroy.');
    expect(drift.stdout).toContain('warning NYL-VERIFY-DRIFT (net)');
    expect(drift.stdout).toContain('the next reconcile re-executes it (driftRepair: converge)');
    const observedDrift = observedUnit(bare, 'net').drift;
    expect(observedDrift.state).toBe('drifted');
    expect(observedDrift.detail).toBe(
      'Plan: 0 to add, 1 to change, 0 to destroy.\nnull_resource.main will be updated in-place',
    );
    expect(invocations(repo).findLast((i) => i.argv[0] === 'plan')).toMatchObject({ code: 2 }); // plan -detailed-exitcode: changes

    // --- The next reconcile repairs it: converge re-executes, drift.json is undone.
    const repair = await nyl(repo, ['reconcile', ...ENV]);
    expect(repair.code, out(repair)).toBe(0);
    expect(results(repair.stdout)).toEqual({ base: 'current', net: 'executed' });
    expect(lastMessage(bare)).toMatch(/\ndriftRepaired: \[net\]\n/);
    expect(existsSync(join(moduleDir, 'drift.json'))).toBe(false);
    expect(observedUnit(bare, 'net').receipt.artifacts).toEqual({ sensitiveOutputs: 'conn' });
    const again = await nyl(repo, ['verify', ...ENV]);
    expect(again.code, out(again)).toBe(0);
    expect(results(again.stdout)).toMatchObject({ net: 'in-sync' });
    expectNoVarArguments(invocations(repo));

    // --- A consumer of the sensitive output fails, saying why.
    commitFiles(dir, {
      'nyl.yaml': `${ENV_DEV}${base}${net}${command('app', 'echo "conn=${{ units.net.outputs.conn }}" > app.out')}`,
    });
    const consumer = await nylJson(repo, ['reconcile', ...ENV]);
    expect(consumer.code, out(consumer)).toBe(1);
    const appRow = consumer.json.rows.find((r: Json) => r.unit === 'app');
    expect(appRow.result).toBe('failed');
    expect(appRow.detail).toBe(
      "output conn of net is sensitive (or holds a secret's value): Nyl never records such outputs, so units.net.outputs.conn cannot be passed; read it from the tool's state or a secret store instead",
    );
    expect(existsSync(join(dir, 'app.out'))).toBe(false);

    // --- The sensitive value is nowhere: refs, logs, CLI output.
    const logs = git(bare, 'show', `${OBSERVED}:logs/net.txt`);
    expect(logs).toContain('Apply complete!');
    expect(logs).toContain('conn = <sensitive>');
    const refText = nylRefContents(bare);
    expect(refText).toContain('sensitiveOutputs');
    for (const [what, text] of [
      ['refs/nyl/* of the remote', refText],
      ['every object of the remote', everyObject(bare)],
      ['every object of the work repository', everyObject(join(dir, '.git'))],
      ['nyl output', repo.transcript.join('\n')],
    ] as const) {
      expect(text.includes(SECRET), `${what} contains the sensitive value`).toBe(false);
      expect(text.includes('db://HUSH'), `${what} contains the sensitive output`).toBe(false);
    }
    expect(repo.transcript.join('\n')).toContain('net');
  });

  it('workspaces keep separate state: created if missing, selected per process with TF_WORKSPACE', async () => {
    const module = 'infra/ws';
    const fake = { variables: { name: null }, outputs: { url: 'https://${var.name}.example/${terraform.workspace}' } };
    const repo = setup({
      'nyl.yaml':
        ENV_DEV +
        tfUnit('OpenTofu', 'blue', { module, binary: TOFU, workspace: 'blue', variables: { name: 'b' } }) +
        tfUnit(
          'OpenTofu',
          'green',
          { module, binary: TOFU, workspace: 'green', variables: { name: 'g' } },
          { needs: ['blue'] },
        ),
      [`${module}/fake.json`]: fakeJson(fake),
    });
    const { dir, bare } = repo;
    const r = await nyl(repo, ['reconcile', ...ENV]);
    expect(r.code, out(r)).toBe(0);
    expect(results(r.stdout)).toEqual({ blue: 'executed', green: 'executed' });
    const ran = invocations(repo);
    expect(verbs(ran)).toEqual([
      'init',
      'workspace new',
      'plan',
      'show',
      'apply',
      'output',
      'init',
      'workspace new',
      'plan',
      'show',
      'apply',
      'output',
    ]);
    // Created if missing, then selected per process (TF_WORKSPACE), never by a shared `workspace select`.
    expect(ran[1]?.argv).toEqual(['workspace', 'new', 'blue']);
    expect(ran[7]?.argv).toEqual(['workspace', 'new', 'green']);
    for (const i of ran.slice(2, 6)) expect(i.workspace).toBe('blue');
    for (const i of ran.slice(8)) expect(i.workspace).toBe('green');
    expect(observedUnit(bare, 'blue').receipt.outputs).toEqual({ url: 'https://b.example/blue' });
    expect(observedUnit(bare, 'green').receipt.outputs).toEqual({ url: 'https://g.example/green' });
    expect(tfState(dir, module, 'blue').outputs.url.value).toBe('https://b.example/blue');
    expect(tfState(dir, module, 'green').outputs.url.value).toBe('https://g.example/green');
    expect(existsSync(join(dir, module, 'terraform.tfstate'))).toBe(false);

    const again = await nyl(repo, ['reconcile', ...ENV]);
    expect(results(again.stdout)).toEqual({ blue: 'current', green: 'current' });
    // verify plans each unit against its own workspace's state (units are verified in parallel).
    const before = invocations(repo).length;
    const v = await nyl(repo, ['verify', ...ENV]);
    const plans = invocations(repo)
      .slice(before)
      .filter((i) => i.argv[0] === 'plan');
    expect(plans).toHaveLength(2);
    expect
      .soft(plans.map((p) => p.workspace).sort(), 'the workspaces the two verify plans ran in')
      .toEqual(['blue', 'green']);
    expect(v.code, out(v)).toBe(0);
    expect(results(v.stdout)).toEqual({ blue: 'in-sync', green: 'in-sync' });
  });

  it('a unit without spec.workspace stays in the default workspace when another unit of its module selected one', async () => {
    const module = 'infra/shared';
    const fake = { variables: { name: null }, outputs: { url: 'https://${var.name}.example/${terraform.workspace}' } };
    const repo = setup({
      'nyl.yaml':
        ENV_DEV +
        tfUnit('OpenTofu', 'plain', { module, binary: TOFU, variables: { name: 'p' } }) +
        tfUnit(
          'OpenTofu',
          'blue',
          { module, binary: TOFU, workspace: 'blue', variables: { name: 'b' } },
          { needs: ['plain'] },
        ),
      [`${module}/fake.json`]: fakeJson(fake),
    });
    const { dir, bare } = repo;
    const r = await nyl(repo, ['reconcile', ...ENV]);
    expect(r.code, out(r)).toBe(0);
    expect(observedUnit(bare, 'plain').receipt.outputs).toEqual({ url: 'https://p.example/default' });
    expect(observedUnit(bare, 'blue').receipt.outputs).toEqual({ url: 'https://b.example/blue' });

    // plain's plan must run against the default workspace's state, not blue's.
    const v = await nyl(repo, ['verify', ...ENV]);
    expect.soft(v.code, `verify: ${out(v)}`).toBe(0);
    expect.soft(results(v.stdout)).toEqual({ plain: 'in-sync', blue: 'in-sync' });
    // The two plans run in parallel: one in each workspace, in either order.
    const planned = invocations(repo)
      .filter((i) => i.argv[0] === 'plan' && i.argv.includes('-detailed-exitcode'))
      .map((i) => i.workspace)
      .sort();
    expect.soft(planned, 'the workspaces the verify plans ran in').toEqual(['blue', 'default']);

    // Whatever verify said, a reconcile must never apply plain's configuration to blue's state.
    await nyl(repo, ['reconcile', ...ENV]);
    expect.soft(tfState(dir, module, 'blue').outputs.url.value).toBe('https://b.example/blue');
    expect(tfState(dir, module).outputs.url.value).toBe('https://p.example/default');
  });
});

// =============================================================================================

describe('OpenTofu cancellation and locks', () => {
  const fakeSlow = (sleepS?: number) => ({
    variables: { name: null },
    outputs: { greeting: 'hi ${var.name}' },
    ...(sleepS ? { sleep: sleepS } : {}),
  });

  it('SIGINT during a slow apply: the tool gets SIGINT first, releases its lock; nyl exits 4 NYL-RUN-CANCELLED; the next reconcile converges', async () => {
    const module = 'infra/slow';
    const repo = setup({
      'nyl.yaml': ENV_DEV + tfUnit('OpenTofu', 'slow', { module, binary: TOFU, variables: { name: 'one' } }),
      [`${module}/fake.json`]: fakeJson(fakeSlow(30)),
    });
    const { dir, bare } = repo;
    const lock = join(dir, module, '.terraform.tfstate.lock.info');
    const run = start(repo, ['reconcile', ...ENV]);
    await waitFor('the apply to take its lock', () => existsSync(lock) && verbs(invocations(repo)).includes('apply'));
    await sleep(400); // into "Creating..."
    const signalled = Date.now();
    run.child.kill('SIGINT');
    const r = await run.done;
    expect(Date.now() - signalled).toBeLessThan(10_000);
    expect(r.code, out(r)).toBe(4);
    expect(`${r.stdout}${r.stderr}`).toMatch(
      /^error NYL-RUN-CANCELLED \(dev\)\n {2}run \S+ of dev was cancelled \(SIGINT\)/m,
    );
    expect(results(r.stdout)).toEqual({ slow: 'uncertain' });
    expect(detailOf(r.stdout, 'slow')).toMatch(/^run \S+ was cancelled during apply$/);

    // The tool was interrupted gracefully (not killed): it said so, exited 1 and released its lock.
    const applyRun = invocations(repo).find((i) => i.argv[0] === 'apply') as Invocation;
    expect(applyRun.code).toBe(1);
    expect(alive(applyRun.pid)).toBe(false);
    expect(existsSync(lock)).toBe(false);
    const [runRef] = runRefs(bare);
    expect(runRef).toBeDefined();
    const log = git(bare, 'show', `${runRef}:units/slow/log.txt`);
    expect(log).toContain('Interrupt received.\nPlease wait for OpenTofu to exit or data loss may occur.');
    expect(log).toContain('Error: execution halted');
    expect(JSON.parse(git(bare, 'show', `${runRef}:units/slow/checkpoint.json`))).toMatchObject({
      result: 'uncertain',
    });

    // The next reconcile takes over and converges (the apply is fast now).
    writeFake(dir, module, fakeSlow());
    const next = await nyl(repo, ['reconcile', ...ENV]);
    expect(next.code, out(next)).toBe(0);
    expect(results(next.stdout)).toEqual({ slow: 'recovered' });
    expect(observedUnit(bare, 'slow').receipt.outputs).toEqual({ greeting: 'hi one' });
    expect(
      invocations(repo)
        .filter((i) => i.argv[0] === 'apply')
        .map((i) => i.code),
    ).toEqual([1, 0]);
    expect(existsSync(lock)).toBe(false);
    expect(runRefs(bare)).toEqual([]);
  });

  /** Starts a reconcile, waits for its apply to hold the lock, then kills the runner and everything it started. */
  async function killDuringApply(repo: Repo, module: string, args: string[]): Promise<Json> {
    const lock = join(repo.dir, module, '.terraform.tfstate.lock.info');
    const run = start(repo, args);
    await waitFor('the apply to take its lock', () => existsSync(lock) && verbs(invocations(repo)).includes('apply'));
    const applyRun = invocations(repo).find((i) => i.argv[0] === 'apply') as Invocation;
    // The runner dies with everything it started: no graceful stop, the tool cannot release its lock.
    run.child.kill('SIGKILL');
    process.kill(-applyRun.pid, 'SIGKILL');
    expect((await run.done).code).toBe(-1);
    await waitFor('the tool to die', () => !alive(applyRun.pid));
    expect(existsSync(lock)).toBe(true); // the lock file stays behind, as the real tools leave it
    return JSON.parse(readFileSync(lock, 'utf8'));
  }

  it('local backend: a lock whose holder was killed does not block: after lease break the next reconcile converges and succeeds', async () => {
    const module = 'infra/killed';
    const repo = setup({
      'nyl.yaml': ENV_DEV + tfUnit('OpenTofu', 'killed', { module, binary: TOFU, variables: { name: 'two' } }),
      [`${module}/fake.json`]: fakeJson(fakeSlow(30)),
    });
    const { dir, bare } = repo;
    const left = await killDuringApply(repo, module, ['reconcile', ...ENV]);
    expect(left.ID).toMatch(/^[0-9a-f-]{36}$/);
    expect(alive(left.pid)).toBe(false);

    const brk = await nyl(repo, ['lease', 'break', ...ENV, '--reason', 'runner was killed']);
    expect(brk.code, out(brk)).toBe(0);
    writeFake(dir, module, fakeSlow()); // applies are fast from now on

    // Converge: the unit is executed again; the dead holder's lock file is no lock.
    const rec = await nylJson(repo, ['reconcile', ...ENV]);
    expect(rec.code, out(rec)).toBe(0);
    expect(rec.json.rows).toHaveLength(1);
    expect(rec.json.rows[0]).toMatchObject({ unit: 'killed', kind: 'OpenTofu' });
    expect(rec.json.rows[0].result).toBe('recovered'); // uncertain (killed mid-apply) → converge → applied again
    const applies = invocations(repo).filter((i) => i.argv[0] === 'apply');
    expect(applies.map((i) => i.code)).toEqual([undefined, 0]); // the killed one never logged its exit
    expect(observedUnit(bare, 'killed').receipt.outputs).toEqual({ greeting: 'hi two' });
    expect(observedUnit(bare, 'killed').condition).toBeUndefined();
    expect(existsSync(join(dir, module, '.terraform.tfstate.lock.info'))).toBe(false);
    expect(repo.transcript.join('\n')).not.toContain('force-unlock');
  });

  it('a live holder (another apply running): the unit fails retryable, "locked by a running process", no force-unlock; the next reconcile after the holder ends succeeds', async () => {
    const module = 'infra/busy';
    const repo = setup({
      'nyl.yaml': ENV_DEV + tfUnit('OpenTofu', 'busy', { module, binary: TOFU, variables: { name: 'three' } }),
      [`${module}/fake.json`]: fakeJson(fakeSlow(30)),
    });
    const { dir, bare } = repo;
    const moduleDir = join(dir, module);
    const lock = join(moduleDir, '.terraform.tfstate.lock.info');
    // Someone else's apply, started by hand in the module, holds the lock.
    const toolEnv = { PATH: process.env.PATH ?? '', HOME: tmpdir(), TF_VAR_name: 'by-hand' };
    expect(spawnSync(TOFU, ['init', '-input=false', '-no-color'], { cwd: moduleDir, env: toolEnv }).status).toBe(0);
    const holder = spawn(TOFU, ['apply', '-auto-approve', '-input=false', '-no-color'], {
      cwd: moduleDir,
      env: toolEnv,
      stdio: 'ignore',
    });
    const holderExit = new Promise<number | null>((res) => holder.on('exit', (code) => res(code)));
    // The lock file is written after it is created: wait until it holds its whole JSON.
    const lockInfo = () => {
      try {
        return JSON.parse(readFileSync(lock, 'utf8')) as { pid: number; Created: string; ID: string; Who: string };
      } catch {
        return undefined;
      }
    };
    await waitFor('the other apply to take the lock', () => lockInfo() !== undefined);
    const info = lockInfo() as { pid: number; Created: string; ID: string; Who: string };
    expect(info.pid).toBe(holder.pid);
    writeFake(dir, module, fakeSlow()); // Nyl's applies are fast (the holder read its module already)

    const rec = await nylJson(repo, ['reconcile', ...ENV]);
    expect(rec.code, out(rec)).toBe(1);
    const m = /^(\d{4}-\d\d-\d\d)T(\d\d:\d\d:\d\d(?:\.\d+)?)Z$/.exec(info.Created) as RegExpExecArray;
    const expectedReason =
      `the state is locked by a running process (lock ID ${info.ID} by ${info.Who} since ${m[1]} ${m[2]} +0000 UTC): ` +
      'another operation on this state runs now; the next reconcile tries again (a lock of a process that died is released with it)';
    expect(rec.json.rows[0]).toMatchObject({ unit: 'busy', result: 'failed', detail: expectedReason });
    expect(rec.json.rows[0].detail).not.toContain('force-unlock');
    expect(observedUnit(bare, 'busy').condition).toMatchObject({
      state: 'failed',
      retryable: true,
      reason: expectedReason,
    });
    // Its plan takes no lock; its apply met the holder's (the holder's own apply is logged when it ends).
    expect(invocations(repo).filter((i) => i.argv[0] === 'plan')).toMatchObject([{ code: 0 }]);
    expect(invocations(repo).filter((i) => i.argv[0] === 'apply')).toMatchObject([{ code: 1 }]);

    // The holder ends (interrupted: it releases its lock); the next reconcile tries again and succeeds.
    holder.kill('SIGINT');
    expect(await holderExit).toBe(1);
    expect(existsSync(lock)).toBe(false);
    const next = await nylJson(repo, ['reconcile', ...ENV]);
    expect(next.code, out(next)).toBe(0);
    expect(next.json.rows[0]).toMatchObject({ unit: 'busy', result: 'executed' });
    expect(observedUnit(bare, 'busy').receipt.outputs).toEqual({ greeting: 'hi three' });
    expect(observedUnit(bare, 'busy').condition).toBeUndefined();
  });

  it('remote backend (http): a lock left by a killed apply fails non-retryably with the runbook, shell-quoted, with --local; pasting it works end to end', async () => {
    const module = 'infra/my app';
    const fake = { ...fakeSlow(30), backend: 'http' };
    const repo = setup({
      'nyl.yaml': ENV_DEV + tfUnit('OpenTofu', 'locked', { module, binary: TOFU, variables: { name: 'two' } }),
      [`${module}/fake.json`]: fakeJson(fake),
    });
    const { dir } = repo;
    const LOCAL = [...ENV, '--local'];
    const lock = join(dir, module, '.terraform.tfstate.lock.info');
    const left = await killDuringApply(repo, module, ['reconcile', ...LOCAL]);
    const lockId = left.ID as string;

    const brk = await nyl(repo, ['lease', 'break', ...LOCAL, '--reason', 'runner was killed']);
    expect(brk.code, out(brk)).toBe(0);
    writeFake(dir, module, { ...fakeSlow(), backend: 'http' });

    // Converge: executed again; the apply fails on the backend's lock.
    const rec = await nylJson(repo, ['reconcile', ...LOCAL]);
    expect(rec.code, out(rec)).toBe(1);
    expect(rec.json.rows).toHaveLength(1);
    expect(rec.json.rows[0]).toMatchObject({ unit: 'locked', kind: 'OpenTofu', result: 'failed' });
    const reason = rec.json.rows[0].detail as string;
    const steps = [...reason.matchAll(/`([^`]+)`/g)].map((x) => x[1] as string);
    // The commands, every word shell-quoted (the module has a space), each with --local.
    expect(steps.map((c) => c.replace(/\b[0-9a-f]{8}-[0-9a-f-]{27}\b/g, 'ID'))).toEqual([
      'nyl hold -e dev --unit locked --reason <text> --local',
      `nyl exec -e dev --unit locked --local -- ${TOFU} '-chdir=infra/my app' force-unlock -force ID`,
      'nyl recover -e dev --unit locked --retry --reason <text> --local',
      'nyl resume -e dev --unit locked --reason <text> --local',
      'nyl plan -e dev --local',
      'nyl reconcile -e dev --plan <token> --local',
    ]);
    // The lock named is the holder's (the killed apply's), not the ID of the attempt that failed.
    expect
      .soft(reason, 'the runbook names the lock the killed apply left')
      .toBe(
        `the state is locked by its backend (lock ID ${lockId}), a lock that outlives its holder (e.g. an apply that was killed); ` +
          'once no operation on this state runs: `nyl hold -e dev --unit locked --reason <text> --local`, ' +
          `\`nyl exec -e dev --unit locked --local -- ${TOFU} '-chdir=infra/my app' force-unlock -force ${lockId}\`, ` +
          '`nyl recover -e dev --unit locked --retry --reason <text> --local`, `nyl resume -e dev --unit locked --reason <text> --local`, ' +
          'then approve the plan: `nyl plan -e dev --local` and `nyl reconcile -e dev --plan <token> --local`',
      );
    const condition = observedUnit(dir, 'locked').condition;
    expect(condition).toMatchObject({ state: 'failed', retryable: false, reason });
    expect(existsSync(lock)).toBe(true);

    // Non-retryable: another reconcile does not run the tool again.
    const ranBefore = invocations(repo).length;
    const waiting = await nyl(repo, ['reconcile', ...LOCAL]);
    expect(results(waiting.stdout)).toEqual({ locked: 'failed' });
    expect(invocations(repo)).toHaveLength(ranBefore);

    // Paste the runbook into a shell, in order.
    const done = await pasteRunbook(repo, steps);
    expect(stripAnsi(done.exec)).toContain('OpenTofu state has been successfully unlocked!');
    expect(done.last.code, `reconcile --plan after the runbook: ${out(done.last)}`).toBe(0);
    expect(results(done.last.stdout)).toEqual({ locked: 'executed' });
    expect(existsSync(lock)).toBe(false);
    expect(observedUnit(dir, 'locked').receipt.outputs).toEqual({ greeting: 'hi two' });
    expect(observedUnit(dir, 'locked').condition).toBeUndefined();
  });
});

// =============================================================================================

describe('Terraform', () => {
  it('applies with terraform, records outputs, verifies, sees drift and repairs it', async () => {
    const module = 'tf/app';
    const fake = {
      variables: { name: null, pin: { default: 'p-1234', sensitive: true } },
      outputs: { url: 'https://${var.name}.example', pin: { value: '${var.pin}', sensitive: true } },
    };
    const repo = setup({
      'nyl.yaml': ENV_DEV + tfUnit('Terraform', 'app', { module, binary: TERRAFORM, variables: { name: 'tee' } }),
      [`${module}/fake.json`]: fakeJson(fake),
    });
    const { dir, bare } = repo;
    const r = await nyl(repo, ['reconcile', ...ENV]);
    expect(r.code, out(r)).toBe(0);
    expect(results(r.stdout)).toEqual({ app: 'executed' });
    expect(parseTable(r.stdout)[0]?.KIND).toBe('Terraform');
    const ran = invocations(repo);
    expect(verbs(ran)).toEqual(['init', 'plan', 'show', 'apply', 'output']);
    for (const i of ran) expect(i.tool).toBe('terraform');
    expectNoVarArguments(ran);
    const receipt = observedUnit(bare, 'app').receipt;
    expect(receipt.outputs).toEqual({ url: 'https://tee.example' });
    expect(receipt.artifacts).toEqual({ sensitiveOutputs: 'pin' });
    const log = git(bare, 'show', `${OBSERVED}:logs/app.txt`);
    expect(log).toContain(`$ ${TERRAFORM} init -input=false -no-color`);
    expect(log).toContain('Terraform has been successfully initialized!');
    expect(log).toContain('Terraform will perform the following actions:');
    expect(log).not.toContain('OpenTofu');
    expect(log).not.toContain('\x1b[');
    expect(nylRefContents(bare)).not.toContain('p-1234');

    const again = await nyl(repo, ['reconcile', ...ENV]);
    expect(results(again.stdout)).toEqual({ app: 'current' });
    const v = await nyl(repo, ['verify', ...ENV]);
    expect(v.code, out(v)).toBe(0);
    expect(results(v.stdout)).toEqual({ app: 'in-sync' });

    writeFileSync(
      join(dir, module, 'drift.json'),
      JSON.stringify({ resource: 'null_resource.main', change: 'update' }),
    );
    const d = await nyl(repo, ['verify', ...ENV]);
    expect(d.code, out(d)).toBe(3);
    expect(d.stdout).toContain('Plan: 0 to add, 1 to change, 0 to destroy.');
    expect(observedUnit(bare, 'app').drift.detail).toMatch(/^Plan: 0 to add, 1 to change, 0 to destroy\.\n/);
    const fix = await nyl(repo, ['reconcile', ...ENV]);
    expect(fix.code, out(fix)).toBe(0);
    expect(results(fix.stdout)).toEqual({ app: 'executed' });
    expect(lastMessage(bare)).toMatch(/\ndriftRepaired: \[app\]\n/);
    expect((await nyl(repo, ['verify', ...ENV])).code).toBe(0);
    expect(repo.transcript.join('\n')).not.toContain('p-1234');
  });
});

// =============================================================================================

describe('command construction', () => {
  const ROOT = '/repo';

  it('tfCommands: var files in order (given, then Nyl’s), workspace select -or-create, -no-color, extra args, never -var', () => {
    const spec = {
      module: 'infra',
      varFiles: ['env/common.tfvars', 'env/dev.tfvars.json'],
      workspace: 'blue',
      initArgs: ['-upgrade', '-backend-config=key=dev'],
      applyArgs: ['-parallelism=2'],
      variables: { token: 'V-SECRET', n: 1 },
    };
    const c = tfCommands('tofu', spec, ROOT, '/tmp/nyl-tf-x/nyl.auto.tfvars.json');
    const vf = [
      '-var-file=/repo/env/common.tfvars',
      '-var-file=/repo/env/dev.tfvars.json',
      '-var-file=/tmp/nyl-tf-x/nyl.auto.tfvars.json',
    ];
    const { planTo, show, applyPlan, ...lines } = c;
    expect(lines).toEqual({
      init: ['tofu', 'init', '-input=false', '-no-color', '-upgrade', '-backend-config=key=dev'],
      workspace: ['tofu', 'workspace', 'new', 'blue'],
      output: ['tofu', 'output', '-json', '-no-color'],
      plan: ['tofu', 'plan', '-detailed-exitcode', '-input=false', '-no-color', ...vf],
      destroy: ['tofu', 'destroy', '-auto-approve', '-input=false', '-no-color', ...vf],
    });
    // The plan takes applyArgs (they shape what is applied) but not -auto-approve, and no state lock
    // (a plan never stops an apply; the apply of the file takes it); the apply takes the file alone.
    const f = '/tmp/w/u.tfplan';
    expect(planTo(f)).toEqual([
      'tofu',
      'plan',
      '-input=false',
      '-no-color',
      `-out=${f}`,
      '-lock=false',
      ...vf,
      '-parallelism=2',
    ]);
    const given = { module: 'm', applyArgs: ['-auto-approve', '-refresh=false'] };
    expect(tfCommands('tofu', given, ROOT, undefined).planTo(f)).toEqual([
      'tofu',
      'plan',
      '-input=false',
      '-no-color',
      `-out=${f}`,
      '-lock=false',
      '-refresh=false',
    ]);
    expect(show(f)).toEqual(['tofu', 'show', '-json', '-no-color', f]);
    expect(applyPlan(f)).toEqual(['tofu', 'apply', '-auto-approve', '-input=false', '-no-color', '-parallelism=2', f]);
    // applyArgs with a saved plan: what decides the changes to the plan, what shapes the apply to it, the rest to both.
    expect(
      splitApplyArgs([
        '-target=a.b',
        '-replace=c.d',
        '-refresh=false',
        '-backup=x',
        '-state-out=y',
        '-lock-timeout=5s',
        '-auto-approve',
      ]),
    ).toEqual({
      planArgs: ['-target=a.b', '-replace=c.d', '-refresh=false', '-lock-timeout=5s'],
      applyArgs: ['-backup=x', '-state-out=y', '-lock-timeout=5s'],
    });
    for (const argv of [...Object.values(lines), planTo(f), applyPlan(f)])
      for (const a of argv ?? []) {
        expect(a).not.toMatch(/^--?var(=|$)/);
        expect(a).not.toContain('V-SECRET');
      }

    // Minimal: no workspace step, no var file, the binary as given.
    const m = tfCommands('/opt/bin/terraform', { module: 'm' }, ROOT, undefined);
    expect(m.workspace).toBeUndefined();
    expect(m.init).toEqual(['/opt/bin/terraform', 'init', '-input=false', '-no-color']);
    expect(m.plan).toEqual(['/opt/bin/terraform', 'plan', '-detailed-exitcode', '-input=false', '-no-color']);
    // Only Nyl's var file.
    expect(tfCommands('tofu', { module: 'm' }, ROOT, '/t/v.json').planTo('p').slice(-1)).toEqual([
      '-var-file=/t/v.json',
    ]);
  });

  it('tfOutputs: sensitive outputs left out (names kept, sorted); non-string values as JSON', () => {
    const json = JSON.stringify({
      url: { sensitive: false, type: 'string', value: 'https://x' },
      port: { sensitive: false, type: 'number', value: 8080 },
      on: { value: true },
      list: { value: ['a', 1] },
      obj: { value: { k: 'v' } },
      nothing: { value: null },
      zeta: { sensitive: true, type: 'string', value: 'S1' },
      alpha: { sensitive: true, value: { nested: 'S2' } },
    });
    const r = tfOutputs(json);
    expect(r).toEqual({
      outputs: {
        url: 'https://x',
        port: '8080',
        on: 'true',
        list: '["a",1]',
        obj: '{"k":"v"}',
        nothing: 'null',
      },
      sensitive: ['alpha', 'zeta'],
    });
    expect(JSON.stringify(r)).not.toMatch(/S1|S2/);
    expect(tfOutputs('')).toEqual({ outputs: {}, sensitive: [] });
    expect(tfOutputs('{}')).toEqual({ outputs: {}, sensitive: [] });
  });

  /** A local lock conflict as Terraform 1.11.4 prints it under -no-color (two applies on one state). */
  const LOCAL_CONFLICT = (id: string) =>
    [
      '',
      'Error: Error acquiring the state lock',
      '',
      'Error message: resource temporarily unavailable',
      'Lock Info:',
      `  ID:        ${id}`,
      '  Path:      terraform.tfstate',
      '  Operation: OperationTypeApply',
      '  Who:       root@vm',
      '  Version:   1.11.4',
      '  Created:   2026-12-01 09:55:53.627992351 +0000 UTC',
      '  Info:      ',
      '',
      '',
      'Terraform acquires a state lock to protect the state from being written',
      'by multiple users at the same time. Please resolve the issue above and try',
      'again. For most commands, you can disable locking with the "-lock=false"',
      'flag, but this is not recommended.',
      '',
    ].join('\n');

  it('stateLock: a local conflict is a live holder; its ID, who and when, with and without colour codes', () => {
    const id = '8c3f1a2e-5b7d-4e9f-a1b2-c3d4e5f60718';
    const live = { id, holder: 'live', who: 'root@vm', created: '2026-12-01 09:55:53.627992351 +0000 UTC' };
    expect(stateLock(LOCAL_CONFLICT(id))).toEqual(live);
    // The same as Terraform 1.11.4 colours it (boxed, codes as the tool writes them).
    const bar = '\x1b[31m│\x1b[0m \x1b[0m';
    const boxed = [
      '\x1b[31m╷\x1b[0m\x1b[0m',
      `${bar}\x1b[1m\x1b[31mError: \x1b[0m\x1b[0m\x1b[1mError acquiring the state lock\x1b[0m`,
      bar,
      `${bar}\x1b[0mError message: resource temporarily unavailable`,
      `${bar}Lock Info:`,
      `${bar}  ID:        ${id}`,
      `${bar}  Path:      terraform.tfstate`,
      `${bar}  Operation: OperationTypeApply`,
      `${bar}  Who:       root@vm`,
      `${bar}  Version:   1.11.4`,
      `${bar}  Created:   2026-12-01 09:55:53.627992351 +0000 UTC`,
      `${bar}  Info:      `,
      bar,
      '\x1b[31m╵\x1b[0m\x1b[0m',
    ].join('\n');
    expect(stateLock(boxed)).toEqual(live);
    expect(stateLock(`Error: something else\n  ID:        ${id}\n`)).toBeUndefined();
    expect(stateLock('')).toBeUndefined();
  });

  it('stateLock: a remote backend’s conflict is a backend lock; S3/DynamoDB name the holder in Lock Info', () => {
    const id = '3f1e8c2a-0d4b-4c6e-9a7f-112233445566';
    const s3 = [
      '',
      'Error: Error acquiring the state lock',
      '',
      'Error message: operation error DynamoDB: PutItem, https response error StatusCode: 400, RequestID: X,',
      'ConditionalCheckFailedException: The conditional request failed',
      'Lock Info:',
      `  ID:        ${id}`,
      '  Path:      tf-state/network/terraform.tfstate',
      '  Operation: OperationTypeApply',
      '  Who:       ci@runner-7',
      '  Version:   1.11.4',
      '  Created:   2026-12-01 08:00:00.5 +0000 UTC',
      '  Info:      ',
      '',
    ].join('\n');
    expect(stateLock(s3)).toEqual({
      id,
      holder: 'backend',
      who: 'ci@runner-7',
      created: '2026-12-01 08:00:00.5 +0000 UTC',
    });
  });

  it('stateLock: the http backend names its holder only as ID= in the message; its Lock Info is the failed attempt’s own', () => {
    // Terraform 1.11.4 against an http state server whose lock was left by a killed apply
    // (-no-color; the break after "locked:" is the tool's wrapping at 77 columns).
    const holder = 'e117e7ab-42b5-ab23-dde9-5b79e737731f';
    const attempt = '5dd7b5b1-1549-5922-dc90-ae755bcdcf2a';
    const http = [
      '',
      'Error: Error acquiring the state lock',
      '',
      'Error message: HTTP remote state already locked:',
      `ID=${holder}`,
      'Lock Info:',
      `  ID:        ${attempt}`,
      '  Path:      ',
      '  Operation: OperationTypeApply',
      '  Who:       root@vm',
      '  Version:   1.11.4',
      '  Created:   2026-12-01 10:08:20.923227466 +0000 UTC',
      '  Info:      ',
      '',
      '',
      'Terraform acquires a state lock to protect the state from being written',
      '',
    ].join('\n');
    // The lock to force-unlock is the holder's; who and when of the attempt are not the holder's.
    expect(stateLock(http)).toEqual({ id: holder, holder: 'backend' });
    // Boxed (colour), the ID on a line of its own after the bar.
    const bar = '\x1b[31m│\x1b[0m \x1b[0m';
    const boxed = http
      .split('\n')
      .map((l) => `${bar}${l}`)
      .join('\n');
    expect(stateLock(boxed)).toEqual({ id: holder, holder: 'backend' });
  });

  it('stateLock: what the fake tool prints, local (live holder) and http (backend), with and without -no-color', () => {
    const dir = tempDir('nyl-kinds-lock-');
    const env = { PATH: process.env.PATH ?? '', HOME: tmpdir() };
    const run = (args: string[]) => spawnSync(TOFU, args, { cwd: dir, env, encoding: 'utf8' });
    const id = '0b6b9d8e-1111-2222-3333-444455556666';
    const lockFile = (extra: Record<string, unknown> = {}) =>
      writeFileSync(
        join(dir, '.terraform.tfstate.lock.info'),
        JSON.stringify({
          ID: id,
          Operation: 'OperationTypeApply',
          Info: '',
          Who: 'someone@host',
          Version: '1.8.0',
          Created: '2026-01-02T03:04:05.123456789Z',
          Path: 'terraform.tfstate',
          ...extra,
        }),
      );
    const apply = (color: boolean) => {
      const r = run(['apply', '-auto-approve', '-input=false', ...(color ? [] : ['-no-color'])]);
      expect(r.status).toBe(1);
      if (color) expect(r.stderr).toContain('\x1b[');
      else expect(r.stderr).not.toContain('\x1b[');
      return stateLock(r.stdout + r.stderr);
    };

    // Local: held by a live process (this one).
    writeFileSync(join(dir, 'fake.json'), fakeJson({ variables: { name: 'x' }, outputs: { o: '${var.name}' } }));
    expect(run(['init', '-input=false', '-no-color']).status).toBe(0);
    lockFile({ pid: process.pid });
    const live = { id, holder: 'live', who: 'someone@host', created: '2026-01-02 03:04:05.123456789 +0000 UTC' };
    expect(apply(true)).toEqual(live);
    expect(apply(false)).toEqual(live);
    // A holder that is gone holds nothing: the apply takes the lock and succeeds.
    const dead = spawnSync('true');
    lockFile({ pid: dead.pid });
    expect(run(['apply', '-auto-approve', '-input=false', '-no-color']).status).toBe(0);
    expect(existsSync(join(dir, '.terraform.tfstate.lock.info'))).toBe(false);

    // http: the lock outlives its holder; the holder is the ID= of the message.
    writeFileSync(
      join(dir, 'fake.json'),
      fakeJson({ backend: 'http', variables: { name: 'x' }, outputs: { o: '${var.name}' } }),
    );
    expect(run(['init', '-input=false', '-no-color']).status).toBe(0);
    lockFile({ Path: '', pid: dead.pid });
    expect(apply(true)).toEqual({ id, holder: 'backend' });
    expect(apply(false)).toEqual({ id, holder: 'backend' });
  });

  const DIGEST = `sha256:${'ab'.repeat(32)}`;

  it('ociCommands: skopeo copy --preserve-digests, all platforms or one by overrides, TLS flags only when set, cert dir', () => {
    // No tls in the spec: no flag, so the machine's registries.conf (e.g. an insecure registry) decides.
    const all = ociCommands({ image: 'reg.example/app:prod', source: `reg.example/app@${DIGEST}` }, ROOT);
    expect(all).toEqual({
      copy: [
        [
          'skopeo',
          'copy',
          '--preserve-digests',
          '--multi-arch=all',
          `docker://reg.example/app@${DIGEST}`,
          'docker://reg.example/app:prod',
        ],
      ],
      inspect: ['skopeo', 'inspect', '--raw', 'docker://reg.example/app:prod'],
    });
    const verified = ociCommands(
      { image: 'reg.example/app:prod', source: `reg.example/app@${DIGEST}`, tls: { verify: true } },
      ROOT,
    );
    expect(verified.copy[0]).toEqual([
      'skopeo',
      'copy',
      '--preserve-digests',
      '--multi-arch=all',
      '--src-tls-verify=true',
      '--dest-tls-verify=true',
      `docker://reg.example/app@${DIGEST}`,
      'docker://reg.example/app:prod',
    ]);
    expect(verified.inspect).toEqual([
      'skopeo',
      'inspect',
      '--raw',
      '--tls-verify=true',
      'docker://reg.example/app:prod',
    ]);

    const one = ociCommands(
      {
        image: '127.0.0.1:5000/app:prod',
        source: 'oci:/layouts/app:v1',
        platforms: ['linux/arm64'],
        tls: { verify: false, certDir: 'certs/registry' },
      },
      ROOT,
    );
    expect(one.copy).toEqual([
      [
        'skopeo',
        'copy',
        '--preserve-digests',
        '--override-os=linux',
        '--override-arch=arm64',
        '--src-tls-verify=false',
        '--src-cert-dir=/repo/certs/registry',
        '--dest-tls-verify=false',
        '--dest-cert-dir=/repo/certs/registry',
        'oci:/layouts/app:v1',
        'docker://127.0.0.1:5000/app:prod',
      ],
    ]);
    expect(one.inspect).toEqual([
      'skopeo',
      'inspect',
      '--raw',
      '--tls-verify=false',
      '--cert-dir=/repo/certs/registry',
      'docker://127.0.0.1:5000/app:prod',
    ]);

    // Two platforms: skopeo cannot pick several, so the whole index is copied.
    const two = ociCommands(
      { image: 'r/app:prod', source: 'docker://r/app:v1', platforms: ['linux/amd64', 'linux/arm64'] },
      ROOT,
    );
    expect(two.copy[0]).toContain('--multi-arch=all');
    expect(two.copy[0]?.some((a) => a.startsWith('--override-'))).toBe(false);
    expect(two.copy[0]?.slice(-2)).toEqual(['docker://r/app:v1', 'docker://r/app:prod']);
    for (const argv of [...all.copy, ...one.copy, ...two.copy]) expect(argv).not.toContain('--format');
  });

  it('ociCommands: one platform with a variant keeps the variant (--override-variant)', () => {
    const c = ociCommands({ image: 'r/app:prod', source: `r/app@${DIGEST}`, platforms: ['linux/arm/v7'] }, ROOT);
    expect(c.copy[0]).toContain('--override-os=linux');
    expect(c.copy[0]).toContain('--override-arch=arm');
    expect(c.copy[0]).toContain('--override-variant=v7');
  });

  it('ociCommands: the docker-buildx variant', () => {
    const c = ociCommands(
      {
        image: 'reg.example/app:prod',
        source: `reg.example/app@${DIGEST}`,
        tool: 'docker-buildx',
        platforms: ['linux/amd64', 'linux/arm64'],
        tls: { verify: false },
      },
      ROOT,
    );
    expect(c).toEqual({
      copy: [
        [
          'docker',
          'buildx',
          'imagetools',
          'create',
          '--prefer-index=false',
          '--platform',
          'linux/amd64',
          '--platform',
          'linux/arm64',
          '--tag',
          'reg.example/app:prod',
          `reg.example/app@${DIGEST}`,
        ],
      ],
      inspect: [
        'docker',
        'buildx',
        'imagetools',
        'inspect',
        'reg.example/app:prod',
        '--format',
        '{{json .Manifest.Digest}}',
      ],
    });
    const plain = ociCommands({ image: 'r/app:prod', source: 'r/app:v1', tool: 'docker-buildx' }, ROOT);
    expect(plain.copy).toEqual([
      ['docker', 'buildx', 'imagetools', 'create', '--prefer-index=false', '--tag', 'r/app:prod', 'r/app:v1'],
    ]);
  });

  it('ociCommands: docker-buildx takes a docker:// source as a plain reference', () => {
    const c = ociCommands(
      { image: 'reg.example/app:prod', source: `docker://reg.example/app@${DIGEST}`, tool: 'docker-buildx' },
      ROOT,
    );
    expect(c.copy[0]?.at(-1)).toBe(`reg.example/app@${DIGEST}`);
  });

  it('skopeoRef and sourceDigest', () => {
    expect(skopeoRef('reg.example/app:v1')).toBe('docker://reg.example/app:v1');
    expect(skopeoRef('127.0.0.1:5000/app:v1')).toBe('docker://127.0.0.1:5000/app:v1');
    expect(skopeoRef(`reg.example/app@${DIGEST}`)).toBe(`docker://reg.example/app@${DIGEST}`);
    for (const ref of [
      'docker://reg.example/app:v1',
      'oci:/layouts/app:v1',
      'oci-archive:/tmp/app.tar',
      'docker-archive:/tmp/app.tar',
      'dir:/tmp/app',
      'containers-storage:app:v1',
      'docker-daemon:app:v1',
    ])
      expect(skopeoRef(ref)).toBe(ref);

    expect(sourceDigest(`reg.example/app@${DIGEST}`)).toBe(DIGEST);
    expect(sourceDigest(`docker://127.0.0.1:5000/app@${DIGEST}`)).toBe(DIGEST);
    expect(sourceDigest(`reg.example/app:v1@${DIGEST}`)).toBe(DIGEST);
    expect(sourceDigest('reg.example/app:v1')).toBeUndefined();
    expect(sourceDigest('reg.example/app@sha256:abc')).toBeUndefined();
    expect(sourceDigest(`reg.example/app@sha256:${'AB'.repeat(32)}`)).toBeUndefined();
    expect(sourceDigest(`reg.example/app@${DIGEST}x`)).toBeUndefined();
  });
});

// =============================================================================================

describe('OciImage against a real registry', () => {
  let registry: Registry | undefined;
  let work: string;
  let policy: string;
  let home: string;
  let v1: OciLayout;
  let v2: OciLayout;

  const host = () => {
    if (!registry) throw new Error('registry not started');
    return registry.host;
  };
  /** skopeo as the tests run it: our own policy and auth file. */
  const skopeoEnv = () => ({ ...process.env, REGISTRY_AUTH_FILE: join(work, 'auth.json') });
  function skopeo(...args: string[]): string {
    const r = spawnSync('skopeo', ['--policy', policy, ...args], { env: skopeoEnv(), encoding: 'utf8' });
    if (r.status !== 0) throw new Error(`skopeo ${args.join(' ')} failed (exit ${r.status}):\n${r.stderr}`);
    return r.stdout;
  }
  const tagDigest = (tag: string) =>
    skopeo('inspect', '--tls-verify=false', '--format', '{{.Digest}}', `docker://${host()}/app:${tag}`).trim();

  beforeAll(async () => {
    if (!hasRegistryTools())
      throw new Error(`${REGISTRY_TOOLS_MISSING} (missing: ${missingRegistryTools().join(', ')})`);
    work = tempDir('nyl-kinds-oci-');
    policy = join(work, 'policy.json');
    writeFileSync(policy, JSON.stringify({ default: [{ type: 'insecureAcceptAnything' }] }));
    // nyl's skopeo finds its policy under $HOME/.config/containers: no dependence on /etc/containers.
    home = join(work, 'home');
    mkdirSync(join(home, '.config', 'containers'), { recursive: true });
    writeFileSync(join(home, '.config', 'containers', 'policy.json'), readFileSync(policy));
    v1 = makeOciLayout(join(work, 'v1'), { tag: 'v1', content: 'hello from v1\n' });
    v2 = makeOciLayout(join(work, 'v2'), { tag: 'v2', content: 'hello from v2\n' });
    registry = await startRegistry();
    for (const [layout, tag] of [
      [v1, 'v1'],
      [v2, 'v2'],
    ] as const)
      skopeo(
        'copy',
        '--preserve-digests',
        '--dest-tls-verify=false',
        `oci:${layout.dir}:${tag}`,
        `docker://${host()}/app:${tag}`,
      );
  });

  afterAll(async () => {
    await registry?.stop();
  });

  it('promotes by digest: receipt digest and outputs, current, verify in sync, drift when retagged behind its back, repaired', async () => {
    expect(tagDigest('v1')).toBe(v1.digest);
    expect(tagDigest('v2')).toBe(v2.digest);
    const image = `${host()}/app:prod`;
    const config =
      ENV_DEV +
      [
        '---',
        'kind: OciImage',
        'name: promote',
        'spec:',
        `  source: ${host()}/app@${v1.digest}`,
        `  image: ${image}`,
        '  tls:',
        '    verify: false',
        '',
      ].join('\n');
    const repo = setup({ 'nyl.yaml': config }, { HOME: home, REGISTRY_AUTH_FILE: join(work, 'nyl-auth.json') });
    const { bare } = repo;

    const r = await nyl(repo, ['reconcile', ...ENV]);
    expect(r.code, out(r)).toBe(0);
    expect(results(r.stdout)).toEqual({ promote: 'executed' });
    expect(parseTable(r.stdout)[0]?.KIND).toBe('OciImage');
    const receipt = observedUnit(bare, 'promote').receipt;
    expect(receipt.artifacts).toEqual({ digest: v1.digest });
    expect(receipt.outputs).toEqual({ digest: v1.digest, image: `${host()}/app@${v1.digest}` });
    expect(tagDigest('prod')).toBe(v1.digest);
    const log = git(bare, 'show', `${OBSERVED}:logs/promote.txt`);
    expect(log).toContain(
      `$ skopeo copy --preserve-digests --multi-arch=all --src-tls-verify=false --dest-tls-verify=false docker://${host()}/app@${v1.digest} docker://${image}`,
    );

    const again = await nyl(repo, ['reconcile', ...ENV]);
    expect(again.code, out(again)).toBe(0);
    expect(results(again.stdout)).toEqual({ promote: 'current' });

    const sync = await nyl(repo, ['verify', ...ENV]);
    expect(sync.code, out(sync)).toBe(0);
    expect(results(sync.stdout)).toEqual({ promote: 'in-sync' });
    expect(observedUnit(bare, 'promote').attestations).toEqual({ digest: v1.digest });

    // Someone retags prod to v2 behind Nyl's back.
    skopeo(
      'copy',
      '--preserve-digests',
      '--src-tls-verify=false',
      '--dest-tls-verify=false',
      `docker://${host()}/app:v2`,
      `docker://${image}`,
    );
    expect(tagDigest('prod')).toBe(v2.digest);
    const drift = await nyl(repo, ['verify', ...ENV]);
    expect(drift.code, out(drift)).toBe(3);
    expect(results(drift.stdout)).toEqual({ promote: 'drifted' });
    const detail = `${image} points at ${v2.digest}; the receipt recorded ${v1.digest}`;
    expect(observedUnit(bare, 'promote').drift).toMatchObject({ state: 'drifted', detail });
    expect(drift.stdout).toContain(detail);
    expect(drift.stdout).toContain('warning NYL-VERIFY-DRIFT (promote)');

    // Converge: the next reconcile copies v1 again.
    const fix = await nyl(repo, ['reconcile', ...ENV]);
    expect(fix.code, out(fix)).toBe(0);
    expect(results(fix.stdout)).toEqual({ promote: 'executed' });
    expect(lastMessage(bare)).toMatch(/\ndriftRepaired: \[promote\]\n/);
    expect(tagDigest('prod')).toBe(v1.digest);
    expect(observedUnit(bare, 'promote').receipt.artifacts).toEqual({ digest: v1.digest });
    const after = await nyl(repo, ['verify', ...ENV]);
    expect(after.code, out(after)).toBe(0);
    expect(results(after.stdout)).toEqual({ promote: 'in-sync' });
  });
});

// =============================================================================================

describe('bad specs of these kinds', () => {
  it('are answered with file, line and field (exit 1, no stack trace)', async () => {
    const yaml = [
      'kind: Environment', // 1
      'name: dev', // 2
      '---', // 3
      'kind: OciImage', // 4
      'name: img', // 5
      'spec:', // 6
      '  image: registry.example:5000/app', // 7: no tag
      '  source: registry.example:5000/app:v1', // 8
      '  platforms: [amd64]', // 9: not os/arch
      '---', // 10
      'kind: OpenTofu', // 11
      'name: abs', // 12
      'spec:', // 13
      '  module: /abs', // 14
      '---', // 15
      'kind: OpenTofu', // 16
      'name: up', // 17
      'spec:', // 18
      '  module: ../x', // 19
      '---', // 20
      'kind: Terraform', // 21
      'name: typo', // 22
      'spec:', // 23
      '  modul: infra', // 24
      '',
    ].join('\n');
    const dir = makeRepo({ 'nyl.yaml': yaml });
    const r = await new Promise<CliResult>((res, rej) => {
      const child = spawn('node', [CLI, 'plan', '-e', 'dev', '--local'], {
        cwd: dir,
        env: nylEnv({}),
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let stdout = '';
      let stderr = '';
      child.stdout?.on('data', (d) => {
        stdout += d;
      });
      child.stderr?.on('data', (d) => {
        stderr += d;
      });
      child.on('error', rej);
      child.on('close', (code) => res({ code: code ?? -1, stdout, stderr }));
    });
    expect(r.code, out(r)).toBe(1);
    expect(r.stdout).toBe('');
    for (const text of [r.stdout, r.stderr]) {
      expect(text).not.toMatch(/^\s*at .*:\d+:\d+\)?$/m);
      expect(text).not.toMatch(/\b\w*Error:/);
      expect(text).not.toContain('NYL-INTERNAL');
    }
    const block = (code: string, subject: string, message: string, fix: string) =>
      `error ${code} (${subject})\n  ${message}\n  fix: ${fix}\n`;
    expect(r.stderr).toContain(
      block(
        'NYL-CONFIG-INVALID',
        'nyl.yaml:7 spec.image',
        'OciImage img: spec.image: must be a target registry/repository:tag',
        'correct spec.image in nyl.yaml at line 7',
      ),
    );
    expect(r.stderr).toContain(
      block(
        'NYL-CONFIG-INVALID',
        'nyl.yaml:9 spec.platforms.0',
        'OciImage img: spec.platforms.0: must be os/arch[/variant]',
        'correct spec.platforms.0 in nyl.yaml at line 9',
      ),
    );
    for (const [line, name] of [
      [14, 'abs'],
      [19, 'up'],
    ] as const)
      expect(r.stderr).toContain(
        block(
          'NYL-CONFIG-INVALID',
          `nyl.yaml:${line} spec.module`,
          `OpenTofu ${name}: spec.module: must be a path inside the repository (relative, without ..)`,
          `correct spec.module in nyl.yaml at line ${line}`,
        ),
      );
    expect(r.stderr).toContain(
      block(
        'NYL-CONFIG-FIELD',
        'nyl.yaml:24 spec.modul',
        'Terraform typo: unknown field "modul"',
        'remove spec.modul or correct its spelling; allowed here: module, variables, varFiles, workspace, initArgs, applyArgs, binary',
      ),
    );
    const subjects = [...r.stderr.matchAll(/^error (NYL-[A-Z-]+) \((.*)\)$/gm)].map((m) => `${m[1]} ${m[2]}`);
    expect(subjects.sort()).toEqual(
      [
        'NYL-CONFIG-INVALID nyl.yaml:7 spec.image',
        'NYL-CONFIG-INVALID nyl.yaml:9 spec.platforms.0',
        'NYL-CONFIG-INVALID nyl.yaml:14 spec.module',
        'NYL-CONFIG-INVALID nyl.yaml:19 spec.module',
        'NYL-CONFIG-FIELD nyl.yaml:24 spec.modul',
        // The same document lacks the required module.
        'NYL-CONFIG-INVALID nyl.yaml:24 spec.module',
      ].sort(),
    );
  });
});
