import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { isAbsolute, join } from 'node:path';
import type { ExecuteContext } from './driver.js';
import { type ProcessResult, runProcess } from './process.js';
import { stripAnsi, type TfCommands, type TfSpec, tfCommands } from './tofu.js';

/** One command of a session and what it came to. */
export interface Step {
  argv: string[];
  result: ProcessResult;
}

const failedStep = (s: Step) => !s.result.started || s.result.exitCode !== 0 || s.result.timedOut || s.result.cancelled;

type Commands = TfCommands;

/** What every command of a session gets: the binary's commands and the tools' environment. */
interface Setup {
  cmds: Commands;
  env: NodeJS.ProcessEnv;
  spec: TfSpec;
  deadline: number;
}

/** Variables go in a var file in a private folder; a binary given as a path is relative to the repository root. */
async function setUp(ctx: ExecuteContext, defaultBinary: string, dir: string): Promise<Setup> {
  const spec = ctx.unit.spec as unknown as TfSpec;
  let varFile: string | undefined;
  if (spec.variables && Object.keys(spec.variables).length) {
    varFile = join(dir, 'nyl.auto.tfvars.json');
    await writeFile(varFile, JSON.stringify(spec.variables), { mode: 0o600 });
  }
  const bin =
    spec.binary?.includes('/') && !isAbsolute(spec.binary)
      ? join(ctx.cwd, spec.binary)
      : (spec.binary ?? defaultBinary);
  const env = {
    ...process.env,
    TF_IN_AUTOMATION: '1',
    TF_INPUT: '0',
    NYL_ENVIRONMENT: ctx.environment,
    NYL_UNIT: ctx.unit.name,
    NYL_RUN: ctx.run,
    NYL_UID: ctx.unit.uid,
  };
  return { cmds: tfCommands(bin, spec, ctx.cwd, varFile), env, spec, deadline: Date.now() + ctx.timeoutMs };
}

/** One command in the module folder, within what is left of the unit's timeout. */
async function runStep(ctx: ExecuteContext, s: Setup, argv: string[]): Promise<Step> {
  const isSetup = argv === s.cmds.init || argv === s.cmds.workspace;
  const result = await runProcess({
    argv,
    cwd: join(ctx.cwd, s.spec.module),
    env: isSetup ? s.env : { ...s.env, TF_WORKSPACE: s.spec.workspace ?? 'default' },
    timeoutMs: Math.max(1, s.deadline - Date.now()),
    cancellation: ctx.cancellation,
    liveUnit: ctx.unit.name,
    // The tools' graceful stop (they release their state lock and stop their providers), sent to
    // the tool alone: a signal to its group would reach the providers, which die of SIGTERM.
    stopSignal: 'SIGINT',
    stopTarget: 'leader',
    // output -json and show -json are data; plan's stdout is the drift detail.
    stdoutBytes: DATA.has(argv[1] as string) ? 64 * 1024 * 1024 : argv[1] === 'plan' ? 1024 * 1024 : undefined,
  });
  return { argv, result };
}

/** Commands whose stdout is JSON that holds values, sensitive ones too: read, never logged. */
const DATA = new Set(['output', 'show']);

/** What a step adds to the log: `output -json` and `show -json` print sensitive values, and are never logged. */
function logOf(ctx: ExecuteContext, { argv, result }: Step): string {
  if (DATA.has(argv[1] as string)) return '';
  const plan = argv[1] === 'plan' ? ctx.mask(stripAnsi(result.stdout)) : '';
  return `$ ${argv.join(' ')}\n${ctx.mask(stripAnsi(result.tail))}${plan}`;
}

/**
 * Whether a step that did not exit 0 is fine: plan -detailed-exitcode exits 2 for "changes" (a
 * finding, not a failure); an existing workspace is what `workspace new` finds from the second run on.
 */
function fine(s: Setup, { argv, result }: Step): boolean {
  return (
    (argv[1] === 'plan' && result.exitCode === 2) ||
    (argv === s.cmds.workspace && result.exitCode === 1 && /already exists/.test(stripAnsi(result.tail)))
  );
}

/**
 * init, workspace, then `steps`, in the module directory, within the unit's timeout; stops at
 * the first failing step. The var file lives in a private temporary folder. A saved plan's apply
 * skips init and workspace: the plan was made in this working directory as it is.
 */
export async function tfSession(
  ctx: ExecuteContext,
  defaultBinary: string,
  steps: (cmds: Commands) => string[][],
  opts: { setup?: boolean } = {},
): Promise<{ log: string; done: Step[]; failed?: Step }> {
  const dir = await mkdtemp(join(tmpdir(), 'nyl-tf-'));
  let log = '';
  try {
    const s = await setUp(ctx, defaultBinary, dir);
    const done: Step[] = [];
    const setup = opts.setup === false ? [] : [s.cmds.init, s.cmds.workspace];
    for (const argv of [...setup, ...steps(s.cmds)]) {
      if (!argv) continue;
      const step = await runStep(ctx, s, argv);
      log += logOf(ctx, step);
      if (failedStep(step) && !fine(s, step)) return { log, done, failed: step };
      done.push(step);
    }
    return { log, done };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}
