import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { accessSync, constants, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, join, resolve } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';

/** The fake `tofu`/`terraform` CLIs the OpenTofu and Terraform unit tests run (see its README). */
const FAKE = resolve(__dirname, 'fixtures/fake-tofu');
const TOFU = join(FAKE, 'tofu');
const TERRAFORM = join(FAKE, 'terraform');

const dirs: string[] = [];
afterAll(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

/** A module directory with `fake.json` and other files. */
function moduleDir(fake: unknown, files: Record<string, string> = {}): string {
  const dir = mkdtempSync(join(tmpdir(), 'nyl-fake-tofu-'));
  dirs.push(dir);
  writeFileSync(join(dir, 'fake.json'), JSON.stringify(fake));
  for (const [name, text] of Object.entries(files)) writeFileSync(join(dir, name), text);
  return dir;
}

/** Only what the test gives: no TF_* from the machine running the tests. */
const baseEnv = (env: Record<string, string> = {}) => ({ PATH: process.env.PATH ?? '', HOME: tmpdir(), ...env });

interface Result {
  code: number | null;
  stdout: string;
  stderr: string;
}

function run(bin: string, args: string[], cwd: string, env: Record<string, string> = {}): Result {
  const r = spawnSync(bin, args, { cwd, env: baseEnv(env), encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

const strip = (s: string) => s.replace(/\x1b\[[0-9;]*m/g, '');

interface Started {
  child: ChildProcess;
  out: () => string;
  err: () => string;
  exit: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

function start(bin: string, args: string[], cwd: string, env: Record<string, string> = {}): Started {
  const child = spawn(bin, args, { cwd, env: baseEnv(env), stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  child.stdout?.on('data', (d) => {
    out += d;
  });
  child.stderr?.on('data', (d) => {
    err += d;
  });
  const exit = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((res) =>
    child.on('close', (code, signal) => res({ code, signal })),
  );
  return { child, out: () => out, err: () => err, exit };
}

async function waitFor(what: string, cond: () => boolean, timeoutMs = 10_000): Promise<void> {
  const until = Date.now() + timeoutMs;
  while (!cond()) {
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

const MODULE = {
  variables: { name: null, region: 'eu', token: { sensitive: true } },
  outputs: {
    url: 'https://${var.name}.${var.region}.example',
    token: { value: '${var.token}', sensitive: true },
  },
};

/** An initialized module; `token` comes from TF_VAR_token, `name` from a var file. */
function initialized(fake: unknown = MODULE, bin = TOFU): string {
  const dir = moduleDir(fake, { 'app.tfvars': 'name = "app" # the app\n' });
  const r = run(bin, ['init', '-input=false'], dir);
  expect(r.code).toBe(0);
  return dir;
}

const APPLY = ['apply', '-auto-approve', '-input=false', '-var-file=app.tfvars'];
const PLAN = ['plan', '-detailed-exitcode', '-input=false', '-var-file=app.tfvars'];
const TOKEN = { TF_VAR_token: 't0ken' };

const lockInfo = (dir: string) =>
  JSON.parse(readFileSync(join(dir, '.terraform.tfstate.lock.info'), 'utf8')) as Record<string, string>;

/**
 * The real tools' lock error, colours stripped: `message` is what follows "Error message: " (the
 * local backend's by default), `info` the Lock Info it prints.
 */
function lockBlock(
  info: Record<string, string>,
  product: string,
  message = ['resource temporarily unavailable'],
  operation = 'OperationTypeApply',
): string {
  const m = /^(\d{4}-\d\d-\d\d)T(\d\d:\d\d:\d\d(?:\.\d+)?)Z$/.exec(info.Created ?? '');
  return [
    '╷',
    '│ Error: Error acquiring the state lock',
    '│ ',
    `│ Error message: ${message[0]}`,
    ...message.slice(1).map((l) => `│ ${l}`),
    '│ Lock Info:',
    `│   ID:        ${info.ID}`,
    `│   Path:      ${info.Path}`,
    `│   Operation: ${operation}`,
    `│   Who:       ${info.Who}`,
    `│   Version:   ${info.Version}`,
    `│   Created:   ${m?.[1]} ${m?.[2]} +0000 UTC`,
    '│   Info:      ',
    '│ ',
    '│ ',
    `│ ${product} acquires a state lock to protect the state from being written`,
    '│ by multiple users at the same time. Please resolve the issue above and try',
    '│ again. For most commands, you can disable locking with the "-lock=false"',
    '│ flag, but this is not recommended.',
    '╵',
    '',
  ].join('\n');
}

/** The same diagnostic as `-no-color` prints it: a plain `Error: …` block without the box. */
const unboxed = (block: string) =>
  `\n${block
    .split('\n')
    .filter((l) => l !== '╷' && l !== '╵')
    .map((l) => l.replace(/^│ ?/, ''))
    .join('\n')}`;

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/**
 * The Lock Info of the attempt that failed, as the http backend prints it (its own new lock), with
 * `Created` back in the lock file's RFC 3339 form.
 */
function attemptInfo(stderr: string): Record<string, string> {
  const text = strip(stderr);
  const id = /^│?\s*ID:\s+(\S+)$/m.exec(text)?.[1] ?? '';
  const created = /^│?\s*Created:\s+(\S+) (\S+) \+0000 UTC$/m.exec(text);
  return { ID: id, Created: created ? `${created[1]}T${created[2]}Z` : '' };
}

describe('fake tofu/terraform: version and init', () => {
  it('reports its version by the name it is invoked as', () => {
    const dir = moduleDir(MODULE);
    expect(run(TOFU, ['version'], dir).stdout).toBe('OpenTofu v1.8.0\non linux_amd64\n');
    expect(run(TOFU, ['-version'], dir).stdout).toBe('OpenTofu v1.8.0\non linux_amd64\n');
    expect(run(TERRAFORM, ['-version'], dir).stdout).toBe('Terraform v1.9.8\non linux_amd64\n');
    expect(run(TOFU, ['version'], dir, { FAKE_TOFU_VERSION: '1.6.2' }).stdout).toMatch(/^OpenTofu v1\.6\.2\n/);
    expect(JSON.parse(run(TERRAFORM, ['version', '-json'], dir).stdout)).toMatchObject({
      terraform_version: '1.9.8',
      platform: 'linux_amd64',
    });
  });

  it('init creates .terraform and the lock file; other commands need it', () => {
    const dir = moduleDir(MODULE, { 'app.tfvars': 'name = "app"\n' });
    const before = run(TOFU, PLAN, dir, TOKEN);
    expect(before.code).toBe(1);
    expect(strip(before.stderr)).toContain('Error: Inconsistent dependency lock file');
    expect(strip(before.stderr)).toContain('  tofu init');

    const r = run(TOFU, ['init', '-input=false', '-upgrade'], dir);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('\x1b['); // the real tools colour output even into a pipe
    const text = strip(r.stdout);
    expect(text).toContain('Initializing the backend...');
    expect(text).toContain('- Installed hashicorp/null v3.2.3');
    expect(text).toContain('OpenTofu has been successfully initialized!');
    expect(text).toContain('You may now begin working with OpenTofu.');
    expect(existsSync(join(dir, '.terraform'))).toBe(true);
    expect(readFileSync(join(dir, '.terraform.lock.hcl'), 'utf8')).toContain(
      'provider "registry.opentofu.org/hashicorp/null"',
    );

    const again = run(TOFU, ['init', '-input=false', '-no-color'], dir, { TF_IN_AUTOMATION: '1' });
    expect(again.stdout).not.toContain('\x1b[');
    expect(again.stdout).toContain('- Reusing previous version of hashicorp/null from the dependency lock file');
    expect(again.stdout).toContain('OpenTofu has been successfully initialized!');
    expect(again.stdout).not.toContain('You may now begin working');

    const tf = run(TERRAFORM, ['init', '-input=false', '-no-color'], moduleDir(MODULE));
    expect(tf.code).toBe(0);
    expect(tf.stdout).toContain('Terraform has been successfully initialized!');
    expect(tf.stdout).toContain('(signed by HashiCorp)');
  });

  it('rejects unknown flags like the tools', () => {
    const dir = initialized();
    const r = run(TOFU, ['apply', '-bogus', '-no-color'], dir);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain(
      '\nError: Failed to parse command-line flags\n\nflag provided but not defined: -bogus\n',
    );
  });
});

describe('fake tofu/terraform: apply, outputs, plan', () => {
  it('apply takes variables from var files and TF_VAR_, and counts added/changed', () => {
    const dir = initialized();
    writeFileSync(join(dir, 'region.tfvars.json'), JSON.stringify({ region: 'us' }));
    const first = run(TOFU, [...APPLY, '-var-file=region.tfvars.json', '-no-color'], dir, TOKEN);
    expect(first.stderr).toBe('');
    expect(first.code).toBe(0);
    expect(first.stdout).toContain('  # null_resource.main will be created\n');
    expect(first.stdout).toContain('          + "token"  = (sensitive value)\n');
    expect(first.stdout).toContain('null_resource.main: Creating...\n');
    expect(first.stdout).toMatch(/null_resource\.main: Creation complete after 0s \[id=\d+\]\n/);
    expect(first.stdout).toContain('\nApply complete! Resources: 1 added, 0 changed, 0 destroyed.\n');
    expect(first.stdout).toContain('\nOutputs:\n\ntoken = <sensitive>\nurl = "https://app.us.example"\n');
    expect(first.stdout).not.toContain('t0ken');

    const state = JSON.parse(readFileSync(join(dir, 'terraform.tfstate'), 'utf8'));
    expect(state).toMatchObject({
      version: 4,
      serial: 1,
      outputs: {
        url: { value: 'https://app.us.example', type: 'string' },
        token: { value: 't0ken', type: 'string', sensitive: true },
      },
    });
    expect(state.resources[0].instances[0].attributes.triggers).toEqual({ name: 'app', region: 'us', token: 't0ken' });
    expect(existsSync(join(dir, '.terraform.tfstate.lock.info'))).toBe(false);

    const same = run(TOFU, [...APPLY, '-var-file=region.tfvars.json', '-no-color'], dir, TOKEN);
    expect(same.stdout).toContain('No changes. Your infrastructure matches the configuration.');
    expect(same.stdout).toContain('Apply complete! Resources: 0 added, 0 changed, 0 destroyed.');
    expect(JSON.parse(readFileSync(join(dir, 'terraform.tfstate'), 'utf8')).serial).toBe(1);

    // TF_VAR_ beats a default, a var file beats TF_VAR_ (name stays "app").
    const changed = run(TOFU, [...APPLY, '-no-color'], dir, { ...TOKEN, TF_VAR_region: 'ap', TF_VAR_name: 'env' });
    expect(changed.stdout).toContain(
      '          ~ "region" = "us" -> "ap"\n            # (2 unchanged elements hidden)\n',
    );
    expect(changed.stdout).toContain('null_resource.main: Modifying... [id=');
    expect(changed.stdout).toContain('Apply complete! Resources: 0 added, 1 changed, 0 destroyed.');
    expect(changed.stdout).toContain('url = "https://app.ap.example"');
    expect(existsSync(join(dir, 'terraform.tfstate.backup'))).toBe(true);
  });

  it('a missing required variable fails without prompting under -input=false', () => {
    const dir = initialized();
    const r = run(TOFU, ['apply', '-auto-approve', '-input=false', '-no-color'], dir, TOKEN);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain(
      '\nError: No value for required variable\n\nThe root module input variable "name" is not set',
    );
    expect(existsSync(join(dir, 'terraform.tfstate'))).toBe(false);
  });

  it('output -json includes sensitive values with their flag', () => {
    const dir = initialized();
    expect(run(TOFU, ['output', '-json'], dir).stdout).toBe('{}\n');
    run(TOFU, APPLY, dir, TOKEN);
    const r = run(TOFU, ['output', '-json'], dir);
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout)).toEqual({
      token: { sensitive: true, type: 'string', value: 't0ken' },
      url: { sensitive: false, type: 'string', value: 'https://app.eu.example' },
    });
    expect(r.stdout).toBe(
      '{\n  "token": {\n    "sensitive": true,\n    "type": "string",\n    "value": "t0ken"\n  },\n  "url": {\n    "sensitive": false,\n    "type": "string",\n    "value": "https://app.eu.example"\n  }\n}\n',
    );
    expect(run(TOFU, ['output'], dir).stdout).toBe('token = <sensitive>\nurl = "https://app.eu.example"\n');
    expect(run(TOFU, ['output', '-raw', 'url'], dir).stdout).toBe('https://app.eu.example');
  });

  it('plan -detailed-exitcode: 0 in sync, 2 on changed variables or drift.json', () => {
    const dir = initialized();
    const fresh = run(TOFU, [...PLAN, '-no-color'], dir, TOKEN);
    expect(fresh.code).toBe(2);
    expect(fresh.stdout).toContain('Plan: 1 to add, 0 to change, 0 to destroy.');
    run(TOFU, APPLY, dir, TOKEN);

    const inSync = run(TOFU, [...PLAN, '-no-color'], dir, TOKEN);
    expect(inSync.code).toBe(0);
    expect(inSync.stdout).toMatch(/^null_resource\.main: Refreshing state\.\.\. \[id=\d+\]\n/);
    expect(inSync.stdout).toContain('\nNo changes. Your infrastructure matches the configuration.\n');

    const vars = run(TOFU, [...PLAN, '-no-color'], dir, { ...TOKEN, TF_VAR_region: 'us' });
    expect(vars.code).toBe(2);
    expect(vars.stdout).toContain('  # null_resource.main will be updated in-place\n');
    expect(vars.stdout).toContain('\nPlan: 0 to add, 1 to change, 0 to destroy.\n');
    expect(vars.stdout).toContain('  ~ url   = "https://app.eu.example" -> "https://app.us.example"\n');

    writeFileSync(join(dir, 'drift.json'), JSON.stringify({ resource: 'null_resource.main', change: 'update' }));
    const drift = run(TOFU, [...PLAN, '-no-color'], dir, TOKEN);
    expect(drift.code).toBe(2);
    expect(drift.stdout).toContain('Note: Objects have changed outside of OpenTofu');
    expect(drift.stdout).toContain('  # null_resource.main has been changed\n');
    expect(drift.stdout).toContain('          ~ "name"   = "app-drifted" -> "app"\n');
    expect(drift.stdout).toContain('\nPlan: 0 to add, 1 to change, 0 to destroy.\n');
    // Coloured output: lines start with escapes, as the real tools print them.
    expect(run(TOFU, PLAN, dir, TOKEN).stdout).toContain('\x1b[1mPlan:\x1b[0m');
    expect(run(TOFU, [...PLAN, '-refresh=false'], dir, TOKEN).code).toBe(0);

    const fix = run(TOFU, [...APPLY, '-no-color'], dir, TOKEN);
    expect(fix.stdout).toContain('Apply complete! Resources: 0 added, 1 changed, 0 destroyed.');
    expect(existsSync(join(dir, 'drift.json'))).toBe(false);
    expect(run(TOFU, PLAN, dir, TOKEN).code).toBe(0);

    writeFileSync(join(dir, 'drift.json'), JSON.stringify([{ resource: 'null_resource.main', change: 'delete' }]));
    const gone = run(TOFU, [...PLAN, '-no-color'], dir, TOKEN);
    expect(gone.code).toBe(2);
    expect(gone.stdout).toContain('  # null_resource.main has been deleted\n');
    expect(gone.stdout).toContain('Plan: 1 to add, 0 to change, 0 to destroy.');
  });

  it('a failing apply exits 1, keeps the old outputs and releases the lock', () => {
    const dir = initialized({ ...MODULE, fail: 'creating the thing: quota exceeded' });
    const r = run(TOFU, [...APPLY, '-no-color'], dir, TOKEN);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain('\nError: creating the thing: quota exceeded\n');
    expect(existsSync(join(dir, '.terraform.tfstate.lock.info'))).toBe(false);
    expect(run(TOFU, ['output', '-json'], dir).stdout).toBe('{}\n');
  });

  it('destroy empties the state', () => {
    const dir = initialized();
    run(TOFU, APPLY, dir, TOKEN);
    const r = run(TOFU, ['destroy', '-auto-approve', '-input=false', '-var-file=app.tfvars', '-no-color'], dir, TOKEN);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('  # null_resource.main will be destroyed\n');
    expect(r.stdout).toContain('null_resource.main: Destruction complete after 0s\n');
    expect(r.stdout).toContain('\nDestroy complete! Resources: 1 destroyed.\n');
    expect(run(TOFU, ['output', '-json'], dir).stdout).toBe('{}\n');
    const again = run(TOFU, ['destroy', '-auto-approve', '-input=false', '-var-file=app.tfvars'], dir, TOKEN);
    expect(strip(again.stdout)).toContain('No changes. No objects need to be destroyed.');
    expect(strip(again.stdout)).toContain('Destroy complete! Resources: 0 destroyed.');
  });
});

describe('fake tofu/terraform: variables never as arguments', () => {
  it('refuses -var in every spelling, also through TF_CLI_ARGS', () => {
    const dir = initialized();
    for (const [args, env] of [
      [['apply', '-auto-approve', '-input=false', '-var', 'name=x'], {}],
      [['apply', '-auto-approve', '-input=false', '-var=name=x'], {}],
      [['plan', '--var', 'name=x'], {}],
      [['apply', '-auto-approve'], { TF_CLI_ARGS_apply: '-var name=x' }],
      [['destroy', '-auto-approve'], { TF_CLI_ARGS: '-var=name=x' }],
    ] as const) {
      const r = run(TOFU, [...args], dir, { ...TOKEN, ...env });
      expect(r.code).toBe(1);
      expect(r.stderr).toBe('fake: -var is not used by nyl\n');
      expect(r.stdout).toBe('');
    }
    expect(existsSync(join(dir, 'terraform.tfstate'))).toBe(false);
  });

  it('logs every invocation with argv and the names (only) of TF_VAR_ variables', () => {
    const dir = initialized();
    const log = join(dir, 'calls.jsonl');
    run(TOFU, APPLY, dir, { ...TOKEN, FAKE_TOFU_LOG: log });
    run(TOFU, ['output', '-json'], dir, { FAKE_TOFU_LOG: log });
    run(TOFU, ['show', '-json', '-no-color'], dir, { FAKE_TOFU_LOG: log });
    const lines = readFileSync(log, 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    expect(lines.map((l) => [l.event, l.argv?.[0] ?? l.code])).toEqual([
      ['start', 'apply'],
      ['exit', 0],
      ['start', 'output'],
      ['exit', 0],
      ['start', 'show'],
      ['exit', 0],
    ]);
    expect(lines[0]).toMatchObject({ tool: 'tofu', argv: APPLY, tfVars: ['TF_VAR_token'], workspace: 'default' });
    expect(readFileSync(log, 'utf8')).not.toContain('t0ken');
  });
});

describe('fake tofu/terraform: workspaces', () => {
  it('keeps one state per workspace', () => {
    const dir = initialized();
    run(TOFU, APPLY, dir, TOKEN);

    const created = run(TOFU, ['workspace', 'select', '-or-create', 'staging'], dir);
    expect(created.code).toBe(0);
    expect(strip(created.stdout)).toContain('Created and switched to workspace "staging"!');
    expect(run(TOFU, ['workspace', 'show'], dir).stdout).toBe('staging\n');
    expect(run(TOFU, ['output', '-json'], dir).stdout).toBe('{}\n');
    const r = run(TOFU, [...APPLY, '-no-color'], dir, { ...TOKEN, TF_VAR_region: 'stg' });
    expect(r.stdout).toContain('Apply complete! Resources: 1 added, 0 changed, 0 destroyed.');
    expect(
      JSON.parse(readFileSync(join(dir, 'terraform.tfstate.d/staging/terraform.tfstate'), 'utf8')).outputs.url.value,
    ).toBe('https://app.stg.example');
    expect(run(TOFU, ['workspace', 'list'], dir).stdout).toBe('  default\n* staging\n\n');

    expect(run(TOFU, ['workspace', 'select', '-or-create', 'staging'], dir)).toMatchObject({ code: 0, stdout: '' });
    const switched = run(TOFU, ['workspace', 'select', 'default', '-no-color'], dir);
    expect(switched.stdout).toBe('Switched to workspace "default".\n');
    expect(JSON.parse(run(TOFU, ['output', '-json'], dir).stdout).url.value).toBe('https://app.eu.example');
    expect(run(TOFU, [...PLAN], dir, TOKEN).code).toBe(0);

    const missing = run(TOFU, ['workspace', 'select', '-no-color', 'prod'], dir);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toContain('Workspace "prod" doesn\'t exist.');
    const exists = run(TOFU, ['workspace', 'new', '-no-color', 'staging'], dir);
    expect(exists).toMatchObject({ code: 1, stderr: 'Workspace "staging" already exists\n' });
    const made = run(TOFU, ['workspace', 'new', '-no-color', 'prod'], dir);
    expect(made.stdout).toContain('Created and switched to workspace "prod"!');
    expect(existsSync(join(dir, 'terraform.tfstate.d/prod'))).toBe(true);
  });

  it('-or-create needs terraform >= 1.4', () => {
    const dir = initialized(MODULE, TERRAFORM);
    const old = run(TERRAFORM, ['workspace', 'select', '-or-create', 'qa'], dir, { FAKE_TOFU_VERSION: '1.3.9' });
    expect(old.code).toBe(1);
    expect(strip(old.stderr)).toContain('flag provided but not defined: -or-create');
    expect(run(TERRAFORM, ['workspace', 'select', '-or-create', 'qa'], dir).code).toBe(0);
  });
});

describe('fake tofu/terraform: state locks and interrupts', () => {
  for (const [bin, product] of [
    [TOFU, 'OpenTofu'],
    [TERRAFORM, 'Terraform'],
  ] as const) {
    it(`${product}: a local lock dies with its holder; while it lives it blocks and force-unlock cannot break it`, async () => {
      const dir = initialized({ ...MODULE, sleep: 30 }, bin);
      const slow = start(bin, APPLY, dir, TOKEN);
      await waitFor('the apply to create', () => strip(slow.out()).includes('null_resource.main: Creating...'));
      const info = lockInfo(dir);
      expect(info).toMatchObject({ Operation: 'OperationTypeApply', Info: '', Path: 'terraform.tfstate' });
      expect(info.ID).toMatch(UUID);
      expect(info.Who).toMatch(/^.+@.+$/);
      expect(info.pid).toBe(slow.child.pid);

      const blocked = run(bin, APPLY, dir, TOKEN);
      expect(blocked.code).toBe(1);
      expect(strip(blocked.stderr)).toBe(lockBlock(info, product));
      expect(blocked.stdout).toBe('');
      const plain = run(bin, [...PLAN, '-no-color'], dir, TOKEN);
      expect(plain.code).toBe(1);
      expect(plain.stderr).toBe(unboxed(lockBlock(info, product)));
      expect(plain.stderr).toContain(
        `\nError: Error acquiring the state lock\n\nError message: resource temporarily unavailable\nLock Info:\n  ID:        ${info.ID}\n`,
      );
      expect(run(bin, ['output', '-json'], dir).code).toBe(0); // output takes no lock

      // The ID force-unlock compares is the one its own process holds: never one from a new process.
      for (const id of ['not-the-id', info.ID as string]) {
        expect(run(bin, ['force-unlock', '-force', id, '-no-color'], dir)).toMatchObject({
          code: 1,
          stderr: 'Failed to unlock state: LocalState not locked\n',
        });
      }
      expect(lockInfo(dir)).toEqual(info);
      expect(slow.child.exitCode).toBeNull();

      slow.child.kill('SIGKILL');
      expect(await slow.exit).toMatchObject({ signal: 'SIGKILL' });
      expect(existsSync(join(dir, '.terraform.tfstate.lock.info'))).toBe(true); // left behind, but no lock

      writeFileSync(join(dir, 'fake.json'), JSON.stringify(MODULE));
      const after = run(bin, [...APPLY, '-no-color'], dir, TOKEN);
      expect(after.stderr).toBe('');
      expect(after.code).toBe(0);
      expect(after.stdout).toContain('Apply complete! Resources: 1 added, 0 changed, 0 destroyed.');
      expect(existsSync(join(dir, '.terraform.tfstate.lock.info'))).toBe(false);
    });

    it(`${product}: an http lock left by SIGKILL blocks the next apply until force-unlock`, async () => {
      const http = { ...MODULE, backend: 'http' };
      const dir = initialized({ ...http, sleep: 30 }, bin);
      const slow = start(bin, APPLY, dir, TOKEN);
      await waitFor('the apply to create', () => strip(slow.out()).includes('null_resource.main: Creating...'));
      const info = lockInfo(dir);
      expect(info).toMatchObject({ Operation: 'OperationTypeApply', Info: '', Path: '' });
      expect(info.ID).toMatch(UUID);
      expect(info.Who).toMatch(/^.+@.+$/);
      slow.child.kill('SIGKILL');
      expect(await slow.exit).toMatchObject({ signal: 'SIGKILL' });
      expect(existsSync(join(dir, '.terraform.tfstate.lock.info'))).toBe(true);

      // The holder is named only by ID=; the Lock Info is the failed attempt's own new lock.
      const message = ['HTTP remote state already locked:', `ID=${info.ID}`];
      const blocked = run(bin, APPLY, dir, TOKEN);
      expect(blocked.code).toBe(1);
      expect(blocked.stdout).toBe('');
      const attempt = attemptInfo(blocked.stderr);
      expect(attempt.ID).toMatch(UUID);
      expect(attempt.ID).not.toBe(info.ID);
      expect(strip(blocked.stderr)).toBe(lockBlock({ ...info, ...attempt, Path: '' }, product, message));
      const plain = run(bin, [...PLAN, '-no-color'], dir, TOKEN);
      expect(plain.code).toBe(1);
      const planAttempt = attemptInfo(plain.stderr);
      expect(planAttempt.ID).not.toBe(info.ID);
      expect(plain.stderr).toBe(
        unboxed(lockBlock({ ...info, ...planAttempt, Path: '' }, product, message, 'OperationTypePlan')),
      );
      expect(plain.stderr).toContain(
        `\nError: Error acquiring the state lock\n\nError message: HTTP remote state already locked:\nID=${info.ID}\nLock Info:\n  ID:        ${planAttempt.ID}\n  Path:      \n`,
      );
      expect(lockInfo(dir)).toEqual(info); // the failed attempts leave the holder's lock alone
      expect(run(bin, ['output', '-json'], dir).code).toBe(0); // output takes no lock

      // The http client's UNLOCK carries no ID: any ID unlocks.
      const unlocked = run(bin, ['force-unlock', '-force', 'not-the-id'], dir);
      expect(unlocked.code).toBe(0);
      expect(strip(unlocked.stdout)).toContain(`${product} state has been successfully unlocked!`);
      expect(existsSync(join(dir, '.terraform.tfstate.lock.info'))).toBe(false);

      writeFileSync(join(dir, 'fake.json'), JSON.stringify(http));
      const after = run(bin, [...APPLY, '-no-color'], dir, TOKEN);
      expect(after.code).toBe(0);
      expect(after.stdout).toContain('Apply complete! Resources: 1 added, 0 changed, 0 destroyed.');
      expect(existsSync(join(dir, '.terraform.tfstate.lock.info'))).toBe(false);
    });
  }

  it('-lock-timeout waits for the lock', async () => {
    const dir = initialized();
    const info = { ID: 'held', Operation: 'OperationTypeApply', Info: '', Who: 'x@y', Version: '1.8.0' };
    writeFileSync(join(dir, '.terraform.tfstate.lock.info'), JSON.stringify(info));
    const r = start(TOFU, [...PLAN, '-lock-timeout=10s', '-no-color'], dir, TOKEN);
    // Released once the tool waits for it (not after a fixed time: a slow start would miss it).
    await waitFor('the tool to wait for the lock', () => r.out().includes('Acquiring state lock'));
    rmSync(join(dir, '.terraform.tfstate.lock.info'));
    expect((await r.exit).code).toBe(2);
    expect(r.out()).toContain('Acquiring state lock. This may take a few moments...\n');
  });

  it('SIGINT stops gracefully: partial state, lock released, "execution halted"', async () => {
    const dir = initialized({ ...MODULE, sleep: 30 });
    const slow = start(TOFU, [...APPLY, '-no-color'], dir, TOKEN);
    await waitFor('the apply to create', () => slow.out().includes('null_resource.main: Creating...'));
    const signalled = Date.now();
    slow.child.kill('SIGINT');
    expect(await slow.exit).toEqual({ code: 1, signal: null });
    expect(Date.now() - signalled).toBeLessThan(3000);
    expect(slow.out()).toContain(
      '\nInterrupt received.\nPlease wait for OpenTofu to exit or data loss may occur.\nGracefully shutting down...\n\nStopping operation...\n',
    );
    expect(slow.out()).not.toContain('Apply complete!');
    expect(slow.err()).toBe('\nError: execution halted\n\n');
    expect(existsSync(join(dir, '.terraform.tfstate.lock.info'))).toBe(false);
    const state = JSON.parse(readFileSync(join(dir, 'terraform.tfstate'), 'utf8'));
    expect(state.resources[0].instances[0].status).toBe('tainted');
    expect(state.outputs).toEqual({});

    writeFileSync(join(dir, 'fake.json'), JSON.stringify(MODULE));
    const plan = run(TOFU, [...PLAN, '-no-color'], dir, TOKEN);
    expect(plan.code).toBe(2);
    expect(plan.stdout).toContain('  # null_resource.main is tainted, so must be replaced\n');
    expect(plan.stdout).toContain('Plan: 1 to add, 0 to change, 1 to destroy.');
  });

  it('a second SIGINT exits at once and leaves the lock behind', async () => {
    const dir = initialized({ ...MODULE, sleep: 30 });
    const slow = start(TOFU, APPLY, dir, TOKEN);
    await waitFor('the apply to create', () => strip(slow.out()).includes('Creating...'));
    slow.child.kill('SIGINT');
    await waitFor('the interrupt notice', () => slow.out().includes('Gracefully shutting down...'));
    slow.child.kill('SIGINT');
    expect((await slow.exit).code).toBe(1);
    expect(slow.err()).toContain(
      'Two interrupts received. Exiting immediately. Note that data loss may have occurred.',
    );
    expect(existsSync(join(dir, '.terraform.tfstate.lock.info'))).toBe(true);
  });
});

// biome-ignore lint/suspicious/noExplicitAny: the tools' JSON plan representation
type Json = any;

/**
 * A module with one resource for each action once `name` goes from "a" to "b" and `next` is
 * applied: created (new), updated (in place), replaced (replaceOnChange), deleted (removed from
 * the module), kept (no-op); outputs change, `token` is a sensitive variable.
 */
const SHOW_MODULE = {
  variables: { name: null, token: { sensitive: true } },
  outputs: {
    url: 'https://${var.name}.example',
    token: { value: '${var.token}', sensitive: true },
  },
  resources: {
    'terraform_data.updated': { input: { name: '${var.name}', token: '${var.token}' } },
    'terraform_data.replaced': { triggers_replace: '${var.name}' },
    'terraform_data.deleted': { input: 'x' },
    'terraform_data.kept': { input: 'same' },
  } as Record<string, unknown>,
  replaceOnChange: ['terraform_data.replaced'],
};

function nextModule() {
  const { 'terraform_data.deleted': _, ...kept } = SHOW_MODULE.resources;
  return { ...SHOW_MODULE, resources: { ...kept, 'terraform_data.created': { input: 'new-${var.name}' } } };
}

/** The same module as the real tools read it (terraform_data is built in: works offline). */
function showModuleHcl(next: boolean): string {
  return `variable "name" {
  type = string
}
variable "token" {
  type      = string
  sensitive = true
}
resource "terraform_data" "updated" {
  input = { name = var.name, token = var.token }
}
resource "terraform_data" "replaced" {
  triggers_replace = var.name
}
resource "terraform_data" "kept" {
  input = "same"
}
${next ? 'resource "terraform_data" "created" {\n  input = "new-${var.name}"\n}' : 'resource "terraform_data" "deleted" {\n  input = "x"\n}'}
output "url" {
  value = "https://\${var.name}.example"
}
output "token" {
  value     = var.token
  sensitive = true
}
`;
}

const VAR_FILES = { 'a.tfvars': 'name = "a"\ntoken = "s1"\n', 'b.tfvars': 'name = "b"\ntoken = "s2"\n' };

/** Applied with a.tfvars, then the module changed: ready for `plan -var-file=b.tfvars -out=…`. */
function appliedShowModule(bin = TERRAFORM): string {
  const dir = moduleDir(SHOW_MODULE, VAR_FILES);
  expect(run(bin, ['init', '-input=false'], dir).code).toBe(0);
  expect(run(bin, ['apply', '-auto-approve', '-input=false', '-var-file=a.tfvars'], dir).code).toBe(0);
  writeFileSync(join(dir, 'fake.json'), JSON.stringify(nextModule()));
  return dir;
}

function showJson(bin: string, dir: string, args: string[] = []): Json {
  const r = run(bin, ['show', '-json', '-no-color', ...args], dir);
  expect(r.stderr).toBe('');
  expect(r.code).toBe(0);
  expect(r.stdout.endsWith('}\n')).toBe(true);
  expect(r.stdout.trimEnd()).not.toContain('\n'); // one line, like the tools
  return JSON.parse(r.stdout);
}

const byAddress = (list: Json[]) => Object.fromEntries(list.map((rc) => [rc.address, rc]));
const actionsOf = (plan: Json) =>
  Object.fromEntries((plan.resource_changes ?? []).map((rc: Json) => [rc.address, rc.change.actions]));

const TERRAFORM_PLAN_KEYS = [
  'format_version',
  'terraform_version',
  'variables',
  'planned_values',
  'resource_changes',
  'output_changes',
  'prior_state',
  'configuration',
  'timestamp',
  'applyable',
  'complete',
  'errored',
];

describe('fake tofu/terraform: show -json', () => {
  it('a saved plan: every action, unknown ids, sensitive marking, variables in clear', () => {
    const dir = appliedShowModule();
    const plan = run(TERRAFORM, ['plan', '-input=false', '-var-file=b.tfvars', '-out=p', '-no-color'], dir);
    expect(plan.stdout).toContain('Plan: 2 to add, 1 to change, 2 to destroy.');

    const p = showJson(TERRAFORM, dir, ['p']);
    expect(Object.keys(p)).toEqual(TERRAFORM_PLAN_KEYS);
    expect(p).toMatchObject({ format_version: '1.2', terraform_version: '1.9.8', applyable: true, complete: true });
    expect(p.errored).toBe(false);
    expect(p.timestamp).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
    // The real tools print sensitive variable values in clear here.
    expect(p.variables).toEqual({ name: { value: 'b' }, token: { value: 's2' } });

    expect(actionsOf(p)).toEqual({
      'terraform_data.created': ['create'],
      'terraform_data.deleted': ['delete'],
      'terraform_data.kept': ['no-op'],
      'terraform_data.replaced': ['delete', 'create'],
      'terraform_data.updated': ['update'],
    });
    const rc = byAddress(p.resource_changes);
    expect(Object.keys(rc['terraform_data.created'])).toEqual([
      'address',
      'mode',
      'type',
      'name',
      'provider_name',
      'change',
    ]);
    expect(rc['terraform_data.created']).toMatchObject({
      mode: 'managed',
      type: 'terraform_data',
      name: 'created',
      provider_name: 'terraform.io/builtin/terraform',
    });
    // A new object's id is unknown: absent from after, true in after_unknown.
    expect(rc['terraform_data.created'].change).toEqual({
      actions: ['create'],
      before: null,
      after: { input: 'new-b' },
      after_unknown: { id: true },
      before_sensitive: false,
      after_sensitive: {},
    });
    const deleted = rc['terraform_data.deleted'];
    expect(deleted.action_reason).toBe('delete_because_no_resource_config');
    expect(deleted.change).toMatchObject({
      after: null,
      after_unknown: {},
      before_sensitive: {},
      after_sensitive: false,
    });
    expect(deleted.change.before).toEqual({ id: expect.stringMatching(UUID), input: 'x' });
    const kept = rc['terraform_data.kept'].change;
    expect(kept.after).toEqual(kept.before);
    expect(kept.after_unknown).toEqual({});
    const replaced = rc['terraform_data.replaced'];
    expect(replaced.action_reason).toBe('replace_because_cannot_update');
    expect(replaced.change).toMatchObject({
      before: { triggers_replace: 'a' },
      after: { triggers_replace: 'b' },
      after_unknown: { id: true },
      replace_paths: [['triggers_replace']],
    });
    expect(replaced.change.after).not.toHaveProperty('id');
    // Sensitive elements are marked, their values printed in clear (as show -json does).
    const updated = rc['terraform_data.updated'];
    expect(updated.action_reason).toBeUndefined();
    expect(updated.change).toEqual({
      actions: ['update'],
      before: { id: updated.change.before.id, input: { name: 'a', token: 's1' } },
      after: { id: updated.change.before.id, input: { name: 'b', token: 's2' } },
      after_unknown: {},
      before_sensitive: { input: { token: true } },
      after_sensitive: { input: { token: true } },
    });

    expect(p.output_changes).toEqual({
      token: {
        actions: ['update'],
        before: 's1',
        after: 's2',
        after_unknown: false,
        before_sensitive: true,
        after_sensitive: true,
      },
      url: {
        actions: ['update'],
        before: 'https://a.example',
        after: 'https://b.example',
        after_unknown: false,
        before_sensitive: false,
        after_sensitive: false,
      },
    });
    expect(p.planned_values.outputs).toEqual({
      token: { sensitive: true, type: 'string', value: 's2' },
      url: { sensitive: false, type: 'string', value: 'https://b.example' },
    });
    const planned = byAddress(p.planned_values.root_module.resources);
    expect(Object.keys(planned)).toEqual([
      'terraform_data.created',
      'terraform_data.kept',
      'terraform_data.replaced',
      'terraform_data.updated',
    ]);
    expect(planned['terraform_data.updated']).toMatchObject({
      schema_version: 0,
      values: { input: { name: 'b', token: 's2' } },
      sensitive_values: { input: { token: true } },
    });
    expect(p.prior_state.values.root_module.resources.map((r: Json) => r.address)).toEqual([
      'terraform_data.deleted',
      'terraform_data.kept',
      'terraform_data.replaced',
      'terraform_data.updated',
    ]);
    expect(p.configuration.root_module.variables).toEqual({ name: {}, token: { sensitive: true } });

    // The plan file still applies; shown again afterwards it is the same plan, and stale.
    const applied = run(TERRAFORM, ['apply', '-input=false', '-no-color', 'p'], dir);
    expect(applied.stdout).toContain('Apply complete! Resources: 2 added, 1 changed, 2 destroyed.');
    expect(showJson(TERRAFORM, dir, ['p'])).toEqual(p);
    expect(run(TERRAFORM, ['apply', '-input=false', '-no-color', 'p'], dir).stderr).toContain(
      'Error: Saved plan is stale',
    );
  });

  it('OpenTofu: no applyable/complete; null_resource triggers with a sensitive element', () => {
    const dir = initialized();
    const plan = run(TOFU, [...PLAN, '-out=p', '-no-color'], dir, TOKEN);
    expect(plan.code).toBe(2);
    const p = showJson(TOFU, dir, ['p']);
    expect(Object.keys(p)).toEqual(TERRAFORM_PLAN_KEYS.filter((k) => k !== 'applyable' && k !== 'complete'));
    expect(p.terraform_version).toBe('1.8.0');
    expect(p.variables).toEqual({ name: { value: 'app' }, region: { value: 'eu' }, token: { value: 't0ken' } });
    expect(p.resource_changes).toEqual([
      {
        address: 'null_resource.main',
        mode: 'managed',
        type: 'null_resource',
        name: 'main',
        provider_name: 'registry.opentofu.org/hashicorp/null',
        change: {
          actions: ['create'],
          before: null,
          after: { triggers: { name: 'app', region: 'eu', token: 't0ken' } },
          after_unknown: { id: true, triggers: {} },
          before_sensitive: false,
          after_sensitive: { triggers: { token: true } },
        },
      },
    ]);
    expect(p.output_changes.token).toMatchObject({ actions: ['create'], before: null, after: 't0ken' });
    expect(p.output_changes.token.before_sensitive).toBe(true);
    expect(p.configuration.provider_config).toEqual({
      null: { name: 'null', full_name: 'registry.opentofu.org/hashicorp/null' },
    });

    // No changes: every resource and output is a no-op.
    expect(run(TOFU, [...APPLY, '-no-color'], dir, TOKEN).code).toBe(0);
    expect(run(TOFU, [...PLAN, '-out=same'], dir, TOKEN).code).toBe(0);
    const same = showJson(TOFU, dir, ['same']);
    expect(actionsOf(same)).toEqual({ 'null_resource.main': ['no-op'] });
    expect(Object.values(same.output_changes).map((o: Json) => o.actions)).toEqual([['no-op'], ['no-op']]);
  });

  it('show -json without a file is the current state; a state file reads the same', () => {
    const dir = appliedShowModule();
    expect(showJson(TERRAFORM, moduleDir(SHOW_MODULE))).toEqual({ format_version: '1.0' }); // no state yet
    const s = showJson(TERRAFORM, dir);
    expect(Object.keys(s)).toEqual(['format_version', 'terraform_version', 'values']);
    expect(s.values.outputs).toEqual({
      token: { sensitive: true, value: 's1', type: 'string' },
      url: { sensitive: false, value: 'https://a.example', type: 'string' },
    });
    const resources = byAddress(s.values.root_module.resources);
    expect(Object.keys(resources)).toEqual([
      'terraform_data.deleted',
      'terraform_data.kept',
      'terraform_data.replaced',
      'terraform_data.updated',
    ]);
    expect(resources['terraform_data.updated']).toEqual({
      address: 'terraform_data.updated',
      mode: 'managed',
      type: 'terraform_data',
      name: 'updated',
      provider_name: 'terraform.io/builtin/terraform',
      schema_version: 0,
      values: { id: expect.stringMatching(UUID), input: { name: 'a', token: 's1' } },
      sensitive_values: { input: { token: true } },
    });
    expect(showJson(TERRAFORM, dir, ['terraform.tfstate'])).toEqual(s);
    expect(run(TERRAFORM, ['destroy', '-auto-approve', '-input=false', '-var-file=a.tfvars'], dir).code).toBe(0);
    expect(showJson(TERRAFORM, dir)).toEqual({ format_version: '1.0' });
  });

  it('a plan that refreshed drift shows it as resource_drift, and resource_changes undo it', () => {
    const dir = initialized(MODULE, TERRAFORM);
    expect(run(TERRAFORM, APPLY, dir, TOKEN).code).toBe(0);
    writeFileSync(join(dir, 'drift.json'), JSON.stringify({ resource: 'null_resource.main', change: 'update' }));
    expect(run(TERRAFORM, [...PLAN, '-out=drift'], dir, TOKEN).code).toBe(2);
    const p = showJson(TERRAFORM, dir, ['drift']);
    expect(Object.keys(p)).toContain('resource_drift');
    expect(Object.keys(p).indexOf('resource_drift')).toBe(Object.keys(p).indexOf('resource_changes') - 1);
    expect(p.resource_drift).toHaveLength(1);
    const [drift] = p.resource_drift;
    const id = drift.change.before.id;
    expect(drift).toEqual({
      address: 'null_resource.main',
      mode: 'managed',
      type: 'null_resource',
      name: 'main',
      provider_name: 'registry.terraform.io/hashicorp/null',
      change: {
        actions: ['update'],
        before: { id, triggers: { name: 'app', region: 'eu', token: 't0ken' } },
        after: { id, triggers: { name: 'app-drifted', region: 'eu-drifted', token: 't0ken-drifted' } },
        after_unknown: {},
        before_sensitive: { triggers: { token: true } },
        after_sensitive: { triggers: { token: true } },
      },
    });
    expect(p.resource_changes).toHaveLength(1);
    expect(p.resource_changes[0].change).toMatchObject({
      actions: ['update'],
      before: drift.change.after,
      after: drift.change.before,
    });
    // The prior state is the refreshed one.
    expect(p.prior_state.values.root_module.resources[0].values).toEqual(drift.change.after);

    writeFileSync(join(dir, 'drift.json'), JSON.stringify({ resource: 'null_resource.main', change: 'delete' }));
    expect(run(TERRAFORM, [...PLAN, '-out=gone'], dir, TOKEN).code).toBe(2);
    const gone = showJson(TERRAFORM, dir, ['gone']);
    expect(gone.resource_drift.map((d: Json) => [d.address, d.change.actions, d.change.after])).toEqual([
      ['null_resource.main', ['delete'], null],
    ]);
    expect(actionsOf(gone)).toEqual({ 'null_resource.main': ['create'] });
    expect(gone.prior_state.values.root_module).toEqual({});

    expect(run(TERRAFORM, [...PLAN, '-refresh=false', '-out=norefresh'], dir, TOKEN).code).toBe(0);
    expect(showJson(TERRAFORM, dir, ['norefresh'])).not.toHaveProperty('resource_drift');
  });

  it('a destroy plan deletes every resource and output', () => {
    const dir = appliedShowModule();
    writeFileSync(join(dir, 'fake.json'), JSON.stringify(SHOW_MODULE));
    const plan = run(TERRAFORM, ['plan', '-destroy', '-input=false', '-var-file=a.tfvars', '-out=d', '-no-color'], dir);
    expect(plan.stdout).toContain('Plan: 0 to add, 0 to change, 4 to destroy.');
    const p = showJson(TERRAFORM, dir, ['d']);
    expect(Object.keys(p)).toEqual(TERRAFORM_PLAN_KEYS);
    expect(Object.values(actionsOf(p))).toEqual([['delete'], ['delete'], ['delete'], ['delete']]);
    expect(p.resource_changes.every((rc: Json) => rc.action_reason === undefined && rc.change.after === null)).toBe(
      true,
    );
    expect(Object.values(p.output_changes).map((o: Json) => [o.actions, o.after])).toEqual([
      [['delete'], null],
      [['delete'], null],
    ]);
    expect(p.planned_values).toEqual({ root_module: {} });
    expect(p.applyable).toBe(true);
    expect(run(TERRAFORM, ['apply', '-input=false', '-no-color', 'd'], dir).stdout).toContain(
      'Apply complete! Resources: 0 added, 0 changed, 4 destroyed.',
    );
  });

  it("a file that is no plan is the tools' error, exit 1; human show is not emulated", () => {
    const dir = initialized();
    writeFileSync(join(dir, 'garbage'), 'garbage');
    const r = run(TOFU, ['show', '-json', '-no-color', 'garbage'], dir);
    expect(r).toMatchObject({ code: 1, stdout: '' });
    expect(r.stderr).toBe(
      [
        '',
        'Error: Failed to read the given file as a state or plan file',
        '',
        'State read error: Error reading garbage as a statefile: 2 problems:',
        '',
        '- Unsupported state file format: The state file could not be parsed as JSON:',
        'syntax error at byte offset 1.',
        '- Unsupported state file format: The state file can not be checked for',
        "presense of encryption: invalid character 'g' looking for beginning of value",
        '',
        "Plan read error: couldn't load the provided path as either a local plan file",
        "(zip: not a valid zip file) or a saved cloud plan (invalid character 'g'",
        'looking for beginning of value)',
        '',
      ].join('\n'),
    );
    // Terraform 1.11.4, byte for byte (its second problem differs from OpenTofu's).
    const tf = run(TERRAFORM, ['show', '-json', 'garbage'], dir);
    expect(tf.code).toBe(1);
    expect(strip(tf.stderr)).toBe(
      [
        '╷',
        '│ Error: Failed to read the given file as a state or plan file',
        '│ ',
        '│ State read error: Error reading garbage as a statefile: 2 problems:',
        '│ ',
        '│ - Unsupported state file format: The state file could not be parsed as',
        '│ JSON: syntax error at byte offset 1.',
        '│ - Unsupported state file format: The state file does not have a "version"',
        '│ attribute, which is required to identify the format version.',
        '│ ',
        "│ Plan read error: couldn't load the provided path as either a local plan",
        '│ file (zip: not a valid zip file) or a saved cloud plan (invalid character',
        "│ 'g' looking for beginning of value)",
        '╵',
        '',
      ].join('\n'),
    );
    const missing = run(TERRAFORM, ['show', '-json', '-no-color', 'nope'], dir);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toContain(
      'State read error: Error loading statefile: open nope: no such file or\ndirectory\n',
    );
    writeFileSync(join(dir, 'empty'), '');
    expect(run(TERRAFORM, ['show', '-json', '-no-color', 'empty'], dir).stderr).toContain(
      'State read error: Error reading empty as a statefile: no state\n',
    );
    // A garbage plan file does not apply either.
    expect(run(TERRAFORM, ['apply', '-input=false', '-no-color', 'garbage'], dir)).toMatchObject({ code: 1 });

    const human = run(TOFU, ['show', '-no-color'], dir);
    expect(human).toMatchObject({ code: 1, stdout: '' });
    expect(human.stderr).toMatch(/^fake-tofu: "show" without -json .* is not emulated by this fake\n$/);
    expect(run(TOFU, ['show', 'garbage'], dir).stderr).toContain('is not emulated by this fake');
    const two = run(TOFU, ['show', '-json', '-no-color', 'a', 'b'], dir);
    expect(two.code).toBe(1);
    expect(two.stderr).toContain('Error: Too many command line arguments');
  });
});

/** The real terraform on PATH (not this fake), if there is one. */
function realTerraform(): string | undefined {
  for (const d of (process.env.PATH ?? '').split(delimiter)) {
    if (!d || resolve(d) === FAKE) continue;
    try {
      accessSync(join(d, 'terraform'), constants.X_OK);
      return join(d, 'terraform');
    } catch {
      /* not here */
    }
  }
  return undefined;
}

const REAL_TERRAFORM = realTerraform();
if (!REAL_TERRAFORM) console.warn('fake-tofu.test: no real terraform on PATH: the show -json comparison is skipped');

describe('fake terraform against the real terraform', () => {
  it.skipIf(!REAL_TERRAFORM)(
    'show -json of the same saved plan: the same top-level keys and the same actions',
    () => {
      const real = REAL_TERRAFORM as string;
      const realDir = mkdtempSync(join(tmpdir(), 'nyl-real-terraform-'));
      dirs.push(realDir);
      for (const [name, text] of Object.entries(VAR_FILES)) writeFileSync(join(realDir, name), text);
      writeFileSync(join(realDir, 'main.tf'), showModuleHcl(false));
      // Only TF_IN_AUTOMATION from the TF_ variables; no update check.
      const env = { TF_IN_AUTOMATION: '1', CHECKPOINT_DISABLE: '1' };
      const step = (args: string[]) => {
        const r = run(real, args, realDir, env);
        expect(r.stderr, `terraform ${args.join(' ')}`).toBe('');
        expect(r.code).toBe(0);
        return r;
      };
      step(['init', '-input=false', '-no-color']);
      step(['apply', '-auto-approve', '-input=false', '-no-color', '-var-file=a.tfvars']);
      writeFileSync(join(realDir, 'main.tf'), showModuleHcl(true));
      step(['plan', '-input=false', '-no-color', '-var-file=b.tfvars', '-out=p']);
      const want: Json = JSON.parse(step(['show', '-json', '-no-color', 'p']).stdout);

      const dir = appliedShowModule();
      expect(run(TERRAFORM, ['plan', '-input=false', '-var-file=b.tfvars', '-out=p'], dir).code).toBe(0);
      const got = showJson(TERRAFORM, dir, ['p']);

      expect(Object.keys(got)).toEqual(Object.keys(want));
      expect(actionsOf(got)).toEqual(actionsOf(want));
      const reasons = (p: Json) =>
        Object.fromEntries(p.resource_changes.map((rc: Json) => [rc.address, rc.action_reason ?? null]));
      expect(reasons(got)).toEqual(reasons(want));
      const outputs = (p: Json) =>
        Object.fromEntries(Object.entries(p.output_changes).map(([n, o]: [string, Json]) => [n, o.actions]));
      expect(outputs(got)).toEqual(outputs(want));
      expect(got.variables).toEqual(want.variables);
      const changeKeys = (p: Json) =>
        Object.fromEntries(p.resource_changes.map((rc: Json) => [rc.address, Object.keys(rc.change)]));
      expect(changeKeys(got)).toEqual(changeKeys(want));
    },
    60_000,
  );
});
