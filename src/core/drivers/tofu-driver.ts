import { rm } from 'node:fs/promises';
import type { PlannedChanges } from '../changes/model.js';
import { workPath } from '../proc/workdir.js';
import type { DesiredUnit } from '../resolve/desired.js';
import { notStartedReason, notStartedResult } from './command.js';
import type {
  Driver,
  ExecuteContext,
  ExecuteResult,
  PlanOptions,
  PlanResult,
  RecoveryPolicy,
  VerifyResult,
} from './driver.js';
import type { ProcessResult } from './process.js';
import { planChanges } from './tf-show.js';
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

/** A failed step of a plan: it changed nothing, whatever stopped it (a state lock is said as such). */
function planFailure(ctx: ExecuteContext, defaultBinary: string, f: Step, log: string, durationMs: number): PlanResult {
  const r = f.result;
  const what = f.argv[1];
  const cancelled = r.cancelled;
  const base = { status: 'failed' as const, log, durationMs, ...(cancelled ? { cancelled } : {}) };
  // Not started: as for any unit, no effect, and not tried again until someone acts (nyl recover).
  if (!r.started)
    return {
      ...base,
      reason: notStartedReason(r),
      retryable: false,
    };
  if (r.timedOut) return { ...base, reason: `${what} timed out; nothing was applied` };
  if (cancelled) return { ...base, reason: `run ${ctx.run} was cancelled during ${what}; nothing was applied` };
  if (r.exitCode === null) return { ...base, reason: `${what} was killed by ${r.signal}; nothing was applied` };
  const failed = failureResult(ctx, defaultBinary, f, log);
  if (failed.status !== 'failed') return { ...base, reason: failed.status === 'uncertain' ? failed.reason : '' };
  const exit = failed.exitCode !== undefined ? { exitCode: failed.exitCode } : {};
  return { ...base, ...exit, reason: failed.reason, ...(failed.retryable ? {} : { retryable: false }) };
}

/**
 * init, workspace, `plan -out` (no state lock), then `show -json` of it: the changes. Kept in
 * `opts.out` to be applied; speculative without (the file removed).
 */
async function plan(ctx: ExecuteContext, defaultBinary: string, opts: PlanOptions): Promise<PlanResult> {
  const started = Date.now();
  const file = opts.out ?? workPath('speculative.tfplan');
  try {
    const s = await tfSession(ctx, defaultBinary, (c) => [c.planTo(file), c.show(file)]);
    const durationMs = Date.now() - started;
    if (s.failed) return planFailure(ctx, defaultBinary, s.failed, s.log, durationMs);
    try {
      const changes = planChanges(s.done[s.done.length - 1]?.result.stdout ?? '', ctx.mask);
      return { status: 'planned', changes, log: s.log, durationMs };
    } catch (e) {
      return {
        status: 'failed',
        reason: `show -json was not readable: ${(e as Error).message}`,
        log: s.log,
        durationMs,
      };
    }
  } finally {
    if (!opts.out) await rm(file, { force: true });
  }
}

/** A plan failed before an apply: nothing was applied, so the unit failed (retryable), never uncertain. */
function notApplied(p: Extract<PlanResult, { status: 'failed' }>): ExecuteResult {
  const exit = p.exitCode !== undefined ? { exitCode: p.exitCode } : {};
  return {
    status: 'failed',
    reason: p.reason,
    retryable: p.retryable ?? true,
    ...exit,
    log: p.log,
    durationMs: p.durationMs,
  };
}

/**
 * Applies the saved plan (made by the engine, or here when there is none), then `output -json`:
 * the outputs (sensitive ones named, never kept) and the changes applied.
 */
