import { type ChildProcess, execFileSync, type SpawnOptions, spawn } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { afterAll } from 'vitest';

export const CLI = resolve(__dirname, '../../dist/cli.js');

const made: string[] = [];
afterAll(() => {
  if (process.env.NYL_KEEP_TEST_REPOS) return;
  for (const d of made.splice(0)) rmSync(d, { recursive: true, force: true });
});

export const GIT_ENV = {
  GIT_AUTHOR_NAME: 'Test Operator',
  GIT_AUTHOR_EMAIL: 'operator@example.com',
  GIT_COMMITTER_NAME: 'Test Operator',
  GIT_COMMITTER_EMAIL: 'operator@example.com',
  GIT_CONFIG_NOSYSTEM: '1',
  HOME: tmpdir(),
};

export function git(cwd: string, ...args: string[]): string {
  return execFileSync('git', args, { cwd, env: { ...process.env, ...GIT_ENV }, encoding: 'utf8' }).trim();
}

/** A fresh repository in a temporary folder with `files` committed on main. */
export function makeRepo(files: Record<string, string>): string {
  const dir = mkdtempSync(join(tmpdir(), 'nyl-test-'));
  made.push(dir);
  git(dir, 'init', '-q', '-b', 'main');
  commitFiles(dir, files);
  return dir;
}

export function writeFiles(dir: string, files: Record<string, string>): void {
  for (const [p, text] of Object.entries(files)) {
    const full = join(dir, p);
    mkdirSync(dirname(full), { recursive: true });
    writeFileSync(full, text, { mode: p.endsWith('.sh') ? 0o755 : 0o644 });
  }
}

export function commitFiles(dir: string, files: Record<string, string>, message = 'change'): string {
  writeFiles(dir, files);
  git(dir, 'add', '-A');
  git(dir, 'commit', '-q', '--allow-empty', '-m', message);
  return git(dir, 'rev-parse', 'HEAD');
}

export interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
}

export interface Running {
  child: ChildProcess;
  /**
   * Resolves when the process ends: its exit code (-1 on a signal), the signal, output, wall time,
   * and how long after it printed its last output it exited (`lingerMs`).
   */
  done: Promise<CliResult & { ms: number; lingerMs: number; signal: NodeJS.Signals | null }>;
}

/** Starts the built `nyl` in `cwd` as a separate process, kept in hand to race or signal it. */
export function startNyl(cwd: string, args: string[], env: Record<string, string> = {}): Running {
  const t0 = Date.now();
  const opts: SpawnOptions = {
    cwd,
    env: { ...process.env, ...GIT_ENV, NYL_PROGRESS: '0', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  };
  const child = spawn('node', [CLI, ...args], opts);
  let stdout = '';
  let stderr = '';
  let printed = t0;
  child.stdout?.on('data', (d) => {
    stdout += d;
    printed = Date.now();
  });
  child.stderr?.on('data', (d) => {
    stderr += d;
    printed = Date.now();
  });
  const done = new Promise<CliResult & { ms: number; lingerMs: number; signal: NodeJS.Signals | null }>((res, rej) => {
    child.on('error', rej);
    child.on('exit', (code, signal) => {
      const exited = Date.now();
      child.on('close', () =>
        res({ code: code ?? -1, signal, stdout, stderr, ms: exited - t0, lingerMs: Math.max(0, exited - printed) }),
      );
    });
  });
  return { child, done };
}

/** Runs the built `nyl` in `cwd` as a separate process. */
export function nyl(
  cwd: string,
  args: string[],
  env: Record<string, string> = {},
): Promise<CliResult & { ms: number; lingerMs: number }> {
  return startNyl(cwd, args, env).done;
}

/** `nyl … --json` parsed; says what was printed when it is not JSON. */
export async function nylJson<T = Record<string, unknown>>(
  cwd: string,
  args: string[],
  env: Record<string, string> = {},
) {
  const r = await nyl(cwd, [...args, '--json'], env);
  try {
    return { ...r, json: JSON.parse(r.stdout) as T };
  } catch {
    throw new Error(`not JSON (exit ${r.code}):\n${r.stdout}\n${r.stderr}`);
  }
}

/** Rows of a table printed by nyl, as objects keyed by header. */
export function parseTable(text: string): Record<string, string>[] {
  const lines = text.split('\n');
  const start = lines.findIndex((l) => l.startsWith('UNIT '));
  if (start < 0) return [];
  const header = lines[start] as string;
  const cols: { name: string; at: number }[] = [];
  const re = /(\S+(?: \S+)*)/g;
  for (const m of header.matchAll(re)) cols.push({ name: m[1] as string, at: m.index ?? 0 });
  const rows: Record<string, string>[] = [];
  for (const line of lines.slice(start + 1)) {
    if (!line.trim()) break;
    const row: Record<string, string> = {};
    cols.forEach((c, i) => {
      const end = i + 1 < cols.length ? (cols[i + 1] as { at: number }).at : undefined;
      row[c.name] = line.slice(c.at, end).trim();
    });
    rows.push(row);
  }
  return rows;
}

export const ENV_DEV = 'kind: Environment\nname: dev\n';

/** A Command unit document. */
export function command(name: string, run: string, extra: Record<string, unknown> = {}): string {
  const { spec, ...rest } = extra as { spec?: Record<string, unknown> };
  const lines = ['---', 'kind: Command', `name: ${name}`];
  for (const [k, v] of Object.entries(rest)) lines.push(`${k}: ${JSON.stringify(v)}`);
  lines.push('spec:', `  run: ${JSON.stringify(run)}`);
  for (const [k, v] of Object.entries(spec ?? {})) lines.push(`  ${k}: ${JSON.stringify(v)}`);
  return `${lines.join('\n')}\n`;
}

/** A temporary folder, removed after the test file (unless NYL_KEEP_TEST_REPOS is set). */
export function tempDir(prefix = 'nyl-test-'): string {
  const d = mkdtempSync(join(tmpdir(), prefix));
  made.push(d);
  return d;
}

/** A copy of `dir` in a fresh temporary folder: what a file prepared once, each test gets its own of. */
export function copyDir(dir: string, prefix = 'nyl-test-'): string {
  const d = tempDir(prefix);
  cpSync(dir, d, { recursive: true });
  return d;
}

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Waits for a file a unit writes (e.g. to say it started). */
export async function waitForFile(path: string, timeoutMs = 30_000): Promise<void> {
  const until = Date.now() + timeoutMs;
  while (!existsSync(path)) {
    if (Date.now() > until) throw new Error(`timed out waiting for ${path}`);
    await sleep(25);
  }
}
