/**
 * Real state for the `nyl site` tests, made with the built CLI across three environments in a
 * promotion line (dev, then staging, then prod):
 * - dev: a run that succeeds; one cancelled by SIGINT; one SIGKILLed mid-unit (its lease broken)
 *   and taken over by the next run, which succeeds; a superseded run (an older commit); a run
 *   with a failed unit and an uncertain one (timed out); a held unit; a unit `nyl verify` finds
 *   drifted.
 * - staging: a run that succeeds, then its promotion gate waits on dev's failures.
 * - prod: a run that succeeds, then a native repair (`nyl exec` on a held unit) that leaves the
 *   unit's next execution awaiting approval.
 * Then the site built into a fresh folder. Shared by site.test.ts and site-browser.test.ts.
 */
import {
  cpSync,
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'vitest';
import { command, commitFiles, git, makeRepo, nyl, nylJson, sleep, startNyl, tempDir, waitForFile } from './repo.js';

export const SECRET = 'DEPLOY_TOKEN';
export const VALUE = 's3cr3tvalue99';
export const ENV = { [SECRET]: VALUE };
export const LOCAL = ['--local'];

const ENVS =
  'kind: Environment\nname: dev\nurl: https://${{ units.web.outputs.host }}/app\n' +
  '---\nkind: Environment\nname: staging\npromotion: {after: [dev]}\n' +
  '---\nkind: Environment\nname: prod\nproduction: true\npromotion: {after: [staging]}\n';
const WEB = command(
  'web',
  `echo "host=web.example" >> "$NYL_OUTPUT"; echo "token is $${SECRET}"; echo "tok=$${SECRET}" >> "$NYL_OUTPUT"`,
);
const KEEP = command('keep', 'echo keep-ran');
/** Idempotent, with a check that reads drifty.state (in the repository folder): `bad` there is drift. */
const drifty = (v: string) =>
  command('drifty', `echo ${v}; echo ok > drifty.state`, {
    spec: {
      idempotent: true,
      check: 's=$(cat drifty.state 2>/dev/null || echo missing); [ "$s" = ok ] && exit 0; echo "drifty is $s"; exit 2',
    },
  });
const sleeper = (run: string) => command('sleeper', run, { spec: { idempotent: true } });
const FAILING = command('bad', 'echo failing-now; exit 3') + command('slow', 'sleep 5', { timeout: '1s' });

export interface SiteRunLine {
  run: string;
  state: string;
  source: string;
  detail: string;
}

export interface SiteState {
  /** The repository. */
  dir: string;
  /** The site's folder. */
  out: string;
  /** Each environment's runs, as `nyl runs` lists them (newest first). */
  runs: Record<'dev' | 'staging' | 'prod', SiteRunLine[]>;
  /** dev's runs. */
  devRuns: SiteRunLine[];
}

async function ok(dir: string, args: string[], code = 0, env: Record<string, string> = {}) {
  const end = args.includes('--') ? args.indexOf('--') : args.length;
  const r = await nyl(dir, [...args.slice(0, end), ...LOCAL, ...args.slice(end)], { ...ENV, ...env });
  expect(r.code, `nyl ${args.join(' ')}: ${r.stdout}${r.stderr}`).toBe(code);
  return r;
}

/** The first commit applied everywhere; prod's `drifty` repaired natively (so its next execution waits). */
async function firstRound(dir: string) {
  for (const env of ['dev', 'staging', 'prod']) await ok(dir, ['reconcile', '-e', env]);
  const reason = ['--reason', 'state file fixed by hand'];
  await ok(dir, ['hold', '-e', 'prod', '--unit', 'drifty', ...reason]);
  await ok(dir, ['exec', '-e', 'prod', '--unit', 'drifty', ...reason, '--', 'true']);
  await ok(dir, ['resume', '-e', 'prod', '--unit', 'drifty', ...reason]);
}

/** dev: a run cancelled by SIGINT, one SIGKILLed mid-unit and its lease broken, the run that takes over. */
async function cancelledKilledTakenOver(dir: string, config: string) {
  const ctl = tempDir('nyl-site-ctl-');
  commitFiles(dir, { 'nyl.yaml': config + sleeper(`echo going; touch ${ctl}/cancel; sleep 30`) });
  const cancelled = startNyl(dir, ['reconcile', '-e', 'dev', '--cancel-grace', '1s', ...LOCAL], ENV);
  await waitForFile(join(ctl, 'cancel'));
  cancelled.child.kill('SIGINT');
  expect((await cancelled.done).code).toBe(4);
  commitFiles(dir, { 'nyl.yaml': config + sleeper(`echo halfway-there; touch ${ctl}/kill; sleep 60`) });
  const killed = startNyl(dir, ['reconcile', '-e', 'dev', ...LOCAL], { ...ENV, NYL_HEARTBEAT_INTERVAL: '300ms' });
  await waitForFile(join(ctl, 'kill'));
  await tailRecorded(dir, 'sleeper');
  killed.child.kill('SIGKILL');
  await killed.done;
  await ok(dir, ['lease', 'break', '-e', 'dev', '--reason', 'runner died']);
  commitFiles(dir, { 'nyl.yaml': config + sleeper('echo slept') });
  await ok(dir, ['reconcile', '-e', 'dev']);
}

/** Until a heartbeat has put the unit's output so far on the live run's ref (what a killed run keeps). */
async function tailRecorded(dir: string, unit: string) {
  for (let i = 0; i < 300; i++) {
    const tip = git(dir, 'for-each-ref', '--format=%(refname)', 'refs/nyl/dev/runs/').split('\n').pop();
    if (tip && git(dir, 'ls-tree', '-r', '--name-only', tip).includes(`units/${unit}/tail.txt`)) return;
    await sleep(100);
  }
  throw new Error(`no heartbeat recorded the output of ${unit}`);
}

async function runsOf(dir: string, env: string): Promise<SiteRunLine[]> {
  const r = await nylJson<{ facts: { runs: SiteRunLine[] } }>(dir, ['runs', '-e', env, ...LOCAL]);
  expect(r.code, r.stderr).toBe(0);
  return r.json.facts.runs;
}

/** Makes the state and builds the site from it (asserting each step's exit code). */
export async function makeSiteState(): Promise<SiteState> {
  const base = ENVS + WEB + KEEP;
  const dir = makeRepo({ 'nyl.yaml': base + drifty('v1') });
  const first = git(dir, 'rev-parse', 'HEAD');
  await firstRound(dir);
  const config = base + drifty('v2');
  await cancelledKilledTakenOver(dir, config);
  // Superseded: a deploy of the first commit, older than what dev has.
  git(dir, 'checkout', '-q', first);
  expect((await ok(dir, ['reconcile', '-e', 'dev'])).stdout).toMatch(/superseded/);
  git(dir, 'checkout', '-q', 'main');
  // A failed unit and an uncertain one (timed out, not idempotent, no inspect); a held unit; drift.
  commitFiles(dir, { 'nyl.yaml': config + sleeper('echo slept') + FAILING });
  await ok(dir, ['reconcile', '-e', 'dev'], 4);
  await ok(dir, ['hold', '-e', 'dev', '--unit', 'keep', '--reason', 'maintenance']);
  writeFileSync(join(dir, 'drifty.state'), 'bad\n');
  await ok(dir, ['verify', '-e', 'dev'], 3);
  // staging waits at its promotion gate.
  await ok(dir, ['reconcile', '-e', 'staging'], 2);
  const runs = {
    dev: await runsOf(dir, 'dev'),
    staging: await runsOf(dir, 'staging'),
    prod: await runsOf(dir, 'prod'),
  };
  const out = join(tempDir('nyl-site-'), 'site');
  const site = await ok(dir, ['site', '--out', out]);
  expect(site.stdout).toMatch(/^site: \d+ pages written\n {2}folder: /);
  return { dir, out, runs, devRuns: runs.dev };
}

const CLI = new URL('../../dist/cli.js', import.meta.url);

/**
 * The state, made once per test run for every file that asks (it takes ~20 s of real runs): the
 * first caller makes it under a folder named for this run (the runner's process and the CLI
 * build), the others wait for its answer. The folders live in the temporary directory, which the
 * state's own repositories use too.
 */
export async function sharedSiteState(): Promise<SiteState> {
  const key = join(tmpdir(), `nyl-site-state-${process.ppid}-${Math.round(statSync(CLI).mtimeMs)}`);
  removeStale();
  const answer = join(key, 'state.json');
  const failed = join(key, 'failed');
  try {
    mkdirSync(key);
  } catch {
    for (let i = 0; i < 1800 && !existsSync(answer) && !existsSync(failed); i++) await sleep(100);
    if (!existsSync(answer)) throw new Error(`the shared site state was not made (${key})`);
    return JSON.parse(readFileSync(answer, 'utf8')) as SiteState;
  }
  try {
    const made = await makeSiteState();
    // Kept past this file's cleanup of its temporary folders: the other files read them later.
    cpSync(made.dir, join(key, 'repo'), { recursive: true });
    cpSync(made.out, join(key, 'site'), { recursive: true });
    const state = { ...made, dir: join(key, 'repo'), out: join(key, 'site') };
    writeFileSync(`${answer}.tmp`, JSON.stringify(state));
    renameSync(`${answer}.tmp`, answer);
    return state;
  } catch (e) {
    writeFileSync(failed, String(e));
    throw e;
  }
}

/** Shared states of earlier test runs (an hour old): removed. */
function removeStale(): void {
  for (const name of readdirSync(tmpdir()).filter((n) => n.startsWith('nyl-site-state-'))) {
    const p = join(tmpdir(), name);
    try {
      if (Date.now() - statSync(p).mtimeMs > 3_600_000) rmSync(p, { recursive: true, force: true });
    } catch {
      // Another test run removed it first.
    }
  }
}
