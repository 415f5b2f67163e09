import { parseArgs } from 'node:util';
import { configJsonSchema } from '../core/config/schema.js';
import { toolStats } from '../core/drivers/process.js';
import { gitStats } from '../core/git/exec.js';
import { exec } from '../core/ops/exec.js';
import { hold, resume } from '../core/ops/hold.js';
import { leaseBreak } from '../core/ops/lease-break.js';
import { plan } from '../core/ops/plan.js';
import { DEFAULT_PARALLELISM, reconcile } from '../core/ops/reconcile.js';
import { recover } from '../core/ops/recover.js';
import type { OpReport, RunReport, StatusReport } from '../core/ops/report.js';
import { stateForget, stateShow } from '../core/ops/state-cmds.js';
import { status } from '../core/ops/status.js';
import { teardown } from '../core/ops/teardown.js';
import { verify } from '../core/ops/verify.js';
import { type OpContext, openWorkspace } from '../core/ops/workspace.js';
import { configureWatchdog } from '../core/proc/watchdog.js';
import { RemoteBackend } from '../core/state/remote-backend.js';
import { backoffStats } from '../core/util/backoff.js';
import { Cancellation } from '../core/util/cancel.js';
import { parseDuration } from '../core/util/duration.js';
import { Exit, NylError, type Problem, problem } from '../core/util/errors.js';
import { COMMANDS, commandHelp, mainHelp } from './commands.js';
import { progressReporter } from './progress.js';
import { facts, renderProblems, table } from './render.js';

export interface Io {
  stdout: NodeJS.WriteStream;
  stderr: NodeJS.WriteStream;
  cwd: string;
}

export const VERSION = '0.1.0';

function usage(message: string, fix: string): NylError {
  return new NylError(problem('NYL-USAGE', message, { fix, exit: Exit.failed }));
}

function renderRun(r: RunReport): string {
  const out = [
    table(
      r.header ?? ['UNIT', 'KIND', 'RESULT', 'DETAIL'],
      r.rows.map((x) => [x.unit, x.kind, x.result, x.detail.replace(/\n/g, ' | ')]),
    ),
    '',
    facts([
      ['run', r.run],
      ['source', r.source],
      ...(['reconcile', 'verify', 'teardown'].includes(r.operation)
        ? ([
            ['desired', r.desired],
            ['observed', r.observed],
          ] as [string, string | undefined][])
        : []),
      ...(r.extra ?? []),
    ]),
  ];
  if (r.problems.length) out.push('', renderProblems(r.problems));
  return `${out.join('\n')}\n`;
}

function renderStatus(r: StatusReport): string {
  const out = [
    table(
      ['UNIT', 'KIND', 'STATE', 'RECEIPT', 'LAST RUN', 'DETAIL'],
      r.rows.map((x) => [x.unit, x.kind, x.state, x.receipt, x.lastRun, x.detail.replace(/\n/g, ' | ')]),
    ),
    '',
    facts([['source', r.source]]),
  ];
  if (r.problems.length) out.push('', renderProblems(r.problems));
  return `${out.join('\n')}\n`;
}

