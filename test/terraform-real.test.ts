/**
 * Terraform units against the real `terraform` on PATH (skipped when there is none), with only
 * what works offline: the built-in `terraform_data` resource, the `local-exec` provisioner, the
 * local backend and an `http` backend served by the test itself (test/helpers/tf-http-backend.ts).
 * Mostly --local; one test over a file:// remote. What the fake CLI of test/kinds.test.ts stands
 * in for is checked here against the tool itself: receipts, drift, teardown, a nyl killed during
 * an apply, state locks (a live local holder, a remote lock left by a killed apply and its
 * runbook pasted into a shell), the tool's error headline, and secrets kept out of everything.
 */

import { type ChildProcess, execFileSync, spawn, spawnSync } from 'node:child_process';
import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { groupMembers, toolLog, waitFor } from './helpers/processes.js';
import {
  CLI,
  type CliResult,
  command,
  commitFiles,
  ENV_DEV,
  GIT_ENV,
  git,
  makeRepo,
  nyl,
  nylJson,
  parseTable,
  sleep,
  startNyl,
  tempDir,
  waitForFile,
} from './helpers/repo.js';
import { startTfHttpBackend } from './helpers/tf-http-backend.js';

// The machine's TF_* (a TF_CLI_CONFIG_FILE naming a file that is not there makes every command
// warn) must not reach the tools the tests start, through nyl or directly.
for (const k of Object.keys(process.env)) if (k.startsWith('TF_')) delete process.env[k];

const HAS_TERRAFORM = spawnSync('terraform', ['version'], { stdio: 'ignore' }).status === 0;
if (!HAS_TERRAFORM) console.log('skipping real terraform tests: terraform is not on PATH');
const suite = HAS_TERRAFORM ? describe : describe.skip;

// biome-ignore lint/suspicious/noExplicitAny: JSON documents read back from the refs
type Json = any;

const LOCAL = ['-e', 'dev', '--local'];
/** What terraform and the modules below leave in a module directory: never committed. */
const GITIGNORE = [
  '.terraform/',
  '.terraform.lock.hcl',
  '*.tfstate',
  '*.tfstate.backup',
  '.terraform.tfstate.lock.info',
  'started',
  'started.tmp',
  'slow',
  '',
].join('\n');

/** A Terraform unit document; the spec as JSON (YAML's flow style). */
function tfUnit(name: string, spec: Record<string, unknown>): string {
  return `---\nkind: Terraform\nname: ${name}\nspec: ${JSON.stringify(spec)}\n`;
}

/**
 * A module whose create runs a local-exec that writes its process group to `started` and, while
 * the module directory holds a file `slow`, then sleeps 30 s. A new `name` replaces the resource.
 */
const SLOW_TF = `variable "name" {
  type = string
}

resource "terraform_data" "main" {
  input            = var.name
  triggers_replace = var.name
  provisioner "local-exec" {
    command = "awk '{print $5}' /proc/$$/stat > started.tmp && mv started.tmp started; if [ -f slow ]; then sleep 30; fi"
  }
}

output "greeting" {
  value = "hi \${var.name}"
}
`;

const out = (r: CliResult) => `exit ${r.code}\n${r.stdout}\n${r.stderr}`;

/** UNIT → RESULT (or DRIFT) of a printed table. */
const results = (stdout: string) =>
  Object.fromEntries(parseTable(stdout).map((r) => [r.UNIT, r.RESULT ?? r.DRIFT ?? '']));

const observedUnit = (dir: string, unit: string): Json =>
  JSON.parse(git(dir, 'show', `refs/nyl/dev/observed:units/${unit}.json`));

/** terraform run directly in a module, as an operator would (behind nyl's back). */
function tf(moduleDir: string, args: string[], env: Record<string, string> = {}) {
  return spawnSync('terraform', args, { cwd: moduleDir, env: { ...process.env, ...env }, encoding: 'utf8' });
}

const tfState = (moduleDir: string): Json => JSON.parse(readFileSync(join(moduleDir, 'terraform.tfstate'), 'utf8'));