async function execute(ctx: ExecuteContext, defaultBinary: string): Promise<ExecuteResult> {
  const started = Date.now();
  let saved = ctx.saved;
  if (!saved) {
    const file = workPath('apply.tfplan');
    const p = await plan(ctx, defaultBinary, { out: file });
    if (p.status === 'failed') return notApplied(p);
    saved = { file, changes: p.changes, log: p.log, durationMs: p.durationMs };
  }
  let log = saved.log ?? '';
  const file = saved.file;
  // What is left of the unit's timeout once it is planned.
  const left = { ...ctx, timeoutMs: Math.max(1, ctx.timeoutMs - (saved.durationMs ?? 0)) };
  try {
    const s = await tfSession(left, defaultBinary, (c) => [c.applyPlan(file), c.output], { setup: false });
    log += s.log;
    if (s.failed) return failureResult(ctx, defaultBinary, s.failed, log);
    return applied(s.done[s.done.length - 1]?.result.stdout ?? '{}', saved.changes, log, Date.now() - started);
  } finally {
    await rm(file, { force: true });
  }
}

/** An apply's result from its `output -json`: outputs, sensitive ones named, and what it changed. */
function applied(json: string, changes: PlannedChanges, log: string, durationMs: number): ExecuteResult {
  let parsed: ReturnType<typeof tfOutputs>;
  try {
    parsed = tfOutputs(json);
  } catch (e) {
    // Applied, but its outputs cannot be read: not a receipt, and not a clean failure either.
    return {
      status: 'uncertain',
      reason: `apply finished but output -json was not readable: ${(e as Error).message}`,
      log,
      durationMs,
    };
  }
  const { outputs, sensitive } = parsed;
  return {
    status: 'succeeded',
    outputs,
    artifacts: sensitive.length ? { sensitiveOutputs: sensitive.join(',') } : {},
    log,
    durationMs,
    changes,
  };
}

/**
 * `plan -detailed-exitcode`, kept to read it with `show -json`: 0 in sync, 2 drifted (the plan's
 * summary, and the resources it would change to put them back), else unknown.
 */
async function verify(ctx: ExecuteContext, defaultBinary: string): Promise<VerifyResult> {
  const file = workPath('verify.tfplan');
  try {
    const s = await tfSession(ctx, defaultBinary, (c) => [[...c.plan, `-out=${file}`], c.show(file)]);
    const planStep = s.done.find((d) => d.argv[1] === 'plan') ?? s.failed;
    if (s.failed && s.failed.argv[1] !== 'show') return verifyUnknown(ctx, s.failed);
    const plan = planStep?.result as ProcessResult;
    if (plan.exitCode === 0) return { state: 'in-sync', detail: '' };
    const lines = ctx.mask(stripAnsi(plan.stdout)).split('\n');
    const found = lines.filter((l) => /^\s*# .* (will|must) be /.test(l)).map((l) => l.trim().replace(/^# /, ''));
    const summary = lines.find((l) => /^Plan: \d+ to add/.test(l.trim()))?.trim() ?? 'changes planned';
    const changes = s.failed ? undefined : readChanges(s.done[s.done.length - 1]?.result.stdout, ctx.mask);
    return { state: 'drifted', detail: [summary, ...found.slice(0, 10)].join('\n'), ...(changes ? { changes } : {}) };
  } finally {
    await rm(file, { force: true });
  }
}

function verifyUnknown(ctx: ExecuteContext, f: Step): VerifyResult {
  const lock = stateLock(f.result.tail);
  return {
    state: 'unknown',
    detail: lock
      ? `state locked (lock ID ${lock.id})`
      : `${f.argv[1]} exited with ${f.result.exitCode}: ${lastLines(ctx.mask(f.result.tail), 3)}`,
  };
}

/** The changes of a `show -json`, or none when it cannot be read (the text summary still says what drifted). */
function readChanges(json: string | undefined, mask: (s: string) => string): PlannedChanges | undefined {
  try {
    return json ? planChanges(json, mask) : undefined;
  } catch {
    return undefined;
  }
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
    plan: (ctx, opts) => plan(ctx, defaultBinary, opts),
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
        // \u2502: the bar terraform draws down its error boxes.
        .filter((l) => /^[\u2502\s]*Error: /.test(l))
        .map((l) => l.replace(/^[\u2502\s]*/, '').trim()),
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
