import type { DesiredUnit } from '../resolve/desired.js';
import { notStartedResult } from './command.js';
import type { Driver, ExecuteContext, ExecuteResult, RecoveryPolicy, VerifyResult } from './driver.js';
import type { ProcessResult } from './process.js';
import { lastLines, type StateLock, shellWord, stateLock, stripAnsi, type TfSpec, tfOutputs } from './tofu.js';
import { type Step, tfSession } from './tofu-session.js';

/** A failed step's result: not started, timed out, cancelled, killed (uncertain), a state lock, or a failure. */
function failureResult(ctx: ExecuteContext, defaultBinary: string, f: Step, log: string): ExecuteResult {
  const r = f.result;
  const spec = ctx.unit.spec as unknown as TfSpec;
  const durationMs = r.durationMs;
  const what = f.argv[1];
  if (!r.started) return notStartedResult(r, log);
  if (r.timedOut) return { status: 'uncertain', reason: `${what} timed out; its effects are unknown`, log, durationMs };
  if (r.cancelled)
    return { status: 'uncertain', reason: `run ${ctx.run} was cancelled during ${what}`, log, durationMs };
  if (r.exitCode === null) return { status: 'uncertain', reason: `${what} was killed by ${r.signal}`, log, durationMs };
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
}

/** init, workspace, apply, then `output -json`: the outputs (sensitive ones named, never kept). */
async function execute(ctx: ExecuteContext, defaultBinary: string): Promise<ExecuteResult> {
  const started = Date.now();
  const s = await tfSession(ctx, defaultBinary, (c) => [c.apply as string[], c.output as string[]]);
  if (s.failed) return failureResult(ctx, defaultBinary, s.failed, s.log);
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
}

/** `plan -detailed-exitcode`: 0 in sync, 2 drifted (the plan's summary), else unknown. */
async function verify(ctx: ExecuteContext, defaultBinary: string): Promise<VerifyResult> {
  const s = await tfSession(ctx, defaultBinary, (c) => [c.plan as string[]]);
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
}

async function destroy(ctx: ExecuteContext, defaultBinary: string): Promise<ExecuteResult> {
  const started = Date.now();
  const s = await tfSession(ctx, defaultBinary, (c) => [c.destroy as string[]]);
  if (s.failed) return failureResult(ctx, defaultBinary, s.failed, s.log);
  return { status: 'succeeded', outputs: {}, artifacts: {}, log: s.log, durationMs: Date.now() - started };
}

/** OpenTofu and Terraform: one driver, only the default binary differs. */
function tfDriver(kind: 'OpenTofu' | 'Terraform', defaultBinary: string): Driver {
  return {
    kind,
    policy(_unit: DesiredUnit): RecoveryPolicy {
      return 'converge';
    },
    execute: (ctx) => execute(ctx, defaultBinary),
    verify: (ctx) => verify(ctx, defaultBinary),
    destroy: (ctx) => destroy(ctx, defaultBinary),
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
