import { readFileSync, statSync, unlinkSync, writeFileSync } from 'node:fs';
import { eachVariable, referenceVariable, shellSafeScript } from '../config/references.js';
import { workPath } from '../proc/workdir.js';
import type { DesiredUnit } from '../resolve/desired.js';
import { formatDuration } from '../util/duration.js';
import { masker } from '../util/mask.js';
import type { Driver, ExecuteContext, ExecuteResult, InspectResult, RecoveryPolicy, VerifyResult } from './driver.js';
import { runScript } from './process.js';

interface CommandSpec {
  run: string;
  idempotent?: boolean;
  retryable?: boolean;
  check?: string;
  inspect?: string;
  destroy?: string;
}

const REASON_LINES = 5;

function lastLines(text: string, n: number): string {
  const lines = text.replace(/\s+$/, '').split('\n');
  return lines.slice(-n).join('\n');
}

/** Parses `key=value` and `key<<DELIM … DELIM` lines, as a step writes $GITHUB_OUTPUT. */
export function parseOutputFile(text: string): { outputs: Record<string, string>; error?: string } {
  const outputs: Record<string, string> = {};
  const nul = text.indexOf('\0');
  if (nul >= 0)
    return {
      outputs,
      error: `NYL_OUTPUT line ${text.slice(0, nul).split('\n').length} holds a NUL byte: outputs are text`,
    };
  const lines = text.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const line = (lines[i] as string).replace(/\r$/, '');
    if (line.trim() === '') continue;
    const heredoc = /^([A-Za-z_][A-Za-z0-9_-]*)<<(.+)$/.exec(line);
    if (heredoc) {
      const delim = heredoc[2] as string;
      const body: string[] = [];
      let j = i + 1;
      while (j < lines.length && (lines[j] as string).replace(/\r$/, '') !== delim) body.push(lines[j++] as string);
      if (j >= lines.length) return { outputs, error: `NYL_OUTPUT line ${i + 1}: no closing ${delim}` };
      outputs[heredoc[1] as string] = body.join('\n');
      i = j;
      continue;
    }
    const eq = line.indexOf('=');
    const key = eq > 0 ? line.slice(0, eq) : '';
    if (!/^[A-Za-z_][A-Za-z0-9_-]*$/.test(key))
      return {
        outputs,
        // Masked before it is cut and escaped: a secret straddling the cut or holding quotes is masked whole.
        error: `NYL_OUTPUT line ${i + 1} is not key=value: ${JSON.stringify(masker.mask(line).slice(0, 80))}`,
      };
    outputs[key] = line.slice(eq + 1);
  }
  return { outputs };
}

/** Values longer than this, or holding a NUL byte, reach scripts through files, not the environment. */
export const INPUT_ENV_MAX = 32 * 1024;

/**
 * Environment of a tool, on top of nyl's own: NYL_* facts and one variable per output reference. A
 * value too large for the environment (the kernel refuses a spawn whose environment is too big)
 * or with a NUL byte goes in a file named by `<variable>_FILE`; the script's preamble reads it into
 * the variable, so `${{ … }}` works the same (bash drops NUL bytes: read the file for those).
 */
export function unitInputs(
  ctx: { environment: string; run: string; unit: DesiredUnit },
  output: string,
): { env: Record<string, string>; preamble: string; files: string[] } {
  const env: Record<string, string> = {
    NYL_ENVIRONMENT: ctx.environment,
    NYL_UNIT: ctx.unit.name,
    NYL_RUN: ctx.run,
    NYL_UID: ctx.unit.uid,
    NYL_OUTPUT: output,
  };
  const preamble: string[] = [];
  const files: string[] = [];
  for (const [expr, value] of Object.entries(ctx.unit.inputs)) {
    const m = /^units\.(.+)\.outputs\.([^.]+)$/.exec(expr);
    const name = m ? referenceVariable({ unit: m[1] as string, key: m[2] as string }) : eachVariable(expr);
    if (!name) continue;
    if (value.length <= INPUT_ENV_MAX && !value.includes('\0')) {
      env[name] = value;
      continue;
    }
    const file = workPath('input');
    writeFileSync(file, value, { mode: 0o600 });
    files.push(file);
    env[`${name}_FILE`] = file;
    preamble.push(`${name}="$(cat -- "$${name}_FILE"; printf .)"; ${name}="\${${name}%.}"`);
  }
  return { env, preamble: preamble.length ? `${preamble.join('\n')}\n` : '', files };
}

/** How a script that did not say yes or no ended, for messages. */
function howItEnded(r: { timedOut: boolean; exitCode: number | null; signal: NodeJS.Signals | null }): string {
  if (r.timedOut) return 'timed out';
  return r.exitCode === null ? `was killed by ${r.signal}` : `exited with ${r.exitCode}`;
}

/**
 * Runs one of the unit's scripts with its environment and an output file; returns what it wrote.
 * `stdoutApart`: the script's stdout is data (a check's detail), kept apart from its log.
 */
async function runUnitScript(ctx: ExecuteContext, script: string, stdoutApart = false) {
  const outFile = workPath('nyl-output');
  const { env, preamble, files } = unitInputs(ctx, outFile);
  try {
    const r = await runScript({
      script: preamble + shellSafeScript(script),
      cwd: ctx.cwd,
      extraEnv: env,
      timeoutMs: ctx.timeoutMs,
      cancellation: ctx.cancellation,
      liveUnit: ctx.unit.name,
      ...(stdoutApart ? { stdoutBytes: 64 * 1024 } : {}),
    });
    return { r, log: ctx.mask(r.tail), parsed: parseOutputFile(takeFile(outFile)) };
  } finally {
    for (const f of files) removeQuietly(f);
  }
}

