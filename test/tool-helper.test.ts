/**
 * Tools start through long-lived bash helpers (src/core/proc/spawner.ts), not by Node forking
 * itself per tool, and get everything a direct spawn gave them: their own process group, the exit
 * status or the signal that ended them, exactly the environment asked for, the signals nyl
 * forwards (SIGINT included), timeouts, start failures that made no effect, and a log readable
 * while they run. Real processes; process groups read from /proc.
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { liveTail } from '../src/core/drivers/live-log.js';
import { type ProcessOptions, runProcess } from '../src/core/drivers/process.js';
import { helperStats, launchTool, useToolHelpers } from '../src/core/proc/spawner.js';
import { groupsListedIn, watchdogStateFile } from '../src/core/proc/watchdog.js';
import { Cancellation } from '../src/core/util/cancel.js';
import { masker } from '../src/core/util/mask.js';
import { sleep, tempDir, waitForFile } from './helpers/repo.js';

const run = (script: string, more: Partial<ProcessOptions> = {}) =>
  runProcess({ script, cwd: tempDir('nyl-tool-'), timeoutMs: 30_000, ...more });

/** Process group and signals a process was started with, from /proc (scripts write their pid to a file and rename it: never read half-written). */
function procFacts(pid: number): { pgrp: number; ignored: bigint } {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const pgrp = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[2]);
  const ignored = BigInt(`0x${/SigIgn:\s+([0-9a-f]+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1]}`);
  return { pgrp, ignored };
}

/** The signals a process ignores and blocks, from /proc. */
const readMasks = (pid: number): string =>
  readFileSync(`/proc/${pid}/status`, 'utf8')
    .split('\n')
    .filter((l) => /^Sig(Ign|Blk):/.test(l))
    .join('\n');

/**
 * The masks of a script once it settled: bash blocks SIGINT and SIGTERM for an instant around each
 * fork (the `sleep 30 &`), so one read can land in that instant. Two reads 50 ms apart that agree.
 */
async function signalMasks(pid: number): Promise<string> {
  let last = readMasks(pid);
  for (let i = 0; i < 40; i++) {
    await sleep(50);
    const now = readMasks(pid);
    if (now === last) return now;
    last = now;
  }
  return last;
}

afterEach(() => useToolHelpers(true));

