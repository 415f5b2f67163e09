import { spawn } from 'node:child_process';

/** Process spawns are the cost on a runner: every git process goes through here and is counted. */
export const gitStats = { spawns: 0, commands: [] as string[] };

export interface GitResult {
  code: number;
  stdout: Buffer;
  stderr: string;
}

export interface GitRunOptions {
  cwd: string;
  input?: Buffer | string;
  env?: NodeJS.ProcessEnv;
}

/** Keeps git from prompting or paging; a prompt on a runner hangs the job. */
export function gitEnv(extra?: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  return {
    ...process.env,
    GIT_TERMINAL_PROMPT: '0',
    GIT_PAGER: 'cat',
    LC_ALL: 'C',
    GIT_FLUSH: '1',
    ...extra,
  };
}

export function runGit(args: string[], opts: GitRunOptions): Promise<GitResult> {
  gitStats.spawns++;
  gitStats.commands.push(args[0] ?? '');
  return new Promise((resolve, reject) => {
    // Its own process group: a Ctrl+C at the terminal reaches nyl, which finishes its writes
    // (a push cut in half would leave the lease held), not git in the middle of one.
    const child = spawn('git', args, {
      detached: true,
      cwd: opts.cwd,
      env: gitEnv(opts.env),
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    child.stdout.on('data', (d: Buffer) => out.push(d));
    child.stderr.on('data', (d: Buffer) => err.push(d));
    child.on('error', reject);
    child.on('close', (code) =>
      resolve({
        code: code ?? 128,
        stdout: Buffer.concat(out),
        stderr: Buffer.concat(err).toString('utf8'),
      }),
    );
    child.stdin.on('error', () => {
      /* git may exit before reading all input; its exit code tells */
    });
    child.stdin.end(opts.input ?? '');
  });
}