/** A file's text, and the file removed; '' when the script wrote none (most write no outputs). */
function takeFile(path: string): string {
  if (!statSync(path, { throwIfNoEntry: false })) return '';
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return ''; // not a file it wrote outputs to
  } finally {
    removeQuietly(path);
  }
}

function removeQuietly(path: string): void {
  try {
    unlinkSync(path);
  } catch {
    /* gone */
  }
}

/** A tool that never started made no effect: failed, and run again once its input changes. */
export const notStartedReason = (r: { startError?: string }) =>
  `could not be started (${r.startError ?? 'spawn failed'}); it made no effect`;

export function notStartedResult(r: { startError?: string; durationMs: number }, log = ''): ExecuteResult {
  return {
    status: 'failed',
    reason: notStartedReason(r),
    retryable: false,
    log,
    durationMs: r.durationMs,
  };
}

export const commandDriver: Driver = {
  kind: 'Command',

  policy(unit: DesiredUnit): RecoveryPolicy {
    const spec = unit.spec as unknown as CommandSpec;
    if (spec.idempotent) return 'converge';
    if (spec.inspect) return 'inspect';
    return 'manual';
  },

  async execute(ctx: ExecuteContext): Promise<ExecuteResult> {
    const spec = ctx.unit.spec as unknown as CommandSpec;
    const { r, log, parsed } = await runUnitScript(ctx, spec.run);
    if (!r.started) return notStartedResult(r);
    const durationMs = r.durationMs;
    if (r.timedOut)
      return {
        status: 'uncertain',
        reason: `timed out after ${formatDuration(ctx.timeoutMs)}; its effects are unknown`,
        log,
        durationMs,
      };
    if (r.cancelled)
      return { status: 'uncertain', reason: `run ${ctx.run} was cancelled while executing it`, log, durationMs };
    // Killed by a signal Nyl did not send (the OOM killer, an operator): its effects are unknown.
    if (r.exitCode === null)
      return {
        status: 'uncertain',
        reason: `was killed by ${r.signal} before it finished; its effects are unknown`,
        log,
        durationMs,
      };
    const retryable = spec.retryable !== false;
    if (r.exitCode !== 0) {
      const tail = lastLines(log, REASON_LINES);
      const how = `exited with ${r.exitCode}`;
      return {
        status: 'failed',
        reason: tail ? `${how}: ${tail}` : how,
        exitCode: r.exitCode,
        retryable,
        log,
        durationMs,
      };
    }
    if (parsed.error) return { status: 'failed', reason: ctx.mask(parsed.error), retryable, log, durationMs };
    return { status: 'succeeded', outputs: parsed.outputs, artifacts: {}, log, durationMs };
  },

  /** `spec.check`: exit 0 in sync, 2 drifted (stdout is the detail), else unknown; NYL_OUTPUT lines attest. */
  async verify(ctx: ExecuteContext): Promise<VerifyResult | undefined> {
    const spec = ctx.unit.spec as unknown as CommandSpec;
    if (!spec.check) return undefined;
    const { r, log, parsed } = await runUnitScript(ctx, spec.check, true);
    if (!r.started) return { state: 'unknown', detail: `check could not be started (${r.startError})` };
    const attestations = parsed.error ? undefined : parsed.outputs;
    const extra = Object.keys(attestations ?? {}).length ? { attestations } : {};
    if (r.exitCode === 0) return { state: 'in-sync', detail: '', ...extra };
    if (r.exitCode === 2)
      return { state: 'drifted', detail: lastLines(ctx.mask(r.stdout), REASON_LINES) || 'drifted', ...extra };
    const how = howItEnded(r);
    const tail = lastLines(log, REASON_LINES);
    return { state: 'unknown', detail: `check ${how}${tail ? `: ${tail}` : ''}` };
  },

  /** `spec.destroy`: removes what the unit made; same contract as run. */
  async destroy(ctx: ExecuteContext): Promise<ExecuteResult | undefined> {
    const spec = ctx.unit.spec as unknown as CommandSpec;
    if (!spec.destroy) return undefined;
    return this.execute({ ...ctx, unit: { ...ctx.unit, spec: { ...ctx.unit.spec, run: spec.destroy } } });
  },

  /** `spec.inspect`: exit 0 applied (its NYL_OUTPUT lines are the outputs), 2 not applied, else unknown. */
  async inspect(ctx: ExecuteContext): Promise<InspectResult> {
    const spec = ctx.unit.spec as unknown as CommandSpec;
    if (!spec.inspect) return { status: 'unknown', reason: 'the unit has no spec.inspect', log: '' };
    const { r, log, parsed } = await runUnitScript(ctx, spec.inspect);
    if (!r.started) return { status: 'unknown', reason: `inspect could not be started (${r.startError})`, log: '' };
    if (r.exitCode === 0 && !parsed.error) return { status: 'applied', outputs: parsed.outputs, artifacts: {}, log };
    if (r.exitCode === 2) return { status: 'not-applied', log };
    const how = howItEnded(r);
    const tail = lastLines(log, REASON_LINES);
    return {
      status: 'unknown',
      reason: `inspect ${how}${parsed.error ? ` (${ctx.mask(parsed.error)})` : ''}${tail ? `: ${tail}` : ''}`,
      log,
    };
  },
};