describe('tools started by the helpers', () => {
  it('run in process groups of their own; Node starts no process per tool', async () => {
    const dir = tempDir('nyl-tool-');
    await run('true'); // a helper exists from here on
    const before = helperStats.starts;
    const pids: number[] = [];
    for (let i = 0; i < 8; i++) {
      const r = await run(`echo $$ > ${dir}/pid; cat /proc/$$/stat > ${dir}/stat`);
      expect(r).toMatchObject({ started: true, exitCode: 0 });
      const pid = Number(readFileSync(join(dir, 'pid'), 'utf8'));
      const stat = readFileSync(join(dir, 'stat'), 'utf8');
      expect(Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[2]), 'its own group').toBe(pid);
      pids.push(pid);
    }
    expect(new Set(pids).size).toBe(8);
    expect(procFacts(process.pid).pgrp).not.toBe(pids[0]);
    // One at a time: the helper that ran the first ran them all.
    expect(helperStats.starts).toBe(before);
  });

  it('as many helpers as tools ran at once', async () => {
    await Promise.all([1, 2, 3].map(() => run('true')));
    const before = helperStats.starts;
    const all = await Promise.all([1, 2, 3].map(() => run('sleep 0.2')));
    expect(all.every((r) => r.exitCode === 0)).toBe(true);
    expect(helperStats.starts).toBe(before);
  });

  it('tell an exit status past 128 from the signal that ended the tool', async () => {
    expect(await run('exit 137')).toMatchObject({ started: true, exitCode: 137, signal: null });
    expect(await run('exit 143')).toMatchObject({ exitCode: 143, signal: null });
    expect(await run('kill -KILL $$')).toMatchObject({ started: true, exitCode: null, signal: 'SIGKILL' });
    expect(await run('kill -TERM $$')).toMatchObject({ exitCode: null, signal: 'SIGTERM' });
    expect(await run('kill -SEGV $$')).toMatchObject({ exitCode: null, signal: 'SIGSEGV' });
    expect(await run('echo out; echo err >&2; exit 3')).toMatchObject({ exitCode: 3, tail: 'out\nerr\n' });
  });

  it('a script sees itself as bash, its arguments and folder as asked, and nothing on stdin', async () => {
    const cwd = tempDir("nyl-it's a folder-");
    const r = await runProcess({ script: 'echo "$0|$PWD"; cat; echo end', cwd, timeoutMs: 30_000 });
    expect(r.tail).toBe(`bash|${cwd}\nend\n`);
  });

  it('the environment is exactly what a direct spawn gives: added, changed, removed, odd values', async () => {
    const odd = 'it\'s "quoted" $HOME `x` \\ \n second line ✓';
    const env: NodeJS.ProcessEnv = { ...process.env, NYL_ODD: odd, NYL_EMPTY: '', HOME: '/nowhere', SHLVL: '7' };
    delete env.USER;
    delete env.LANG;
    // What the tool was started with: its process's initial environment, every entry.
    const cwd = tempDir('nyl-tool-');
    const received = async (more: Partial<ProcessOptions>) => {
      const r = await runProcess({
        argv: ['bash', '--noprofile', '--norc', '-c', 'cat /proc/$$/environ'],
        cwd,
        timeoutMs: 30_000,
        stdoutBytes: 1 << 20,
        ...more,
      });
      expect(r.exitCode).toBe(0);
      return r.stdout
        .split('\0')
        .filter((e) => e && !e.startsWith('_='))
        .sort();
    };
    const starts = helperStats.starts;
    const helped = await received({ env });
    useToolHelpers(false);
    const direct = await received({ env });
    expect(helped).toEqual(direct);
    expect(helped).toContain(`NYL_ODD=${odd}`);
    expect(helped).toContain('NYL_EMPTY=');
    expect(helped).toContain('SHLVL=7');
    expect(helped.filter((e) => /^(USER|LANG)=/.test(e))).toEqual([]);
    // Only nyl's additions to its own environment: the same, through the helpers and directly.
    useToolHelpers(true);
    const extraEnv = { NYL_UNIT: 'a b', NYL_ODD: odd };
    const helpedExtra = await received({ extraEnv });
    useToolHelpers(false);
    expect(helpedExtra).toEqual(await received({ extraEnv }));
    expect(helpedExtra).toContain('NYL_UNIT=a b');
    expect(helperStats.starts - starts).toBeLessThanOrEqual(1);
  });

  it('SIGINT and SIGTERM reach the script, as a direct spawn has them: not ignored', async () => {
    const masks: Record<string, string> = {};
    for (const helpers of [true, false]) {
      useToolHelpers(helpers);
      const ctl = tempDir('nyl-ctl-');
      const cancellation = new Cancellation(5_000);
      const p = run(`trap 'echo got INT; exit 5' INT; echo $$ > ${ctl}/p; mv ${ctl}/p ${ctl}/pid; sleep 30 & wait`, {
        cancellation,
      });
      await waitForFile(join(ctl, 'pid'));
      const pid = Number(readFileSync(join(ctl, 'pid'), 'utf8'));
      expect(procFacts(pid).ignored & 0b10n, `SIGINT ignored (helpers: ${helpers})`).toBe(0n);
      masks[String(helpers)] = await signalMasks(pid);
      cancellation.cancel('SIGINT');
      expect(await p).toMatchObject({ started: true, cancelled: true, exitCode: 5, tail: 'got INT\n' });
    }
    // Every signal ignored or blocked as with a direct spawn (SIGQUIT, SIGTTOU… included).
    expect(masks.true).toBe(masks.false);
  });

  it('a cancel that comes before the tool started reaches it when it starts', async () => {
    const cancellation = new Cancellation(5_000);
    const p = run('trap "echo got TERM; exit 9" TERM; sleep 30 & wait', { cancellation });
    cancellation.cancel('SIGTERM');
    const r = await p;
    expect(r.cancelled).toBe(true);
    // Either the signal came before its trap was set (killed) or after (its trap ran): never left running.
    expect(r.signal === 'SIGTERM' || r.exitCode === 9).toBe(true);
  });

  it('a timeout sends the stop signal, then SIGKILL after the grace', async () => {
    const r = await run(`trap '' TERM; echo started; sleep 30`, {
      timeoutMs: 300,
      cancellation: new Cancellation(200),
    });
    expect(r).toMatchObject({ started: true, timedOut: true, exitCode: null, signal: 'SIGKILL', tail: 'started\n' });
  });

  it('what cannot be started is not started: no program, no folder, a NUL byte', async () => {
    const cwd = tempDir('nyl-tool-');
    const missing = await runProcess({ argv: ['nyl-no-such-tool', 'x'], cwd, env: process.env, timeoutMs: 30_000 });
    expect(missing).toMatchObject({ started: false, exitCode: null });
    expect(missing.startError).toContain('nyl-no-such-tool');
    const notExecutable = join(cwd, 'plain');
    writeFileSync(notExecutable, 'echo hi\n');
    expect(await runProcess({ argv: [notExecutable], cwd, timeoutMs: 30_000 })).toMatchObject({ started: false });
    expect(await run('true', { cwd: join(cwd, 'gone') })).toMatchObject({ started: false });
    expect(await run('echo \u0000 hi')).toMatchObject({ started: false });
    // A program found along the tool's own PATH.
    const found = await runProcess({ argv: ['printenv', 'NYL_X'], cwd, extraEnv: { NYL_X: 'yes' }, timeoutMs: 30_000 });
    expect(found).toMatchObject({ started: true, exitCode: 0, tail: 'yes\n' });
  });

  it('a tool whose output files cannot be created is not started, POSIXLY_CORRECT in its environment or not', async () => {
    const dir = tempDir('nyl-tool-');
    for (const posix of [false, true]) {
      const marker = join(dir, `ran-${posix}`);
      const env = { ...process.env, ...(posix ? { POSIXLY_CORRECT: '1' } : {}) };
      const outcome = await new Promise<string>((resolve) => {
        const launched = launchTool(
          {
            argv: ['/bin/sh', '-c', `touch ${marker}`],
            cwd: dir,
            env,
            stdout: join(dir, 'no-such-folder', 'log'),
            stderr: join(dir, 'no-such-folder', 'log'),
            stopSignal: 'SIGTERM',
          },
          {
            started: () => undefined,
            failed: (why) => resolve(`not started: ${why}`),
            exited: (code, signal) => resolve(`exited ${code ?? signal}`),
            retry: () => resolve('retry'),
          },
        );
        if (!launched) resolve('no helper');
      });
      expect(outcome, `POSIXLY_CORRECT ${posix ? 'set' : 'unset'}`).toBe(
        'not started: its output files could not be created',
      );
      expect(existsSync(marker)).toBe(false);
    }
  });

  it("a running unit's log tail is readable, masked, and gone once it ended", async () => {
    const ctl = tempDir('nyl-ctl-');
    masker.add('tail-secret-4711');
    const cancellation = new Cancellation(5_000);
    const p = run(`echo first; echo tail-secret-4711; printf 'x%.0s' {1..100}; touch ${ctl}/ready; sleep 30`, {
      cancellation,
      liveUnit: 'web',
    });
    await waitForFile(join(ctl, 'ready'));
    const tail = liveTail('web') as string;
    expect(tail).toContain('first\n***\n');
    expect(tail).not.toContain('tail-secret-4711');
    expect(liveTail('web', 10)).toBe('x'.repeat(10));
    expect(liveTail('other')).toBeUndefined();
    cancellation.cancel('SIGTERM');
    await p;
    expect(liveTail('web')).toBeUndefined();
  });
});

