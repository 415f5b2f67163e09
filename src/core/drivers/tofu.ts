import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { isAbsolute, join } from 'node:path';
import type { DesiredUnit } from '../resolve/desired.js';
import { masker } from '../util/mask.js';
import { notStartedResult } from './command.js';
import type { Driver, ExecuteContext, ExecuteResult, RecoveryPolicy, VerifyResult } from './driver.js';
import { type ProcessResult, runProcess } from './process.js';

export interface TfSpec {
  module: string;
  variables?: Record<string, unknown>;
  varFiles?: string[];
  workspace?: string;
  initArgs?: string[];
  applyArgs?: string[];
  binary?: string;
}

/**
 * The command lines a unit runs, in order. Variables only ever travel in a var file (written by
 * Nyl, JSON), so no value can become an argument or shell code.
 */
export function tfCommands(
  binary: string,
  spec: TfSpec,
  root: string,
  nylVarFile: string | undefined,
): Record<'init' | 'workspace' | 'apply' | 'output' | 'plan' | 'destroy', string[] | undefined> {
  const varFiles = [
    ...(spec.varFiles ?? []).map((f) => `-var-file=${join(root, f)}`),
    ...(nylVarFile ? [`-var-file=${nylVarFile}`] : []),
  ];
  // -no-color: the tools colour their output even into a pipe, and logs and parsing want plain text.
  return {
    init: [binary, 'init', '-input=false', '-no-color', ...(spec.initArgs ?? [])],
    // Created if missing; selected per process with TF_WORKSPACE (see tfEnv), never by `workspace
    // select`, whose choice is a file in the module folder that units sharing it would fight over.
    workspace: spec.workspace ? [binary, 'workspace', 'new', spec.workspace] : undefined,
    apply: [binary, 'apply', '-auto-approve', '-input=false', '-no-color', ...varFiles, ...(spec.applyArgs ?? [])],
    output: [binary, 'output', '-json', '-no-color'],
    plan: [binary, 'plan', '-detailed-exitcode', '-input=false', '-no-color', ...varFiles],
    destroy: [binary, 'destroy', '-auto-approve', '-input=false', '-no-color', ...varFiles],
  };
}

export interface StateLock {
  id: string;
  /** `live`: the local backend's lock, held by a running process (it dies with its holder); `backend`: a remote backend's, which can outlive it. */
  holder: 'live' | 'backend';
  who?: string;
  created?: string;
}

/** A state lock the tool could not take, as the tools print it. */
export function stateLock(text: string): StateLock | undefined {
  const plain = stripAnsi(text);
  if (!/Error acquiring the state lock/.test(plain)) return undefined;
  // Fields of the Lock Info block only (a backend's message may hold a RequestID: or the like).
  const info = plain.slice(Math.max(0, plain.indexOf('Lock Info:')));
  const field = (name: string) =>
    new RegExp(`(?:^|\\n)[\\s│]*${name}:[ \\t]+([^\\n│]+)`).exec(info)?.[1]?.trim() || undefined;
  // The http backend names the holder's lock in its message; its Lock Info is the failed attempt's own.
  const httpId = /HTTP remote state already locked:[\s│]*ID=([^\s│]+)/.exec(plain)?.[1];
  const id = httpId ?? field('ID');
  if (!id) return undefined;
  // The local backend locks the state file itself (an OS lock, gone with its process): its
  // conflict reads "resource temporarily unavailable". Any other backend keeps the lock itself.
  const local = /Error message:\s*resource temporarily unavailable/.test(plain);
  return {
    id,
    holder: local ? 'live' : 'backend',
    ...(httpId ? {} : { who: field('Who'), created: field('Created') }),
  };
}