/** Go's time.Time.String() of a lock's RFC 3339 `Created`, as the lock error prints it. */
function goTime(created: string): string {
  const m = /^(\d{4}-\d\d-\d\d)T(\d\d:\d\d:\d\d(?:\.\d+)?)Z$/.exec(created);
  if (!m) throw new Error(`not a UTC RFC 3339 time: ${created}`);
  return `${m[1]} ${m[2]} +0000 UTC`;
}

/** Waits for the local-exec of SLOW_TF to start; its process group (terraform's). */
async function provisionerGroup(moduleDir: string): Promise<number> {
  const started = join(moduleDir, 'started');
  await waitForFile(started, 20_000);
  const pgid = Number(readFileSync(started, 'utf8').trim());
  expect(pgid).toBeGreaterThan(1);
  return pgid;
}

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
 * Runs the commands of a runbook as an operator pastes them, each in bash in the repository,
 * `<text>` replaced by a reason and `<token>` by the token the plan printed. Every one but the
 * last must succeed; the output of the force-unlock and the last result are returned.
 */
async function pasteRunbook(dir: string, commands: string[]): Promise<{ unlock: string; last: CliResult }> {
  let token = '';
  let unlock = '';
  let last: CliResult = { code: -1, stdout: '', stderr: '' };
  for (const [i, c] of commands.entries()) {
    const line = c.replace(/<text>/g, "'pasted from the runbook'").replace(/<token>/g, token);
    const child = spawn('bash', ['--noprofile', '--norc', '-c', line], {
      cwd: dir,
      env: { ...process.env, ...GIT_ENV, NYL_PROGRESS: '0', PATH: `${nylOnPath()}:${process.env.PATH ?? ''}` },
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
    last = { code, stdout, stderr };
    if (i < commands.length - 1) expect(code, `\`${line}\`: ${out(last)}`).toBe(0);
    if (/ force-unlock /.test(line)) unlock = stdout;
    if (/^nyl plan /.test(line)) token = /\n {2}token: +(v[23]\.\S+)\n/.exec(stdout)?.[1] ?? '<no token>';
  }
  return { unlock, last };
}

/** The commands of a runbook reason, in order (its `…` parts). */
const runbookSteps = (reason: string) => [...reason.matchAll(/`([^`]+)`/g)].map((m) => m[1] as string);

const UUID = /\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b/g;

// =============================================================================================

suite('Terraform units against the real terraform', () => {
  it('applies: receipt with the non-sensitive outputs; current; verify in sync; drift behind its back (verify exits 3) repaired; teardown destroys', async () => {
    const module = 'tf/app';
    const dir = makeRepo({
      '.gitignore': GITIGNORE,
      'nyl.yaml': ENV_DEV + tfUnit('app', { module, variables: { name: 'alpha' } }),
      [`${module}/main.tf`]: `variable "name" {
  type = string
}

resource "terraform_data" "main" {
  input = var.name
}

output "url" {
  value = "https://\${var.name}.example"
}

output "port" {
  value = 8080
}

output "tags" {
  value = { team = "web" }
}

output "token" {
  value     = "tok-\${var.name}-0123"
  sensitive = true
}
`,
    });
    const moduleDir = join(dir, module);

    const first = await nylJson<Json>(dir, ['reconcile', ...LOCAL]);
    expect(first.code, out(first)).toBe(0);
    expect(first.json.rows).toMatchObject([{ unit: 'app', kind: 'Terraform', result: 'executed' }]);
    const receipt = observedUnit(dir, 'app').receipt;
    expect(receipt.outputs).toEqual({ url: 'https://alpha.example', port: '8080', tags: '{"team":"web"}' });
    expect(receipt.artifacts).toEqual({ sensitiveOutputs: 'token' });
    const log = git(dir, 'show', 'refs/nyl/dev/observed:logs/app.txt');
    expect(log).toContain('$ terraform init -input=false -no-color');
    expect(log).toContain('Terraform has been successfully initialized!');
    expect(log).toContain('Apply complete! Resources: 1 added, 0 changed, 0 destroyed.');
    expect(log).toContain('token = <sensitive>');
    expect(log).not.toContain('\x1b[');
    expect(tfState(moduleDir).outputs.token.value).toBe('tok-alpha-0123'); // the tool has it…
    expect(JSON.stringify(first.json)).not.toContain('tok-alpha-0123'); // …nyl never says it

    const again = await nyl(dir, ['reconcile', ...LOCAL]);
    expect(again.code, out(again)).toBe(0);
    expect(results(again.stdout)).toEqual({ app: 'current' });

    const sync = await nyl(dir, ['verify', ...LOCAL]);
    expect(sync.code, out(sync)).toBe(0);
    expect(results(sync.stdout)).toEqual({ app: 'in-sync' });

    // Drift: an apply with another value, straight in the module.
    const hand = tf(moduleDir, ['apply', '-auto-approve', '-input=false', '-no-color', '-var', 'name=by-hand']);
    expect(hand.status, hand.stderr).toBe(0);
    const drift = await nyl(dir, ['verify', ...LOCAL]);
    expect(drift.code, out(drift)).toBe(3);
    expect(results(drift.stdout)).toEqual({ app: 'drifted' });
    expect(drift.stdout).toContain('warning NYL-VERIFY-DRIFT (app)');
    expect(observedUnit(dir, 'app').drift).toMatchObject({
      state: 'drifted',
      detail: 'Plan: 0 to add, 1 to change, 0 to destroy.\nterraform_data.main will be updated in-place',
    });

    const repair = await nyl(dir, ['reconcile', ...LOCAL]);
    expect(repair.code, out(repair)).toBe(0);
    expect(results(repair.stdout)).toEqual({ app: 'executed' });
    expect(tfState(moduleDir).resources[0].instances[0].attributes.input).toEqual({ type: 'string', value: 'alpha' });
    const fixed = await nyl(dir, ['verify', ...LOCAL]);
    expect(fixed.code, out(fixed)).toBe(0);
    expect(results(fixed.stdout)).toEqual({ app: 'in-sync' });

    const down = await nyl(dir, ['teardown', ...LOCAL]);
    expect(down.code, out(down)).toBe(0);
    expect(results(down.stdout)).toEqual({ app: 'destroyed' });
    expect(tfState(moduleDir).resources).toEqual([]);
    expect(git(dir, 'ls-tree', '-r', '--name-only', 'refs/nyl/dev/observed')).not.toMatch(/^units\/app\.json$/m);
  });

  it('nyl SIGKILLed during a local-exec: terraform alone gets SIGINT within 1 s (its provisioner nothing), its group is gone within the cancel grace; the state is not left locked; after lease break the unit converges', async () => {
    const module = 'tf/sleeper'; // not `slow`: .gitignore's `slow` would keep the module out of the commit
    const dir = makeRepo({
      '.gitignore': GITIGNORE,
      'nyl.yaml': ENV_DEV + tfUnit('slow', { module, variables: { name: 'one' } }),
      [`${module}/main.tf`]: SLOW_TF,
    });
    const moduleDir = join(dir, module);
    writeFileSync(join(moduleDir, 'slow'), '');
    // nyl's work folder (the tools' output files) where the test can read it once nyl is dead.
    const runnerTemp = tempDir('nyl-runner-temp-');
    const run = startNyl(dir, ['reconcile', ...LOCAL, '--cancel-grace', '3s'], { RUNNER_TEMP: runnerTemp });
    const pgid = await provisionerGroup(moduleDir);
    // terraform leads the group nyl started it in; its provisioner (sh, sleep) runs in it too.
    expect(readFileSync(`/proc/${pgid}/comm`, 'utf8').trim()).toBe('terraform');
    // The provisioner's shell writes `started` before it forks its sleep: give the fork a moment.
    for (let i = 0; i < 50 && groupMembers(pgid).length < 3; i++) await sleep(100);
    expect(groupMembers(pgid).length).toBeGreaterThanOrEqual(3);
    expect(existsSync(join(moduleDir, '.terraform.tfstate.lock.info'))).toBe(true);

    const killed = Date.now();
    run.child.kill('SIGKILL');
    expect((await run.done).signal).toBe('SIGKILL');

    // The apply's output file says terraform was interrupted (SIGINT, its graceful stop).
    const applyLog = () => toolLog(runnerTemp, 'terraform_data.main: Creating...');
    await waitFor('terraform to print "Interrupt received."', () => applyLog().includes('Interrupt received.'), 1_000);
    const interruptedAfter = Date.now() - killed;
    expect(interruptedAfter).toBeLessThan(1_000);
    expect(applyLog()).toContain('Please wait for Terraform to exit or data loss may occur.');
    // The watchdog signalled terraform alone: the provisioner's shell ended by terraform's own stop
    // of it (SIGKILL), not by a SIGINT to the group.
    await waitFor('terraform to stop the provisioner', () => applyLog().includes("': signal: killed."), 3_000);
    expect(applyLog()).not.toMatch(/signal: interrupt|Two interrupts received/);
    // Gone within the cancel grace (3 s) and a second; nothing of the group lives after it.
    await waitFor('the group to end', () => groupMembers(pgid).length === 0, 4_000);
    expect(Date.now() - killed).toBeLessThan(4_000);
    await sleep(Math.max(0, killed + 4_000 - Date.now()));
    expect(groupMembers(pgid)).toEqual([]);

    // Stopped gracefully: it wrote its state (the create cut short is tainted) and released the lock.
    expect(existsSync(join(moduleDir, '.terraform.tfstate.lock.info'))).toBe(false);
    expect(tfState(moduleDir).resources[0].instances[0].status).toBe('tainted');
    const probe = tf(moduleDir, ['plan', '-input=false', '-no-color', '-lock-timeout=0s', '-var', 'name=one']);
    expect(probe.status, probe.stderr).toBe(0);
    expect(probe.stdout).toContain('terraform_data.main is tainted, so must be replaced');

    const brk = await nyl(dir, ['lease', 'break', ...LOCAL, '--reason', 'runner was killed']);
    expect(brk.code, out(brk)).toBe(0);
    rmSync(join(moduleDir, 'slow'));
    rmSync(join(moduleDir, 'started'));
    // Converge: the dead run's unit is uncertain, so it is applied again (the tainted resource's
    // replacement approved).
    const rec = await nylJson<Json>(dir, ['reconcile', ...LOCAL, '--approve', 'slow']);
    expect(rec.code, out(rec)).toBe(0);
    expect(rec.json.rows).toMatchObject([{ unit: 'slow', kind: 'Terraform', result: 'recovered' }]);
    expect(existsSync(join(moduleDir, 'started'))).toBe(true); // the provisioner ran again
    expect(observedUnit(dir, 'slow').receipt.outputs).toEqual({ greeting: 'hi one' });
    expect(observedUnit(dir, 'slow').condition).toBeUndefined();
    expect(tfState(moduleDir).resources[0].instances[0].status).toBeUndefined();
  });

  it('http backend: the lock of a SIGKILLed terraform outlives it; the next reconcile fails non-retryably with the runbook; pasted into a shell, it repairs and applies', async () => {
    const backend = await startTfHttpBackend();
    try {
      const module = 'infra/my app';
      const dir = makeRepo({
        '.gitignore': GITIGNORE,
        'nyl.yaml': ENV_DEV + tfUnit('web', { module, variables: { name: 'one' } }),
        [`${module}/main.tf`]: backend.hcl + SLOW_TF,
      });
      const moduleDir = join(dir, module);
      writeFileSync(join(moduleDir, 'slow'), '');
      const run = startNyl(dir, ['reconcile', ...LOCAL]);
      const pgid = await provisionerGroup(moduleDir);
      const held = backend.lock();
      expect(held).toMatchObject({ Operation: 'OperationTypeApply', Path: '' });
      const holderId = held?.ID as string;

      // terraform dies outright (the OOM killer, a lost runner): it cannot release its lock.
      process.kill(-pgid, 'SIGKILL');
      const killedRun = await run.done;
      expect(killedRun.code, out(killedRun)).toBe(4);
      expect(results(killedRun.stdout)).toEqual({ web: 'uncertain' });
      expect(parseTable(killedRun.stdout)[0]?.DETAIL).toBe('apply was killed by SIGKILL');
      expect(backend.lock()?.ID).toBe(holderId);

      rmSync(join(moduleDir, 'slow'));
      const rec = await nylJson<Json>(dir, ['reconcile', ...LOCAL]);
      expect(rec.code, out(rec)).toBe(1);
      expect(rec.json.rows).toMatchObject([{ unit: 'web', kind: 'Terraform', result: 'failed' }]);
      const reason = rec.json.rows[0].detail as string;
      const steps = runbookSteps(reason);
      expect(steps.map((c) => c.replace(UUID, 'ID'))).toEqual([
        'nyl hold -e dev --unit web --reason <text> --local',
        "nyl exec -e dev --unit web --local -- terraform '-chdir=infra/my app' force-unlock -force ID",
        'nyl recover -e dev --unit web --retry --reason <text> --local',
        'nyl resume -e dev --unit web --reason <text> --local',
        'nyl plan -e dev --local',
        'nyl reconcile -e dev --plan <token> --local',
      ]);
      // The lock it names is the one the killed apply left (terraform's http client names the
      // holder only as `ID=` in its message; its Lock Info block is the failed attempt's own).
      expect
        .soft(reason, 'the runbook names the lock the killed apply left')
        .toBe(
          `the state is locked by its backend (lock ID ${holderId}), a lock that outlives its holder (e.g. an apply that was killed); ` +
            'once no operation on this state runs: `nyl hold -e dev --unit web --reason <text> --local`, ' +
            `\`nyl exec -e dev --unit web --local -- terraform '-chdir=infra/my app' force-unlock -force ${holderId}\`, ` +
            '`nyl recover -e dev --unit web --retry --reason <text> --local`, `nyl resume -e dev --unit web --reason <text> --local`, ' +
            'then approve the plan: `nyl plan -e dev --local` and `nyl reconcile -e dev --plan <token> --local`',
        );
      expect(observedUnit(dir, 'web').condition).toMatchObject({ state: 'failed', retryable: false, reason });
      // Not retryable: the next reconcile leaves it alone.
      const waiting = await nyl(dir, ['reconcile', ...LOCAL]);
      expect(results(waiting.stdout)).toEqual({ web: 'failed' });
      expect(backend.lock()?.ID).toBe(holderId);

      const pasted = await pasteRunbook(dir, steps);
      expect(pasted.unlock).toContain('Terraform state has been successfully unlocked!');
      expect(pasted.last.code, `reconcile --plan after the runbook: ${out(pasted.last)}`).toBe(0);
      expect(results(pasted.last.stdout)).toEqual({ web: 'executed' });
      expect(backend.lock()).toBeUndefined();
      expect(observedUnit(dir, 'web').receipt.outputs).toEqual({ greeting: 'hi one' });
      expect(observedUnit(dir, 'web').condition).toBeUndefined();
      expect(JSON.parse(backend.state() as string).outputs.greeting.value).toBe('hi one');
    } finally {
      await backend.close();
    }
  });

  it('a live local lock (an apply started by hand in the module): the unit fails retryable, "locked by a running process", no force-unlock; after it ends the next reconcile applies', async () => {
    const module = 'tf/busy';
    const dir = makeRepo({
      '.gitignore': GITIGNORE,
      'nyl.yaml': ENV_DEV + tfUnit('busy', { module, variables: { name: 'nyl' } }),
      [`${module}/main.tf`]: SLOW_TF,
    });
    const moduleDir = join(dir, module);
    writeFileSync(join(moduleDir, 'slow'), '');
    expect(tf(moduleDir, ['init', '-input=false', '-no-color']).status).toBe(0);
    let holder: ChildProcess | undefined;
    try {
      holder = spawn('terraform', ['apply', '-auto-approve', '-input=false', '-no-color', '-var', 'name=by-hand'], {
        cwd: moduleDir,
        detached: true,
        stdio: 'ignore',
      });
      const holderExit = new Promise<number | null>((res) => holder?.on('exit', (code) => res(code)));
      const pgid = await provisionerGroup(moduleDir);
      expect(pgid).toBe(holder.pid);
      const info = JSON.parse(readFileSync(join(moduleDir, '.terraform.tfstate.lock.info'), 'utf8'));

      const rec = await nylJson<Json>(dir, ['reconcile', ...LOCAL]);
      expect(rec.code, out(rec)).toBe(1);
      const reason =
        `the state is locked by a running process (lock ID ${info.ID} by ${info.Who} since ${goTime(info.Created)}): ` +
        'another operation on this state runs now; the next reconcile tries again (a lock of a process that died is released with it)';
      expect(rec.json.rows).toMatchObject([{ unit: 'busy', kind: 'Terraform', result: 'failed', detail: reason }]);
      expect(reason).not.toContain('force-unlock');
      expect(observedUnit(dir, 'busy').condition).toMatchObject({ state: 'failed', retryable: true, reason });
      expect(git(dir, 'show', 'refs/nyl/dev/observed:logs/busy.txt')).toContain(
        'Error message: resource temporarily unavailable',
      );

      // The other apply ends (interrupted: it releases its lock); the next reconcile tries again.
      process.kill(-pgid, 'SIGINT');
      expect(await holderExit).toBe(1);
      rmSync(join(moduleDir, 'slow'));
      const next = await nylJson<Json>(dir, ['reconcile', ...LOCAL]);
      expect(next.code, out(next)).toBe(0);
      expect(next.json.rows).toMatchObject([{ unit: 'busy', result: 'executed' }]);
      expect(observedUnit(dir, 'busy').receipt.outputs).toEqual({ greeting: 'hi nyl' });
      expect(observedUnit(dir, 'busy').condition).toBeUndefined();
    } finally {
      if (holder?.pid && groupMembers(holder.pid).length) process.kill(-holder.pid, 'SIGKILL');
    }
  });

  it('a syntax error in the module: failed, with terraform’s own headline', async () => {
    const dir = makeRepo({
      '.gitignore': GITIGNORE,
      'nyl.yaml': ENV_DEV + tfUnit('broken', { module: 'tf/broken' }),
      'tf/broken/main.tf': 'output "x" { value = ${ }\n',
    });
    const rec = await nylJson<Json>(dir, ['reconcile', ...LOCAL]);
    expect(rec.code, out(rec)).toBe(1);
    expect(rec.json.rows).toMatchObject([{ unit: 'broken', kind: 'Terraform', result: 'failed' }]);
    const reason = rec.json.rows[0].detail as string;
    // terraform 1.11 fails in init: "Error: Terraform encountered problems during initialisation,
    // including problems …", then "Error: Invalid character" and "Error: Invalid expression".
    expect(reason).toMatch(/^init exited with 1: /);
    expect(reason).toContain('Error: Invalid expression');
    expect(reason).toContain('Expected the start of an expression, but found an invalid expression token.');
    expect(observedUnit(dir, 'broken').condition).toMatchObject({ state: 'failed', retryable: true, reason });
    const log = git(dir, 'show', 'refs/nyl/dev/observed:logs/broken.txt');
    expect(log).toContain('Error: Invalid character');
    expect(log).toContain('Error: Invalid expression');
  });

  it('a sensitive output referenced by a Command unit on the very first run: refused as sensitive, not as missing', async () => {
    const dir = makeRepo({
      '.gitignore': GITIGNORE,
      'nyl.yaml':
        ENV_DEV +
        tfUnit('db', { module: 'tf/db', variables: { name: 'orders' } }) +
        command('app', 'echo "conn=${{ units.db.outputs.conn }}" > app.out') +
        command('web', 'echo "host=${{ units.db.outputs.host }}" > web.out'),
      'tf/db/main.tf': `variable "name" {
  type = string
}

resource "terraform_data" "main" {
  input = var.name
}

output "conn" {
  value     = "db://\${var.name}:5432/s3cr3t-conn"
  sensitive = true
}

output "host" {
  value = "db-\${var.name}"
}
`,
    });
    const rec = await nylJson<Json>(dir, ['reconcile', ...LOCAL]);
    expect(rec.code, out(rec)).toBe(1);
    const row = (u: string) => rec.json.rows.find((r: Json) => r.unit === u);
    expect(row('db')).toMatchObject({ kind: 'Terraform', result: 'executed' });
    expect(row('web')).toMatchObject({ result: 'executed' });
    expect(row('app')).toMatchObject({
      result: 'failed',
      detail:
        "output conn of db is sensitive (or holds a secret's value): Nyl never records such outputs, so units.db.outputs.conn cannot be passed; read it from the tool's state or a secret store instead",
    });
    expect(readFileSync(join(dir, 'web.out'), 'utf8')).toBe('host=db-orders\n');
    expect(existsSync(join(dir, 'app.out'))).toBe(false);
    expect(observedUnit(dir, 'db').receipt).toMatchObject({
      outputs: { host: 'db-orders' },
      artifacts: { sensitiveOutputs: 'conn' },
    });
    expect(JSON.stringify(rec.json)).not.toContain('s3cr3t-conn');
  });

  it('an output built from TF_VAR_db_password (not sensitive in HCL): left out of the receipt, named in sensitiveOutputs, its value nowhere (refs, objects, --json, logs)', async () => {
    const SECRET = 'Pw-7f3a9c1e-hunter2';
    const bare = join(tempDir('nyl-tf-remote-'), 'remote.git');
    execFileSync('git', ['init', '--bare', '-q', bare], { env: { ...process.env, ...GIT_ENV } });
    const module = 'tf/db';
    const dir = makeRepo({
      '.gitignore': GITIGNORE,
      'nyl.yaml': ENV_DEV + tfUnit('db', { module }),
      [`${module}/main.tf`]: `variable "db_password" {
  type = string
}

resource "terraform_data" "main" {
  input = "app:\${var.db_password}"
}

output "dsn" {
  value = "postgres://app:\${var.db_password}@db:5432/app"
}

output "host" {
  value = "db"
}
`,
    });
    git(dir, 'remote', 'add', 'origin', `file://${bare}`);
    const env = { TF_VAR_db_password: SECRET };
    const transcript: string[] = [];
    const keep = <T extends CliResult>(r: T) => {
      transcript.push(r.stdout, r.stderr);
      return r;
    };

    const rec = keep(await nylJson<Json>(dir, ['reconcile', '-e', 'dev'], env));
    expect(rec.code, out(rec)).toBe(0);
    expect(rec.json.rows).toMatchObject([{ unit: 'db', kind: 'Terraform', result: 'executed' }]);
    const unit = JSON.parse(git(bare, 'show', 'refs/nyl/dev/observed:units/db.json'));
    expect(unit.receipt.outputs).toEqual({ host: 'db' });
    expect(unit.receipt.artifacts).toEqual({ sensitiveOutputs: 'dsn' });
    // The tool did get and print it (so its absence below means something).
    const moduleDir = join(dir, module);
    expect(tfState(moduleDir).outputs.dsn.value).toContain(SECRET);
    const log = git(bare, 'show', 'refs/nyl/dev/observed:logs/db.txt');
    expect(log).toContain('Apply complete! Resources: 1 added, 0 changed, 0 destroyed.');
    expect(log).toMatch(/^dsn = "postgres:\/\/app:\*\*\*@db:5432\/app"$/m);
    expect(log).toMatch(/\+ input += "app:\*\*\*"/);

    keep(await nylJson<Json>(dir, ['verify', '-e', 'dev'], env));
    keep(await nylJson<Json>(dir, ['status', '-e', 'dev'], env));
    keep(await nyl(dir, ['state', 'show', '-e', 'dev', '--unit', 'db'], env));
    // A consumer of it is refused as of a sensitive output.
    commitFiles(dir, {
      'nyl.yaml': ENV_DEV + tfUnit('db', { module }) + command('app', 'echo "${{ units.db.outputs.dsn }}" > app.out'),
    });
    const consumer = keep(await nylJson<Json>(dir, ['reconcile', '-e', 'dev'], env));
    expect(consumer.code, out(consumer)).toBe(1);
    expect(consumer.json.rows.find((r: Json) => r.unit === 'app')).toMatchObject({
      result: 'failed',
      detail:
        "output dsn of db is sensitive (or holds a secret's value): Nyl never records such outputs, so units.db.outputs.dsn cannot be passed; read it from the tool's state or a secret store instead",
    });
    expect(existsSync(join(dir, 'app.out'))).toBe(false);

    const everyObject = (gitDir: string) =>
      execFileSync('git', ['cat-file', '--batch-all-objects', '--batch'], {
        cwd: gitDir,
        encoding: 'latin1',
        maxBuffer: 256 * 1024 * 1024,
      });
    const refs = git(bare, 'for-each-ref', '--format=%(refname)', 'refs/nyl/');
    expect(refs).toContain('refs/nyl/dev/observed');
    for (const [what, text] of [
      ['every object of the remote', everyObject(bare)],
      ['every object of the work repository', everyObject(join(dir, '.git'))],
      ['the log tails on the observed ref', log],
      ['nyl output (--json included)', transcript.join('\n')],
    ] as const) {
      expect(text.length, what).toBeGreaterThan(0);
      expect(text.includes(SECRET), `${what} contains the password`).toBe(false);
    }
  });
});