describe("the watchdog's list of groups", () => {
  it('lists a running tool and, once it ended with nothing left of its group, no longer', async () => {
    const ctl = tempDir('nyl-ctl-');
    const cancellation = new Cancellation(5_000);
    const p = run(`echo $$ > ${ctl}/p; mv ${ctl}/p ${ctl}/pid; sleep 30 & wait`, { cancellation });
    await waitForFile(join(ctl, 'pid'));
    const pid = Number(readFileSync(join(ctl, 'pid'), 'utf8'));
    expect(groupsListedIn(watchdogStateFile())).toContain(pid);
    cancellation.cancel('SIGTERM');
    await p;
    // The helper struck it off before it reported the end: nothing left for nyl to write.
    const quick = await run(`echo $$ > ${ctl}/pid2`);
    expect(quick.exitCode).toBe(0);
    expect(groupsListedIn(watchdogStateFile())).not.toContain(Number(readFileSync(join(ctl, 'pid2'), 'utf8')));
  });

  it('is a log of started and ended groups; the groups still listed are those started and not ended', () => {
    const file = join(tempDir('nyl-wd-'), 'groups');
    writeFileSync(file, '+101\n+102\n-101\n+103\n104\n-103\n');
    expect(groupsListedIn(file).sort()).toEqual([102, 104]);
    writeFileSync(file, '');
    expect(groupsListedIn(file)).toEqual([]);
    expect(groupsListedIn(join(file, 'missing'))).toEqual([]);
  });
});
