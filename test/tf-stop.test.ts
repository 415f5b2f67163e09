/**
 * Terraform and OpenTofu are stopped the way they ask: SIGINT to the tool alone, whatever signal
 * nyl got, and SIGKILL to its process group only when the grace ends. Its providers are go-plugin
 * processes in that group: they ignore SIGINT (terraform stops them itself) but die of SIGTERM,
 * and a provider killed mid-create leaves a resource outside the state.
 *
 * First without terraform: a leader-only tool run (stopTarget `leader`), the watchdog's list and
 * the actions' post step. Then against the real `terraform` on PATH (skipped when there is none):
 * a module whose `local-exec` provisioner records every signal it gets, stopped by SIGTERM and
 * SIGINT to nyl, a unit timeout, a SIGKILL of nyl (the watchdog), the runner's cancel sequence of
 * the actions (then their post step) and a SIGKILLed main step (the watchdog, then the post step). Each time: the provisioner recorded nothing, terraform logged `Interrupt
 * received` (once: never a second interrupt), no provider died of a signal, the state was unlocked,
 * and the next reconcile converges. terraform_data's provider is built into terraform: with the aws
 * provider in a local mirror (/opt/tf-plugins, or NYL_TEST_TF_MIRROR), one more SIGTERM case runs
 * with a go-plugin provider process in terraform's group, and checks from terraform's debug log
 * that it ended as terraform closed it, not of a signal.
 */