/** Runs one command line; returns the exit code. Never lets a stack trace reach the user. */
export async function main(argv: string[], io: Io): Promise<number> {
  const json = argv.includes('--json');
  let cancellation = new Cancellation();
  const onSignal = (sig: NodeJS.Signals) => cancellation.cancel(sig);
  let progress: ReturnType<typeof progressReporter> | undefined;
  let ctx: OpContext | undefined;
  let opName: string | undefined;
  let opEnv: string | undefined;
  try {
    // Two-word commands: `nyl lease break`.
    const [first, ...tail] = argv;
    const joined = first && tail[0] && !tail[0].startsWith('-') ? `${first} ${tail[0]}` : undefined;
    const [command, rest] = joined && COMMANDS[joined] ? [joined, tail.slice(1)] : [first, tail];
    if (!command || command === '--help' || command === '-h' || command === 'help') {
      const topic = rest[0];
      io.stdout.write(topic && COMMANDS[topic] ? commandHelp(topic) : mainHelp());
      return Exit.ok;
    }
    if (command === '--version' || command === 'version') {
      io.stdout.write(`nyl ${VERSION}\n`);
      return Exit.ok;
    }
    const spec = COMMANDS[command];
    if (!spec)
      throw usage(
        `unknown command ${JSON.stringify(command)}`,
        `run one of: ${Object.keys(COMMANDS).join(', ')} (see \`nyl --help\`)`,
      );
    let values: Record<string, string | boolean | string[] | undefined>;
    let positionals: string[] = [];
    try {
      const parsed = parseArgs({
        args: rest,
        options: Object.fromEntries(
          Object.entries(spec.options).map(([k, o]) => [
            k,
            { type: o.type, ...(o.short ? { short: o.short } : {}), ...(o.multiple ? { multiple: true } : {}) },
          ]),
        ),
        strict: true,
        // Only `nyl exec` takes a command, after `--`.
        allowPositionals: command === 'exec',
      });
      values = parsed.values as typeof values;
      positionals = parsed.positionals;
    } catch (e) {
      throw usage(`${command}: ${(e as Error).message.split('\n')[0]}`, `see \`nyl ${command} --help\``);
    }
    if (values.help) {
      io.stdout.write(commandHelp(command));
      return Exit.ok;
    }
    if (command === 'schema') {
      io.stdout.write(`${JSON.stringify(configJsonSchema(), null, 2)}\n`);
      return Exit.ok;
    }
    const environment = values.environment as string | undefined;
    if (!environment) throw usage(`${command} needs an environment`, `pass -e ENV, e.g. \`nyl ${command} -e dev\``);
    let parallelism = DEFAULT_PARALLELISM;
    if (values.parallelism !== undefined) {
      parallelism = Number(values.parallelism);
      if (!Number.isInteger(parallelism) || parallelism < 1)
        throw usage(`--parallelism ${values.parallelism} is not a positive integer`, 'pass --parallelism N with N ≥ 1');
    }
    if (values['cancel-grace'] !== undefined) {
      const ms = parseDuration(values['cancel-grace'] as string);
      if (ms === undefined)
        throw usage(`--cancel-grace ${values['cancel-grace']} is not a duration`, 'pass a duration such as 5s or 30s');
      cancellation = new Cancellation(ms);
    }
    let waitLeaseMs: number | undefined;
    if (values['wait-lease'] !== undefined) {
      waitLeaseMs = parseDuration(values['wait-lease'] as string);
      if (waitLeaseMs === undefined)
        throw usage(`--wait-lease ${values['wait-lease']} is not a duration`, 'pass a duration such as 30s or 10m');
    }
    const networkTimeoutMs = durationSetting(values['network-timeout'] as string | undefined, 'network-timeout');
    durationSetting(undefined, 'heartbeat-interval');
    const reason = values.reason as string | undefined;
    const units = ([] as string[]).concat((values.unit as string | string[] | undefined) ?? []);
    const needsReason = ['recover', 'lease break', 'hold', 'resume'].includes(command) || values.reapply === true;
    if (needsReason && !reason?.trim())
      throw usage(
        `${command}${values.reapply ? ' --reapply' : ''} needs a reason`,
        `pass --reason "<why>"; it is recorded with who asked`,
      );
    const needsUnit = ['hold', 'resume', 'exec', 'state forget'].includes(command) || values.reapply === true;
    if (needsUnit && !units.length) throw usage(`${command} needs --unit U`, `see \`nyl ${command} --help\``);
    if (command === 'reconcile' && reason !== undefined && !values.reapply)
      throw usage(
        'reconcile --reason goes with --reapply',
        'pass --unit U --reapply --reason <text>, or drop --reason',
      );
    if (command === 'reconcile' && units.length && !values.reapply)
      throw usage('reconcile --unit needs --reapply', 'pass --reapply --reason <text> to execute those units again');
    if (command === 'exec' && !positionals.length)
      throw usage(
        'exec needs a command after --',
        `e.g. \`nyl exec -e ${environment} --unit ${units[0] ?? 'U'} -- terraform force-unlock <id>\``,
      );
    if (command === 'recover') {
      if (units.length && !values.retry && values.accept === undefined)
        throw usage('recover --unit needs --retry or --accept RUN', 'see `nyl recover --help`');
      if (values.retry && values.accept !== undefined)
        throw usage('pass either --retry or --accept RUN, not both', 'see `nyl recover --help`');
      if (!units.length && (values.retry || values.accept !== undefined))
        throw usage('--retry and --accept need --unit U', 'see `nyl recover --help`');
    }
    configureWatchdog({ graceMs: cancellation.graceMs });
    progress = progressReporter(
      io.stderr,
      !json && ['reconcile', 'teardown'].includes(command) && process.env.NYL_PROGRESS !== '0',
    );
    process.on('SIGINT', onSignal);
    process.on('SIGTERM', onSignal);
    ctx = await openWorkspace(
      {
        cwd: io.cwd,
        config: values.config as string | undefined,
        local: values.local === true,
        remote: values.remote as string | undefined,
        waitLeaseMs,
        networkTimeoutMs,
      },
      { cancellation, onEvent: progress.onEvent },
    );
    opName = command.replace(' ', '-');
    opEnv = environment;
    const unit = units[0] as string;
    let report: RunReport | StatusReport | OpReport;
    if (command === 'reconcile')
      report = await reconcile(ctx, {
        environment,
        parallelism,
        approve: values.approve as string[] | undefined,
        reapply: values.reapply ? { units, reason: reason as string } : undefined,
        plan: values.plan as string | undefined,
      });
    else if (command === 'plan') report = await plan(ctx, { environment });
    else if (command === 'verify') report = await verify(ctx, { environment, parallelism });
    else if (command === 'hold') report = await hold(ctx, { environment, unit, reason: reason as string });
    else if (command === 'resume') report = await resume(ctx, { environment, unit, reason: reason as string });
    else if (command === 'exec')
      report = await exec(ctx, { environment, unit, command: positionals, reason, echo: !json });
    else if (command === 'teardown') report = await teardown(ctx, { environment, parallelism });
    else if (command === 'state forget') report = await stateForget(ctx, { environment, unit, reason });
    else if (command === 'state show') {
      const shown = await stateShow(ctx, { environment, unit: units[0] });
      io.stdout.write(json ? `${JSON.stringify(shown.json, null, 2)}\n` : shown.text);
      return Exit.ok;
    } else if (command === 'recover')
      report = await recover(ctx, {
        environment,
        reason: reason as string,
        unit: units[0],
        retry: values.retry === true,
        accept: values.accept as string | undefined,
      });
    else if (command === 'lease break') report = await leaseBreak(ctx, { environment, reason: reason as string });
    else report = await status(ctx, { environment });
    progress.stop();
    if (json) io.stdout.write(`${JSON.stringify(withStats(report, ctx), null, 2)}\n`);
    else if ('outcome' in report) io.stdout.write(renderOp(report));
    else
      io.stdout.write(
        report.operation === 'status' ? renderStatus(report as StatusReport) : renderRun(report as RunReport),
      );
    return report.exit;
  } catch (e) {
    progress?.stop();
    const problems: Problem[] =
      e instanceof NylError
        ? e.problems
        : [
            problem('NYL-INTERNAL', `unexpected failure: ${(e as Error)?.message ?? String(e)}`, {
              fix: 'this is a bug in nyl; report it with the command you ran (set NYL_DEBUG=1 for details)',
            }),
          ];
    if (!(e instanceof NylError) && process.env.NYL_DEBUG) io.stderr.write(`${(e as Error)?.stack}\n`);
    const exit = e instanceof NylError ? e.exit : Exit.failed;
    if (json) io.stdout.write(`${JSON.stringify(withStats({ exit, problems }, ctx), null, 2)}\n`);
    else {
      // Operations that are not runs say they were refused, as in seed 000 (`state-forget dev: refused`).
      if (opEnv && ['recover', 'lease-break', 'hold', 'resume', 'exec', 'state-forget'].includes(opName ?? ''))
        io.stdout.write(`${opName} ${opEnv}: refused\n\n`);
      io.stderr.write(`${renderProblems(problems)}\n`);
    }
    return exit;
  } finally {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
    ctx?.repo.close();
  }
}