/** A word for the shell: quoted when it holds anything but safe characters. */
export function shellWord(s: string): string {
  return /^[A-Za-z0-9_@%+=:,./-]+$/.test(s) ? s : `'${s.replace(/'/g, `'\\''`)}'`;
}

/** Colour codes a tool printed anyway (e.g. from TF_CLI_ARGS or a wrapper). */
export function stripAnsi(text: string): string {
  return text.replace(/\x1b\[[0-9;]*[A-Za-z]/g, '');
}

interface TfOutput {
  sensitive?: boolean;
  value: unknown;
}

/** Outputs of `output -json`: sensitive ones are left out (only their names are kept). */
export function tfOutputs(json: string): { outputs: Record<string, string>; sensitive: string[] } {
  const parsed = JSON.parse(json || '{}') as Record<string, TfOutput>;
  const outputs: Record<string, string> = {};
  const sensitive: string[] = [];
  for (const [k, o] of Object.entries(parsed)) {
    const value = typeof o.value === 'string' ? o.value : JSON.stringify(o.value);
    if (o.sensitive) {
      sensitive.push(k);
      // Its value is a secret from now on: masked wherever it would appear.
      if (value) masker.add(value);
    } else outputs[k] = value;
  }
  return { outputs, sensitive: sensitive.sort() };
}

const lastLines = (t: string, n: number) => t.replace(/\s+$/, '').split('\n').slice(-n).join('\n');

interface Step {
  argv: string[];
  result: ProcessResult;
}
const failedStep = (s: Step) => !s.result.started || s.result.exitCode !== 0 || s.result.timedOut || s.result.cancelled;

function tfDriver(kind: 'OpenTofu' | 'Terraform', defaultBinary: string): Driver {
  /**
   * init, workspace, then `steps`, in the module directory, within the unit's timeout; stops at
   * the first failing step. The var file lives in a private temporary folder.
   */
  async function session(
    ctx: ExecuteContext,
    steps: (cmds: ReturnType<typeof tfCommands>) => string[][],
  ): Promise<{ log: string; done: Step[]; failed?: Step }> {
    const spec = ctx.unit.spec as unknown as TfSpec;
    const dir = await mkdtemp(join(tmpdir(), 'nyl-tf-'));
    const deadline = Date.now() + ctx.timeoutMs;
    let log = '';
    try {
      let varFile: string | undefined;
      if (spec.variables && Object.keys(spec.variables).length) {
        varFile = join(dir, 'nyl.auto.tfvars.json');
        await writeFile(varFile, JSON.stringify(spec.variables), { mode: 0o600 });
      }
      // A binary given as a path is relative to the repository root, as every path in a spec.
      const bin =
        spec.binary?.includes('/') && !isAbsolute(spec.binary)
          ? join(ctx.cwd, spec.binary)
          : (spec.binary ?? defaultBinary);
      const cmds = tfCommands(bin, spec, ctx.cwd, varFile);
      const env = {
        ...process.env,
        TF_IN_AUTOMATION: '1',
        TF_INPUT: '0',
        NYL_ENVIRONMENT: ctx.environment,
        NYL_UNIT: ctx.unit.name,
        NYL_RUN: ctx.run,
        NYL_UID: ctx.unit.uid,
      };
      const done: Step[] = [];
      for (const argv of [cmds.init, cmds.workspace, ...steps(cmds)]) {
        if (!argv) continue;
        const isSetup = argv === cmds.init || argv === cmds.workspace;
        const result = await runProcess({
          argv,
          cwd: join(ctx.cwd, spec.module),
          env: isSetup ? env : { ...env, TF_WORKSPACE: spec.workspace ?? 'default' },
          timeoutMs: Math.max(1, deadline - Date.now()),
          cancellation: ctx.cancellation,
          liveUnit: ctx.unit.name,
          stopSignal: 'SIGINT', // the tools' graceful stop: they release their state lock
          // output -json is data; plan's stdout is the drift detail.
          stdoutBytes: argv[1] === 'output' ? 64 * 1024 * 1024 : argv[1] === 'plan' ? 1024 * 1024 : undefined,
        });
        // `output -json` prints sensitive values: never logged.
        if (argv[1] !== 'output')
          log += `$ ${argv.join(' ')}\n${ctx.mask(stripAnsi(result.tail))}${argv[1] === 'plan' ? ctx.mask(stripAnsi(result.stdout)) : ''}`;
        const step = { argv, result };
        // plan -detailed-exitcode exits 2 for "changes": a finding, not a failure; an existing
        // workspace is what `workspace new` finds from the second run on.
        const fine =
          (argv[1] === 'plan' && result.exitCode === 2) ||
          (argv === cmds.workspace && result.exitCode === 1 && /already exists/.test(stripAnsi(result.tail)));
        if (failedStep(step) && !fine) return { log, done, failed: step };
        done.push(step);
      }
      return { log, done };
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  }

  const failureResult = (ctx: ExecuteContext, f: Step, log: string): ExecuteResult => {
    const r = f.result;
    const spec = ctx.unit.spec as unknown as TfSpec;
    const durationMs = r.durationMs;
    const what = f.argv[1];
    if (!r.started) return notStartedResult(r, log);
    if (r.timedOut)
      return { status: 'uncertain', reason: `${what} timed out; its effects are unknown`, log, durationMs };
    if (r.cancelled)
      return { status: 'uncertain', reason: `run ${ctx.run} was cancelled during ${what}`, log, durationMs };
    if (r.exitCode === null)
      return { status: 'uncertain', reason: `${what} was killed by ${r.signal}`, log, durationMs };
    const lock = stateLock(r.tail);
    if (lock) return lockedResult(ctx, spec, defaultBinary, lock, r, log);
    return {
      status: 'failed',
      reason: `${what} exited with ${r.exitCode}: ${failureText(ctx.mask(stripAnsi(r.tail)))}`,
      exitCode: r.exitCode,
      retryable: true,
      log,
      durationMs,
    };
  };

  return {
    kind,
    policy(_unit: DesiredUnit): RecoveryPolicy {
      return 'converge';
    },

    async execute(ctx) {
      const started = Date.now();
      const s = await session(ctx, (c) => [c.apply as string[], c.output as string[]]);
      if (s.failed) return failureResult(ctx, s.failed, s.log);
      let parsed: ReturnType<typeof tfOutputs>;
      try {
        parsed = tfOutputs(s.done[s.done.length - 1]?.result.stdout ?? '{}');
      } catch (e) {
        // Applied, but its outputs cannot be read: not a receipt, and not a clean failure either.
        return {
          status: 'uncertain',
          reason: `apply finished but output -json was not readable: ${(e as Error).message}`,
          log: s.log,
          durationMs: Date.now() - started,
        };
      }
      const { outputs, sensitive } = parsed;
      return {
        status: 'succeeded',
        outputs,
        artifacts: sensitive.length ? { sensitiveOutputs: sensitive.join(',') } : {},
        log: s.log,
        durationMs: Date.now() - started,
      };
    },

    /** `plan -detailed-exitcode`: 0 in sync, 2 drifted (the plan's summary), else unknown. */
    async verify(ctx): Promise<VerifyResult | undefined> {
      const s = await session(ctx, (c) => [c.plan as string[]]);
      if (s.failed) {
        const lock = stateLock(s.failed.result.tail);
        return {
          state: 'unknown',
          detail: lock
            ? `state locked (lock ID ${lock.id})`
            : `${s.failed.argv[1]} exited with ${s.failed.result.exitCode}: ${lastLines(ctx.mask(s.failed.result.tail), 3)}`,
        };
      }
      const plan = s.done[s.done.length - 1]?.result as ProcessResult;
      if (plan.exitCode === 0) return { state: 'in-sync', detail: '' };
      const lines = ctx.mask(stripAnsi(plan.stdout)).split('\n');
      const changes = lines.filter((l) => /^\s*# .* (will|must) be /.test(l)).map((l) => l.trim().replace(/^# /, ''));
      const summary = lines.find((l) => /^Plan: \d+ to add/.test(l.trim()))?.trim() ?? 'changes planned';
      return { state: 'drifted', detail: [summary, ...changes.slice(0, 10)].join('\n') };
    },

    async destroy(ctx) {
      const started = Date.now();
      const s = await session(ctx, (c) => [c.destroy as string[]]);
      if (s.failed) return failureResult(ctx, s.failed, s.log);
      return { status: 'succeeded', outputs: {}, artifacts: {}, log: s.log, durationMs: Date.now() - started };
    },
  };
}

export const openTofuDriver = tfDriver('OpenTofu', 'tofu');
export const terraformDriver = tfDriver('Terraform', 'terraform');

/**
 * The tool's own headlines (`Error: Invalid expression`: every distinct one, a wrapper such as
 * "encountered problems during initialisation" first) and its last lines, which may not hold them.
 */
function failureText(tail: string): string {
  const headlines = [
    ...new Set(
      tail
        .split('\n')
        .filter((l) => /^[│\s]*Error: /.test(l))
        .map((l) => l.replace(/^[│\s]*/, '').trim()),
    ),
  ];
  const last = lastLines(tail, 5);
  const missing = headlines.filter((h) => !last.includes(h));
  return missing.length ? `${missing.join('; ')} … ${last}` : last;
}

/**
 * A state lock held by someone else. The local backend's lock is held by a live process (a lock
 * left by a process that died went with it): the next reconcile simply tries again. A remote
 * backend's lock can outlive its holder: then it is removed with `force-unlock`, run as a native
 * repair of the held unit. The commands are shell-quoted and carry --local when the run was local.
 */
function lockedResult(
  ctx: ExecuteContext,
  spec: TfSpec,
  defaultBinary: string,
  lock: StateLock,
  r: ProcessResult,
  log: string,
): ExecuteResult {
  const by = `${lock.who ? ` by ${lock.who}` : ''}${lock.created ? ` since ${lock.created}` : ''}`;
  const base = { status: 'failed' as const, exitCode: r.exitCode ?? undefined, log, durationMs: r.durationMs };
  if (lock.holder === 'live')
    return {
      ...base,
      reason: `the state is locked by a running process (lock ID ${lock.id}${by}): another operation on this state runs now; the next reconcile tries again (a lock of a process that died is released with it)`,
      retryable: true,
    };
  const local = ctx.local ? ' --local' : '';
  const [e, u] = [ctx.environment, ctx.unit.name].map(shellWord);
  const bin = shellWord(spec.binary ?? defaultBinary);
  const env = spec.workspace ? `env TF_WORKSPACE=${shellWord(spec.workspace)} ` : '';
  const steps = [
    `nyl hold -e ${e} --unit ${u} --reason <text>${local}`,
    `nyl exec -e ${e} --unit ${u}${local} -- ${env}${bin} ${shellWord(`-chdir=${spec.module}`)} force-unlock -force ${shellWord(lock.id)}`,
    `nyl recover -e ${e} --unit ${u} --retry --reason <text>${local}`,
    `nyl resume -e ${e} --unit ${u} --reason <text>${local}`,
  ];
  return {
    ...base,
    reason: `the state is locked by its backend (lock ID ${lock.id}${by}), a lock that outlives its holder (e.g. an apply that was killed); once no operation on this state runs: ${steps.map((c) => `\`${c}\``).join(', ')}, then approve the plan: \`nyl plan -e ${e}${local}\` and \`nyl reconcile -e ${e} --plan <token>${local}\``,
    retryable: false,
  };
}
