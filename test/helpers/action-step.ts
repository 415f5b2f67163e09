/**
 * The runner's side of a node action, for tests: a work repository with a bare remote, and each
 * step started as the runner starts it (`node dist/<entry>/index.js` with INPUT_*, STATE_*,
 * GITHUB_* and the command files), its outputs, state, summary and annotations read back.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { cpSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll } from 'vitest';
import { GIT_ENV, git, makeRepo, tempDir } from './repo.js';

const DIST = resolve(__dirname, '../../dist');
export const SERVER_URL = 'https://github.com';
export const REPOSITORY = 'owner/repo';
/** Files the units and tests write in the work repository: never committed. */
export const GITIGNORE = '*.state\nctl/\n';

/**
 * The bundles the tests run: a copy of dist/ taken once, so that another vitest process
 * rebuilding dist/ cannot swap chunks under a running action.
 */
let dist = DIST;
beforeAll(() => {
  const copy = join(tempDir('nyl-actions-dist-'), 'dist');
  cpSync(DIST, copy, { recursive: true });
  dist = copy;
});

const started = new Set<ChildProcess>();
afterAll(() => {
  for (const c of started) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
  // Temporary folders go with the harness's own clean-up (helpers/repo.ts).
});

// --- the runner's side --------------------------------------------------------------------------

export interface Work {
  /** GITHUB_WORKSPACE: the checked-out repository. */
  dir: string;
  /** Its origin: a bare repository over file://, read directly by assertions. */
  bare: string;
  /** Control files of the units (ignored by git). */
  ctl: string;
}

/** A work repository with `nyl.yaml` committed and pushed to `origin`, a bare remote over file://. */
export function setup(config: string): Work {
  const root = tempDir('nyl-actions-remote-');
  git(root, 'init', '-q', '--bare', '-b', 'main', 'remote.git');
  const bare = join(root, 'remote.git');
  const dir = makeRepo({ 'nyl.yaml': config, '.gitignore': GITIGNORE });
  git(dir, 'remote', 'add', 'origin', `file://${bare}`);
  git(dir, 'push', '-q', 'origin', 'main');
  const ctl = join(dir, 'ctl');
  mkdirSync(ctl);
  return { dir, bare, ctl };
}

export interface Annotation {
  command: string;
  props: Record<string, string>;
  message: string;
}

export interface Step {
  /** Exit code of node; null when it died by a signal. */
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
  outputs: Record<string, string>;
  state: Record<string, string>;
  summary: string;
  annotations: Annotation[];
  /** When the node process exited (Date.now()). */
  exitedAt: number;
}

export interface Running {
  child: ChildProcess;
  pid: number;
  done: Promise<Step>;
}

export interface StepOptions {
  inputs?: Record<string, string>;
  /** Saved state of the main step, given back to the post step as STATE_<name>. */
  state?: Record<string, string>;
  /** GITHUB_RUN_ID: one per workflow run. */
  runId?: string;
  env?: Record<string, string>;
}

/** The environment the test process was given, without anything a runner would set for a step. */
function cleanEnv(): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env))
    if (v !== undefined && !/^(GITHUB_|INPUT_|STATE_|ACTIONS_|RUNNER_|NYL_)/.test(k) && k !== 'CI') env[k] = v;
  return env;
}

const unescapeData = (s: string) => s.replace(/%0D/g, '\r').replace(/%0A/g, '\n').replace(/%25/g, '%');
const unescapeProp = (s: string) => unescapeData(s.replace(/%3A/g, ':').replace(/%2C/g, ','));

/** Workflow commands on stdout: `::name k=v,k=v::message`. */
function parseAnnotations(stdout: string): Annotation[] {
  const out: Annotation[] = [];
  for (const line of stdout.split('\n')) {
    const m = /^::([a-z-]+)(?: ([^:]*))?::(.*)$/.exec(line);
    if (!m) continue;
    const props: Record<string, string> = {};
    for (const kv of (m[2] ?? '').split(',').filter(Boolean)) {
      const i = kv.indexOf('=');
      props[kv.slice(0, i)] = unescapeProp(kv.slice(i + 1));
    }
    out.push({ command: m[1] as string, props, message: unescapeData(m[3] ?? '') });
  }
  return out;
}