/** Process and round-trip counts ride along in JSON: benchmarks read them, operators may too. */
function withStats<T extends object>(r: T, ctx: OpContext | undefined) {
  const b = ctx?.backend;
  return {
    ...r,
    stats: {
      gitProcesses: gitStats.spawns,
      toolProcesses: toolStats.spawns,
      remoteRoundTrips: b instanceof RemoteBackend ? b.roundTrips : 0,
      remoteRetries: b instanceof RemoteBackend ? b.retries : 0,
      backoffWaits: backoffStats.waits,
    },
  };
}

function renderOp(r: OpReport): string {
  const out = [`${r.operation} ${r.environment}: ${r.outcome}`, ...r.facts.map(([k, v]) => `  ${k}: ${v}`)];
  if (r.problems.length) out.push('', renderProblems(r.problems));
  return `${out.join('\n')}\n`;
}

/**
 * A duration given as an option or, without it, in the environment (NYL_NETWORK_TIMEOUT,
 * NYL_HEARTBEAT_INTERVAL): a bad value is a usage error naming where it came from.
 */
function durationSetting(option: string | undefined, name: string): number | undefined {
  const variable = `NYL_${name.toUpperCase().replace(/-/g, '_')}`;
  const text = option ?? process.env[variable];
  if (text === undefined || text === '') return undefined;
  const ms = parseDuration(text);
  if (!ms)
    throw usage(
      `${option !== undefined ? `--${name}` : variable} ${JSON.stringify(text)} is not a duration`,
      `pass a duration such as 30s or 2m${option !== undefined ? '' : ` (or unset ${variable})`}`,
    );
  return ms;
}