import { spawn, spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { runProcess } from '../src/core/drivers/process.js';
import { useToolHelpers } from '../src/core/proc/spawner.js';
import { stopsListedIn, watchdogStateFile } from '../src/core/proc/watchdog.js';
import { Cancellation } from '../src/core/util/cancel.js';
import { type Running as Step, setup, startStep, step, type Work } from './helpers/action-step.js';
import { groupMembers, procStat as stat, toolLog, waitFor } from './helpers/processes.js';
import {
  type CliResult,
  commitFiles,
  ENV_DEV,
  git,
  makeRepo,
  nyl,
  nylJson,
  startNyl,
  tempDir,
  waitForFile,
} from './helpers/repo.js';

// The machine's TF_* must not reach the tools the tests start (terraform-real.test.ts).
for (const k of Object.keys(process.env)) if (k.startsWith('TF_')) delete process.env[k];

// biome-ignore lint/suspicious/noExplicitAny: JSON documents read back from the refs
type Json = any;

const out = (r: CliResult) => `exit ${r.code}\n${r.stdout}\n${r.stderr}`;

// =============================================================================================
// A leader-only tool, without terraform: a node "tool" that starts a child in its group.

/**
 * A tool (node) that starts a bash child in its own process group, then writes `ready`; on SIGINT
 * or SIGTERM it records it in `leader` and exits 200 ms later (ignoring SIGINT: never, unless
 * `deaf`). The child records every signal it gets in `child` and outlives the tool.
 */
function leaderTool(ctl: string, deaf = false): string[] {
  const child = `for s in INT TERM HUP QUIT; do trap "echo $s >> ${ctl}/child" $s; done; while :; do sleep 0.05; done`;
  const code = `
const fs = require('node:fs');
const c = require('node:child_process').spawn('bash', ['-c', ${JSON.stringify(child)}], { stdio: 'ignore' });
const stop = (s) => { fs.appendFileSync(${JSON.stringify(`${ctl}/leader`)}, s + '\\n'); if (!${deaf}) setTimeout(() => process.exit(0), 200); };
process.on('SIGINT', stop);
process.on('SIGTERM', stop);
setTimeout(() => fs.writeFileSync(${JSON.stringify(`${ctl}/ready`)}, c.pid + '\\n'), 200);
setInterval(() => {}, 1000);
`;
  return [process.execPath, '-e', code];
}

const read = (path: string) => (existsSync(path) ? readFileSync(path, 'utf8') : '');

afterEach(() => useToolHelpers(true));

describe('a leader-only tool (terraform, tofu) is stopped alone', () => {
  it('cancelled by SIGTERM: the tool alone gets SIGINT, once; its child nothing; the group is SIGKILLed once it ended (helper and direct spawn)', async () => {
    for (const helpers of [true, false]) {
      useToolHelpers(helpers);
      const ctl = tempDir('nyl-ctl-');
      const cancellation = new Cancellation(5_000);
      const p = runProcess({
        argv: leaderTool(ctl),
        cwd: ctl,
        timeoutMs: 30_000,
        cancellation,
        stopSignal: 'SIGINT',
        stopTarget: 'leader',
      });
      await waitForFile(join(ctl, 'ready'));
      const childPid = Number(read(join(ctl, 'ready')));
      const pgid = stat(childPid)?.pgrp as number;
      expect(stat(pgid)?.comm, `helpers: ${helpers}`).toBe('node');
      // Listed for the watchdog as leader-only: `+PGID INT leader`.
      expect(stopsListedIn(watchdogStateFile()).find((g) => g.pgid === pgid)).toEqual({
        pgid,
        signal: 'SIGINT',
        leader: true,
        sent: false,
      });
      const t0 = Date.now();
      cancellation.cancel('SIGTERM');
      // Nyl noted the signal sent (`~PGID`): the watchdog and the post step do not send it again.
      await waitFor(
        'the watchdog to list the stop as sent',
        () => stopsListedIn(watchdogStateFile()).some((g) => g.pgid === pgid && g.sent),
        2_000,
      );
      const r = await p;
      expect(r).toMatchObject({ started: true, cancelled: true, exitCode: 0, signal: null });
      expect(Date.now() - t0, 'ended with the tool, not at the end of the grace').toBeLessThan(2_000);
      expect(read(join(ctl, 'leader'))).toBe('SIGINT\n');
      expect(read(join(ctl, 'child')), 'the child got a signal').toBe('');
      // What the tool left in its group went with it (SIGKILL).
      await waitFor('the group to end', () => groupMembers(pgid).length === 0, 2_000);
    }
  });

  it('the default (group) is as before: the signal nyl got goes to the whole group', async () => {
    const ctl = tempDir('nyl-ctl-');
    const cancellation = new Cancellation(5_000);
    const p = runProcess({ argv: leaderTool(ctl), cwd: ctl, timeoutMs: 30_000, cancellation, stopSignal: 'SIGINT' });
    await waitForFile(join(ctl, 'ready'));
    cancellation.cancel('SIGTERM');
    expect(await p).toMatchObject({ cancelled: true, exitCode: 0 });
    expect(read(join(ctl, 'leader'))).toBe('SIGTERM\n');
    await waitFor('the child to record SIGTERM', () => read(join(ctl, 'child')).includes('TERM'), 2_000);
  });

  it('a timeout, then a cancel: SIGINT to the tool alone, once (a second makes terraform exit at once)', async () => {
    const ctl = tempDir('nyl-ctl-');
    const cancellation = new Cancellation(2_000);
    const p = runProcess({
      argv: leaderTool(ctl, true),
      cwd: ctl,
      timeoutMs: 600,
      cancellation,
      stopSignal: 'SIGINT',
      stopTarget: 'leader',
    });
    await waitForFile(join(ctl, 'ready'));
    await waitFor('the timeout', () => read(join(ctl, 'leader')) !== '', 3_000);
    cancellation.cancel('SIGINT');
    const r = await p;
    // It ignores SIGINT: SIGKILL to the group at the end of the grace.
    expect(r).toMatchObject({ timedOut: true, cancelled: true, exitCode: null, signal: 'SIGKILL' });
    expect(read(join(ctl, 'leader'))).toBe('SIGINT\n');
    expect(read(join(ctl, 'child'))).toBe('');
    const child = Number(read(join(ctl, 'ready')));
    await waitFor('the group to end', () => !stat(child) || stat(child)?.state === 'Z', 2_000);
  });

  it('a cancel asked for before the tool started reaches the tool alone when it starts', async () => {
    const ctl = tempDir('nyl-ctl-');
    const cancellation = new Cancellation(3_000);
    cancellation.cancel('SIGTERM');
    const r = await runProcess({
      argv: [
        'bash',
        '-c',
        `trap 'echo INT >> ${ctl}/leader; exit 3' INT; trap 'echo TERM >> ${ctl}/leader' TERM; sleep 5 & wait`,
      ],
      cwd: ctl,
      timeoutMs: 30_000,
      cancellation,
      stopSignal: 'SIGINT',
      stopTarget: 'leader',
    });
    expect(r.cancelled).toBe(true);
    // Before its trap was set (killed by SIGINT) or after (its trap ran): SIGINT either way, never TERM.
    expect(r.signal === 'SIGINT' || (r.exitCode === 3 && read(join(ctl, 'leader')) === 'INT\n')).toBe(true);
  });

  it("the watchdog's log: `+PGID SIG leader`, `~PGID` (sent), old lines as they were", () => {
    const file = join(tempDir('nyl-wd-'), 'groups');
    writeFileSync(file, '+101 TERM\n+102 INT leader\n+103\n104\n~102\n-101\n+105 INT leader\n~999\n+106 bad\n');
    expect(stopsListedIn(file)).toEqual([
      { pgid: 102, signal: 'SIGINT', leader: true, sent: true },
      { pgid: 103, signal: 'SIGTERM', leader: false, sent: false },
      { pgid: 104, signal: 'SIGTERM', leader: false, sent: false },
      { pgid: 105, signal: 'SIGINT', leader: true, sent: false },
      { pgid: 106, signal: 'SIGTERM', leader: false, sent: false },
    ]);
    // A pid used again: listed anew, not sent.
    writeFileSync(file, '+7 INT leader\n~7\n-7\n+7 TERM\n');
    expect(stopsListedIn(file)).toEqual([{ pgid: 7, signal: 'SIGTERM', leader: false, sent: false }]);
  });
});

/** The leader tool started on its own, in a process group of its own, as a killed nyl leaves it. */
async function orphanTool(ctl: string, deaf = false): Promise<{ pgid: number; child: number }> {
  const [cmd, ...args] = leaderTool(ctl, deaf);
  const p = spawn(cmd as string, args, { detached: true, stdio: 'ignore' });
  p.unref();
  await waitForFile(join(ctl, 'ready'));
  return { pgid: p.pid as number, child: Number(read(join(ctl, 'ready'))) };
}

describe("the actions' post step ends the groups a killed main step left, as listed", () => {
  const post = async (lines: (pgid: number) => string, deaf: boolean, grace = '1s') => {
    const w = setup(ENV_DEV);
    const tool = await orphanTool(w.ctl, deaf);
    const groupsFile = join(w.ctl, 'groups');
    writeFileSync(groupsFile, lines(tool.pgid));
    const inputs = { environment: 'dev', 'cancel-grace': grace };
    const state = { environment: 'dev', action: 'reconcile', 'groups-file': groupsFile };
    const t0 = Date.now();
    const s = await step('post', w, { runId: '6001', inputs, state });
    expect(s.code, s.stdout + s.stderr).toBe(0);
    expect(s.stdout).toContain(`the main step's tools still run (process groups ${tool.pgid})`);
    expect(s.stdout).toContain("nyl: the main step's tools are gone");
    expect(groupMembers(tool.pgid)).toEqual([]);
    return { ms: Date.now() - t0, leader: read(join(w.ctl, 'leader')), child: read(join(w.ctl, 'child')) };
  };

  it('a leader-only group: SIGINT to the tool alone, SIGKILL to the group once it ended', async () => {
    const r = await post((g) => `+${g} INT leader\n`, false, '5s');
    expect(r).toMatchObject({ leader: 'SIGINT\n', child: '' });
    // The child outlives the tool: SIGKILL once the tool ended, not at the end of the 5 s grace.
    expect(r.ms).toBeLessThan(4_000);
  });

  it('a leader-only group the watchdog interrupted already: nothing sent again; SIGKILL after the grace', async () => {
    const r = await post((g) => `+${g} INT leader\n~${g}\n`, true);
    expect(r).toMatchObject({ leader: '', child: '' });
    expect(r.ms).toBeGreaterThanOrEqual(1_000);
  });

  it('any other group: SIGTERM to the group, as before', async () => {
    const r = await post((g) => `+${g} INT\n`, false);
    expect(r.leader).toBe('SIGTERM\n');
    expect(r.child).toContain('TERM');
  });
});

// =============================================================================================
// Against the real terraform.

const HAS_TERRAFORM = spawnSync('terraform', ['version'], { stdio: 'ignore' }).status === 0;
if (!HAS_TERRAFORM) console.log('skipping the terraform stop tests: terraform is not on PATH');
const suite = HAS_TERRAFORM ? describe : describe.skip;

const MIRROR = process.env.NYL_TEST_TF_MIRROR ?? '/opt/tf-plugins';
const HAS_AWS = existsSync(join(MIRROR, 'registry.terraform.io/hashicorp/aws'));
if (HAS_TERRAFORM && !HAS_AWS)
  console.log(`skipping the provider-process case: no hashicorp/aws in a local mirror at ${MIRROR}`);

const MODULE = 'tf/rec';
const LOCAL = ['-e', 'dev', '--local', '--cancel-grace', '3s'];

/**
 * The provisioner: records every signal it gets (SIGKILL cannot be), writes its process group to
 * `started`, and while `slow` exists waits on a sleep (waking for each trapped signal).
 */
const RECORD_SH = `for s in INT TERM HUP QUIT; do trap "echo $s >> signals" $s; done
awk '{print $5}' /proc/$$/stat > started.tmp && mv started.tmp started
[ -f slow ] || exit 0
sleep 30 &
while kill -0 $! 2>/dev/null; do wait $!; done
`;

/** With the aws provider (local mirror, no credentials, no call): its process lives through the create. */
const AWS_TF = `terraform {
  required_providers {
    aws = { source = "hashicorp/aws" }
  }
}

provider "aws" {
  region                      = "us-east-1"
  access_key                  = "none"
  secret_key                  = "none"
  skip_credentials_validation = true
  skip_requesting_account_id  = true
  skip_metadata_api_check     = true
}

data "aws_partition" "after" {
  depends_on = [terraform_data.main]
}
`;

const MAIN_TF = `variable "name" {
  type = string
}

resource "terraform_data" "main" {
  input            = var.name
  triggers_replace = var.name
  provisioner "local-exec" {
    command = "bash ./record.sh"
  }
}

output "greeting" {
  value = "hi \${var.name}"
}
`;

const MODULE_GITIGNORE = [
  '.terraform/',
  '.terraform.lock.hcl',
  '*.tfstate',
  '*.tfstate.backup',
  '.terraform.tfstate.lock.info',
  'started',
  'started.tmp',
  'slow',
  'signals',
  '',
].join('\n');

function unitDoc(extra = ''): string {
  return `---\nkind: Terraform\nname: rec\n${extra}spec: ${JSON.stringify({ module: MODULE, variables: { name: 'one' } })}\n`;
}

function moduleFiles(aws = false): Record<string, string> {
  return {
    [`${MODULE}/main.tf`]: MAIN_TF + (aws ? AWS_TF : ''),
    [`${MODULE}/record.sh`]: RECORD_SH,
    [`${MODULE}/.gitignore`]: MODULE_GITIGNORE,
  };
}

/** A CLI configuration that installs hashicorp/aws from the local mirror. */
function mirrorConfig(): string {
  const file = join(tempDir('nyl-tfrc-'), 'tfrc');
  writeFileSync(file, `provider_installation {\n  filesystem_mirror {\n    path = "${MIRROR}"\n  }\n}\n`);
  return file;
}

/** Terraform's debug log (TF_LOG_PATH): how each provider process ended. */
function tfDebug(aws: boolean): { env: Record<string, string>; path: string } {
  const path = join(tempDir('nyl-tflog-'), 'tf.log');
  return {
    path,
    env: { TF_LOG: 'debug', TF_LOG_PATH: path, ...(aws ? { TF_CLI_CONFIG_FILE: mirrorConfig() } : {}) },
  };
}

interface Started {
  pgid: number;
  /** The group when the provisioner ran: terraform, its providers, the provisioner. */
  members: { pid: number; comm: string; ppid: number }[];
  providers: number[];
}

/** Waits for the provisioner; terraform's group as it is then. */
async function provisioning(moduleDir: string, aws = false): Promise<Started> {
  // With the aws provider, init copies its 700 MB binary and each command loads its schema first.
  await waitForFile(join(moduleDir, 'started'), aws ? 60_000 : 30_000);
  const pgid = Number(readFileSync(join(moduleDir, 'started'), 'utf8').trim());
  expect(pgid).toBeGreaterThan(1);
  // terraform leads the group nyl started it in; the provisioner (sh, bash, sleep) runs in it too.
  expect(stat(pgid)?.comm).toBe('terraform');
  await waitFor('the provisioner to start its sleep', () => groupMembers(pgid).some((m) => m.comm === 'sleep'), 5_000);
  const members = groupMembers(pgid);
  // go-plugin providers: terraform's children in its group (terraform_data's provider is built in).
  const providers = members.filter((m) => m.ppid === pgid && m.comm.startsWith('terraform-prov')).map((m) => m.pid);
  expect(providers.length, JSON.stringify(members)).toBe(aws ? 1 : 0);
  return { pgid, members, providers };
}

/**
 * What every stop must leave: the provisioner recorded no signal and its shell ended by
 * terraform's own SIGKILL (the provisioner's stop), terraform was interrupted once, no provider
 * ended by a signal, the state was written and unlocked, and nothing of the group lives on.
 */
async function expectStoppedAsAsked(moduleDir: string, log: string, debugLog: string, s: Started): Promise<void> {
  // Each provider ended as terraform closed it, none of a signal (`error="signal: terminated"`).
  const exits = read(debugLog)
    .split('\n')
    .filter((l) => l.includes('plugin process exited'));
  expect(
    exits.filter((l) => l.includes('error=')),
    'providers that ended in error',
  ).toEqual([]);
  for (const pid of s.providers)
    expect(
      exits.some((l) => l.includes(`id=${pid}`)),
      `provider ${pid}`,
    ).toBe(true);
  expect(read(join(moduleDir, 'signals')), 'signals the provisioner got').toBe('');
  expect(log).toContain('Interrupt received.');
  expect(log).toContain('Gracefully shutting down...');
  expect(log).not.toContain('Two interrupts received');
  // The provisioner's shell ended by terraform's own stop of it, not by a signal from nyl.
  expect(log).toContain("Error running command 'bash ./record.sh': signal: killed.");
  expect(existsSync(join(moduleDir, '.terraform.tfstate.lock.info')), 'the state lock').toBe(false);
  const state = JSON.parse(readFileSync(join(moduleDir, 'terraform.tfstate'), 'utf8'));
  expect(state.resources[0].instances[0].status).toBe('tainted');
  await waitFor('the group to end', () => groupMembers(s.pgid).length === 0, 5_000);
}

/** The next reconcile (the slow part gone) applies the unit again, and the provisioner still recorded nothing. */
async function expectConverges(dir: string, moduleDir: string, env: Record<string, string>, pre: string[] = []) {
  rmSync(join(moduleDir, 'slow'));
  rmSync(join(moduleDir, 'started'));
  if (pre.length) {
    const r = await nyl(dir, pre);
    expect(r.code, out(r)).toBe(0);
  }
  // The create cut short left the resource tainted: its replacement is approved (a destroy waits for a person).
  const rec = await nylJson<Json>(dir, ['reconcile', '-e', 'dev', '--local', '--approve', 'rec'], env);
  expect(rec.code, out(rec)).toBe(0);
  expect(rec.json.rows).toMatchObject([{ unit: 'rec', kind: 'Terraform', result: 'recovered' }]);
  expect(existsSync(join(moduleDir, 'started'))).toBe(true);
  expect(read(join(moduleDir, 'signals'))).toBe('');
  const unit = JSON.parse(git(dir, 'show', 'refs/nyl/dev/observed:units/rec.json'));
  expect(unit.receipt.outputs).toEqual({ greeting: 'hi one' });
  expect(unit.condition).toBeUndefined();
}

/** The log a run kept of the unit (a cancelled run's too): `nyl runs logs`. */
async function runLog(dir: string, run: string, local = true): Promise<string> {
  const r = await nyl(dir, ['runs', 'logs', '-e', 'dev', run, ...(local ? ['--local'] : [])]);
  expect(r.code, out(r)).toBe(0);
  return r.stdout;
}

/** A work repository of the actions (a bare remote over file://) with the module pushed. */
function actionsRepo(): { w: Work; moduleDir: string } {
  const w = setup(ENV_DEV + unitDoc());
  commitFiles(w.dir, moduleFiles(), 'module');
  git(w.dir, 'push', '-q', 'origin', 'main');
  const moduleDir = join(w.dir, MODULE);
  writeFileSync(join(moduleDir, 'slow'), '');
  return { w, moduleDir };
}

function repo(extraUnit = '', aws = false): { dir: string; moduleDir: string } {
  const dir = makeRepo({ 'nyl.yaml': ENV_DEV + unitDoc(extraUnit), ...moduleFiles(aws) });
  const moduleDir = join(dir, MODULE);
  writeFileSync(join(moduleDir, 'slow'), '');
  return { dir, moduleDir };
}

suite('terraform stopped the way it asks: SIGINT to terraform alone, SIGKILL to its group after the grace', () => {
  /** A signal to nyl during the provisioner; with `aws`, a provider process runs through it. */
  const signalled =
    (sig: 'SIGTERM' | 'SIGINT', aws = false) =>
    async () => {
      const { dir, moduleDir } = repo('', aws);
      const debug = tfDebug(aws);
      const run = startNyl(dir, ['reconcile', ...LOCAL, '--json'], debug.env);
      const s = await provisioning(moduleDir, aws);
      run.child.kill(sig);
      const r = await run.done;
      expect(r.code, out(r)).toBe(4);
      const report = JSON.parse(r.stdout);
      expect(report.rows).toMatchObject([
        { unit: 'rec', result: 'uncertain', detail: `run ${report.run} was cancelled during apply` },
      ]);
      expect(report.problems[0].message).toContain(`was cancelled (${sig})`);
      await expectStoppedAsAsked(moduleDir, await runLog(dir, report.run), debug.path, s);
      // (The provider's case converges as the others do, only slower: its schema loads for every command.)
      if (!aws) await expectConverges(dir, moduleDir, {});
    };

  it(
    'SIGTERM to nyl during the provisioner: terraform alone gets SIGINT; the run is cancelled; the next reconcile converges',
    signalled('SIGTERM'),
  );

  it(
    'SIGINT to nyl during the provisioner: terraform alone gets SIGINT; the run is cancelled; the next reconcile converges',
    signalled('SIGINT'),
  );

  (HAS_AWS ? it : it.skip)(
    'SIGTERM to nyl with a go-plugin provider running (hashicorp/aws, local mirror): terraform closes it; no signal ends it',
    { timeout: 90_000 },
    signalled('SIGTERM', true),
  );

  it('a unit timeout during the provisioner: terraform alone gets SIGINT; the unit is uncertain; the next reconcile converges', async () => {
    const { dir, moduleDir } = repo('timeout: 4s\n');
    const debug = tfDebug(false);
    const run = startNyl(dir, ['reconcile', ...LOCAL, '--json'], debug.env);
    const s = await provisioning(moduleDir);
    const r = await run.done;
    expect(r.code, out(r)).toBe(4);
    expect(JSON.parse(r.stdout).rows).toMatchObject([
      { unit: 'rec', result: 'uncertain', detail: 'apply timed out; its effects are unknown' },
    ]);
    const log = git(dir, 'show', 'refs/nyl/dev/observed:logs/rec.txt');
    await expectStoppedAsAsked(moduleDir, log, debug.path, s);
    await expectConverges(dir, moduleDir, {});
  });

  it('nyl SIGKILLed during the provisioner: the watchdog sends SIGINT to terraform alone, its group SIGKILL once terraform ended; after lease break the unit converges', async () => {
    const { dir, moduleDir } = repo();
    const debug = tfDebug(false);
    // nyl's work folder (the tools' output files) where the test can read it once nyl is dead.
    const runnerTemp = tempDir('nyl-runner-temp-');
    const run = startNyl(dir, ['reconcile', ...LOCAL], { ...debug.env, RUNNER_TEMP: runnerTemp });
    const s = await provisioning(moduleDir);
    const groupsFile = readdirSync(runnerTemp).flatMap((d) =>
      readdirSync(join(runnerTemp, d))
        .filter((f) => f.endsWith('-groups'))
        .map((f) => join(runnerTemp, d, f)),
    );
    expect(groupsFile.length).toBe(1);
    // Listed for the watchdog by the tool helper's child: SIGINT, to the leader alone.
    expect(stopsListedIn(groupsFile[0] as string)).toContainEqual({
      pgid: s.pgid,
      signal: 'SIGINT',
      leader: true,
      sent: false,
    });
    const killed = Date.now();
    run.child.kill('SIGKILL');
    expect((await run.done).signal).toBe('SIGKILL');
    const applyLog = () => toolLog(runnerTemp, 'terraform_data.main: Creating...');
    await waitFor('terraform to end', () => applyLog().includes('signal: killed.'), 3_000);
    // Gone once terraform ended: the provisioner's orphaned sleep went with the SIGKILL, well within the grace.
    await waitFor('the group to end', () => groupMembers(s.pgid).length === 0, 3_000);
    expect(Date.now() - killed).toBeLessThan(3_000);
    await expectStoppedAsAsked(moduleDir, applyLog(), debug.path, s);
    await expectConverges(dir, moduleDir, {}, ['lease', 'break', '-e', 'dev', '--local', '--reason', 'nyl was killed']);
  });

  it("the actions' cancel sequence (SIGINT, SIGTERM 7.5 s later, SIGKILL 2.5 s after): terraform alone gets SIGINT; then the post step; the next run converges", {
    timeout: 90_000,
  }, async () => {
    const { w, moduleDir } = actionsRepo();
    const debug = tfDebug(false);
    const inputs = { environment: 'dev', 'cancel-grace': '3s' };
    const main = startStep('reconcile', w, { inputs, runId: '5001', env: debug.env });
    const s = await Promise.race([
      provisioning(moduleDir),
      main.done.then((r) => {
        throw new Error(`reconcile ended before the provisioner started:\n${r.stdout}\n${r.stderr}`);
      }),
    ]);
    const { step: m, sent } = await runnerCancel(main);
    expect(sent, 'the runner had to go on').toEqual(['SIGINT']);
    expect(m.code, m.stdout + m.stderr).toBe(1);
    expect(m.outputs).toMatchObject({ result: 'uncertain', 'exit-code': '4' });
    expect(m.state).toMatchObject({ main: 'finished' });
    // The runner runs the post step next: its main step finished, nothing for it to stop.
    const post = await step('post', w, { runId: '5001', inputs, state: m.state });
    expect(post.code, post.stdout + post.stderr).toBe(0);
    await expectStoppedAsAsked(moduleDir, await runLog(w.dir, m.outputs.run as string, false), debug.path, s);

    rmSync(join(moduleDir, 'slow'));
    const next = await step('reconcile', w, { inputs: { environment: 'dev', approve: 'rec' }, runId: '5002' });
    expect(next.code, next.stdout + next.stderr).toBe(0);
    expect(JSON.parse(next.outputs.units as string)).toMatchObject([{ unit: 'rec', result: 'recovered' }]);
    expect(read(join(moduleDir, 'signals'))).toBe('');
  });

  it('the main step SIGKILLed: the watchdog interrupts terraform; the post step does not interrupt it again, waits for it, releases the lease', {
    timeout: 90_000,
  }, async () => {
    const { w, moduleDir } = actionsRepo();
    const debug = tfDebug(false);
    const runnerTemp = tempDir('nyl-runner-temp-');
    const inputs = { environment: 'dev', 'cancel-grace': '3s' };
    const main = startStep('reconcile', w, { inputs, runId: '5101', env: { ...debug.env, RUNNER_TEMP: runnerTemp } });
    const s = await provisioning(moduleDir);
    main.child.kill('SIGKILL');
    const killed = await main.done;
    expect(killed.signal).toBe('SIGKILL');
    const post = await step('post', w, { runId: '5101', inputs, state: killed.state });
    expect(post.code, post.stdout + post.stderr).toBe(0);
    expect(groupMembers(s.pgid)).toEqual([]);
    const applyLog = toolLog(runnerTemp, 'terraform_data.main: Creating...');
    await expectStoppedAsAsked(moduleDir, applyLog, debug.path, s);

    rmSync(join(moduleDir, 'slow'));
    const next = await step('reconcile', w, { inputs: { environment: 'dev', approve: 'rec' }, runId: '5102' });
    expect(next.code, next.stdout + next.stderr).toBe(0);
    expect(JSON.parse(next.outputs.units as string)).toMatchObject([{ unit: 'rec', result: 'recovered' }]);
  });
});

/** The runner's cancel: SIGINT to the node process only, SIGTERM 7.5 s later, SIGKILL 2.5 s after that, while it lives. */
async function runnerCancel(r: Step) {
  const sent: NodeJS.Signals[] = [];
  let exited = false;
  r.child.on('exit', () => {
    exited = true;
  });
  const signal = (sig: NodeJS.Signals) => {
    if (exited || r.child.exitCode !== null || r.child.signalCode !== null) return;
    sent.push(sig);
    process.kill(r.pid, sig);
  };
  signal('SIGINT');
  const term = setTimeout(() => signal('SIGTERM'), 7_500);
  const kill = setTimeout(() => signal('SIGKILL'), 10_000);
  const done = await r.done;
  clearTimeout(term);
  clearTimeout(kill);
  return { step: done, sent };
}