/** A GITHUB_OUTPUT / GITHUB_STATE file: `name<<delimiter` heredocs (or legacy `name=value` lines). */
function parseCommandFile(text: string): Record<string, string> {
  const out: Record<string, string> = {};
  const lines = text.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i] as string;
    if (!line) continue;
    const h = /^([^=]+?)<<(.+)$/.exec(line);
    if (h) {
      const delimiter = h[2] as string;
      const value: string[] = [];
      for (i++; i < lines.length && lines[i] !== delimiter; i++) value.push(lines[i] as string);
      if (i >= lines.length) throw new Error(`unterminated ${h[1]}<<${delimiter} in\n${text}`);
      out[h[1] as string] = value.join('\n');
    } else {
      const eq = line.indexOf('=');
      if (eq < 0) throw new Error(`not a command file line: ${JSON.stringify(line)}`);
      out[line.slice(0, eq)] = line.slice(eq + 1);
    }
  }
  return out;
}

/** Starts `node dist/<entry>/index.js` as the runner starts a step of a node action. */
export function startStep(entry: string, w: Work, o: StepOptions = {}): Running {
  const files = tempDir('nyl-actions-step-');
  const output = join(files, 'output');
  const summary = join(files, 'summary');
  const state = join(files, 'state');
  for (const f of [output, summary, state]) writeFileSync(f, '');
  const env: Record<string, string> = {
    ...cleanEnv(),
    ...GIT_ENV,
    NO_PROXY: '127.0.0.1,localhost',
    no_proxy: '127.0.0.1,localhost',
    CI: 'true',
    GITHUB_ACTIONS: 'true',
    GITHUB_OUTPUT: output,
    GITHUB_STEP_SUMMARY: summary,
    GITHUB_STATE: state,
    GITHUB_WORKSPACE: w.dir,
    GITHUB_RUN_ID: o.runId ?? '1001',
    GITHUB_RUN_ATTEMPT: '1',
    GITHUB_REPOSITORY: REPOSITORY,
    GITHUB_SERVER_URL: SERVER_URL,
    GITHUB_ACTOR: 'octocat',
    GITHUB_EVENT_NAME: 'workflow_dispatch',
    ...Object.fromEntries(Object.entries(o.inputs ?? {}).map(([k, v]) => [`INPUT_${k.toUpperCase()}`, v])),
    ...Object.fromEntries(Object.entries(o.state ?? {}).map(([k, v]) => [`STATE_${k}`, v])),
    ...o.env,
  };
  const child = spawn('node', [join(dist, entry, 'index.js')], { cwd: w.dir, env, stdio: ['ignore', 'pipe', 'pipe'] });
  started.add(child);
  let stdout = '';
  let stderr = '';
  child.stdout?.on('data', (d) => {
    stdout += d;
  });
  child.stderr?.on('data', (d) => {
    stderr += d;
  });
  let exitedAt = 0;
  child.on('exit', () => {
    exitedAt = Date.now();
  });
  const done = new Promise<Step>((res, rej) => {
    child.on('error', rej);
    child.on('close', (code, signal) =>
      res({
        code,
        signal,
        stdout,
        stderr,
        outputs: parseCommandFile(readFileSync(output, 'utf8')),
        state: parseCommandFile(readFileSync(state, 'utf8')),
        summary: readFileSync(summary, 'utf8'),
        annotations: parseAnnotations(stdout),
        exitedAt,
      }),
    );
  });
  return { child, pid: child.pid as number, done };
}

export const step = (entry: string, w: Work, o: StepOptions = {}) => startStep(entry, w, o).done;
export const action = (name: string, w: Work, inputs: Record<string, string>, o: Omit<StepOptions, 'inputs'> = {}) =>
  step(name, w, { ...o, inputs: { environment: 'dev', ...inputs } });
