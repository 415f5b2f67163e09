import { parseArgs } from 'node:util';
import { configJsonSchema } from '../core/config/schema.js';
import { toolStats } from '../core/drivers/process.js';
import { gitStats } from '../core/git/exec.js';
import { isStorageFailure } from '../core/git/storage-failure.js';
import { planGroup } from '../core/ops/batch/plan.js';
import { reconcileGroup } from '../core/ops/batch/reconcile.js';
import { type BatchReport, isBatchReport } from '../core/ops/batch/report.js';
import { leaseBreak } from '../core/ops/lease/break.js';
import { type JobLookup, noLookup } from '../core/ops/lease/github-job.js';
import { plan } from '../core/ops/plan/plan.js';
import { DEFAULT_PARALLELISM, reconcile } from '../core/ops/reconcile/reconcile.js';
import { recover } from '../core/ops/recovery/recover.js';
import { pruneRuns } from '../core/ops/runs/prune.js';
import { listRuns, runLogs, showRun } from '../core/ops/runs/runs.js';
import { listEnvironments } from '../core/ops/status/environments.js';
import { status } from '../core/ops/status/status.js';
import { teardown } from '../core/ops/teardown/teardown.js';
import { verify } from '../core/ops/verify/verify.js';
import type { OpReport, RunReport, StatusReport } from '../core/ops/workspace/report.js';
import { perUnit, unitsAsked } from '../core/ops/workspace/unit-names.js';
import { type OpContext, openWorkspace } from '../core/ops/workspace/workspace.js';
import { exec } from '../core/ops/writes/exec.js';
import { hold, resume } from '../core/ops/writes/hold.js';
import { stateForget, stateShow } from '../core/ops/writes/state.js';
import { configureWatchdog } from '../core/proc/watchdog.js';
import { setCurrentJob } from '../core/state/lease.js';
import { RemoteBackend } from '../core/state/remote-backend.js';
import { backoffStats } from '../core/util/backoff.js';
import { Cancellation } from '../core/util/cancel.js';
import { parseDuration } from '../core/util/duration.js';
import { Exit, NylError, type Problem, problem } from '../core/util/errors.js';
import { masker } from '../core/util/mask.js';
import { batchJson, completeBatch, renderBatch } from './batch.js';
import { COMMANDS, GROUPS, groupHelp, helpFor, mainHelp } from './commands.js';
import { completeCommands, completeProblem, type Mode } from './complete.js';
import { refusedJson, reportJsonSchema, type Stats, toJson } from './json.js';
import { progressReporter } from './progress.js';
import { renderOp, renderProblems, renderRun, renderStatus } from './render.js';

export interface Io {
  stdout: NodeJS.WriteStream;
  stderr: NodeJS.WriteStream;
  cwd: string;
}

export const VERSION = '0.1.0';

type Values = Record<string, string | boolean | string[] | undefined>;
type Report = RunReport | StatusReport | OpReport | BatchReport;

function usage(message: string, fix: string): NylError {
  return new NylError(problem('NYL-USAGE', message, { fix, exit: Exit.failed }));
}

/** Operations that are not runs say they were refused, as in seed 000 (`state-forget dev: refused`). */
/** Commands that name one run after their options. */
const RUN_ARG = ['runs show', 'runs logs'];
const SAYS_REFUSED = ['runs-prune', 'recover', 'lease-break', 'hold', 'resume', 'exec', 'state-forget'];

/** Runs one command line; returns the exit code. Never lets a stack trace reach the user. */
export async function main(argv: string[], io: Io): Promise<number> {
  const json = argv.includes('--json');
  // Everything printed goes through the one masking step.
  const out = (text: string) => io.stdout.write(masker.mask(text));
  const err = (text: string) => io.stderr.write(masker.mask(text));
  let cancellation = new Cancellation();
  const onSignal = (sig: NodeJS.Signals) => cancellation.cancel(sig);
  let progress: ReturnType<typeof progressReporter> | undefined;
  let ctx: OpContext | undefined;
  let command: string | undefined;
  let environment: string | undefined;
  let mode: Mode = { local: argv.includes('--local') };
  try {
    const words = commandWords(argv);
    command = words.command;
    const early = earlyAnswer(words);
    if (early !== undefined) {
      out(early);
      return Exit.ok;
    }
    const { values, positionals } = parseOptions(words.command, words.rest);
    if (values.help) {
      out(helpFor([words.command]) as string);
      return Exit.ok;
    }
    if (command === 'schema') {
      out(`${JSON.stringify(values.report ? reportJsonSchema() : configJsonSchema(), null, 2)}\n`);
      return Exit.ok;
    }
    const opts = checkOptions(command, values, positionals);
    environment = opts.environment || undefined;
    mode = { local: values.local === true, remote: values.remote as string | undefined };
    if (opts.cancelGraceMs !== undefined) cancellation = new Cancellation(opts.cancelGraceMs);
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
        waitLeaseMs: opts.waitLeaseMs,
        networkTimeoutMs: opts.networkTimeoutMs,
      },
      { cancellation, onEvent: progress.onEvent, jobLookup: cliJobLookup() },
    );
    if (['reconcile', 'teardown', 'exec'].includes(command)) await identifyJob();
    const ran = await runCommand(ctx, command, values, positionals, opts, json);
    progress.stop();
    if (isBatchReport(ran)) {
      const batch = completeBatch(ran, mode);
      out(json ? `${JSON.stringify(batchJson(batch, statsOf(ctx)), null, 2)}\n` : renderBatch(batch));
      return batch.exit;
    }
    const report = complete(ran, mode);
    if (json) out(`${JSON.stringify(toJson(report, statsOf(ctx)), null, 2)}\n`);
    else if ('outcome' in report) out(renderOp(report));
    else out(report.operation === 'status' ? renderStatus(report as StatusReport) : renderRun(report as RunReport));
    return report.exit;
  } catch (e) {
    progress?.stop();
    const problems: Problem[] = (
      e instanceof NylError
        ? e.problems
        : [
            problem('NYL-INTERNAL', `unexpected failure: ${(e as Error)?.message ?? String(e)}`, {
              fix: 'this is a bug in nyl; report it with the command you ran (set NYL_DEBUG=1 for details)',
            }),
          ]
    ).map((p) => completeProblem(p, mode));
    if (!(e instanceof NylError) && process.env.NYL_DEBUG) err(`${(e as Error)?.stack}\n`);
    const exit = e instanceof NylError ? e.exit : Exit.failed;
    const op = (command ?? 'nyl').replace(' ', '-');
    if (json) out(`${JSON.stringify(refusedJson(op, environment, exit, problems, statsOf(ctx)), null, 2)}\n`);
    else {
      // A stop the disk forced after something ran (an exec's repair) is no refusal.
      const ran = isStorageFailure(e) && exit === Exit.uncertain;
      if (environment && SAYS_REFUSED.includes(op) && !ran) out(`${op} ${environment}: refused\n\n`);
      err(`${renderProblems(problems)}\n`);
    }
    return exit;
  } finally {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
    ctx?.repo.close();
  }
}

/** The command (one word, or two: `lease break`) and the arguments after it. */
function commandWords(argv: string[]): { command: string; rest: string[] } {
  const [first = '', ...tail] = argv;
  const joined = tail[0] && !tail[0].startsWith('-') ? `${first} ${tail[0]}` : undefined;
  return joined && COMMANDS[joined] ? { command: joined, rest: tail.slice(1) } : { command: first, rest: tail };
}

/** Help, version and group help: answered before any option is parsed. */
function earlyAnswer({ command, rest }: { command: string; rest: string[] }): string | undefined {
  if (!command || command === '--help' || command === '-h' || command === 'help') {
    const topic = rest.filter((w) => !w.startsWith('-'));
    return (topic.length && helpFor(topic)) || mainHelp();
  }
  if (command === '--version' || command === 'version') return `nyl ${VERSION}\n`;
  if (GROUPS[command] && !COMMANDS[command]) {
    if (rest.includes('--help') || rest.includes('-h')) return groupHelp(command);
    const names = GROUPS[command] as string[];
    throw usage(
      `${command} needs a subcommand: ${names.map((n) => n.split(' ')[1]).join(' or ')}`,
      `run \`nyl ${command} --help\`, e.g. \`nyl ${names[0]} --help\``,
    );
  }
  if (!COMMANDS[command])
    throw usage(
      `unknown command ${JSON.stringify(command)}`,
      `run one of: ${Object.keys(COMMANDS).join(', ')} (see \`nyl --help\`)`,
    );
  return undefined;
}

function parseOptions(command: string, rest: string[]): { values: Values; positionals: string[] } {
  const spec = COMMANDS[command] as (typeof COMMANDS)[string];
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
      // `nyl exec` takes a command after `--`; `runs show|logs` a run id.
      allowPositionals: command === 'exec' || RUN_ARG.includes(command),
    });
    return { values: parsed.values as Values, positionals: parsed.positionals };
  } catch (e) {
    throw usage(`${command}: ${(e as Error).message.split('\n')[0]}`, `see \`nyl ${command} --help\``);
  }
}

interface CheckedOptions {
  environment: string;
  parallelism: number;
  cancelGraceMs?: number;
  waitLeaseMs?: number;
  networkTimeoutMs?: number;
  reason?: string;
  units: string[];
  limit?: number;
  sinceMs?: number;
  olderThanMs?: number;
  /** --group: a batch over every environment of this EnvironmentGroup. */
  group?: string;
}

/** Every rule about which options go together, each answered with NYL-USAGE and a fix. */
function checkOptions(command: string, values: Values, positionals: string[]): CheckedOptions {
  const environment = (values.environment as string | undefined) ?? '';
  const group = checkGroup(command, values);
  // Every command acts on one environment, but the one that lists them (and batches over a group).
  if (!environment && command !== 'environments' && group === undefined)
    throw usage(`${command} needs an environment`, `pass -e ENV, e.g. \`nyl ${command} -e dev\``);
  let parallelism = DEFAULT_PARALLELISM;
  if (values.parallelism !== undefined) {
    parallelism = Number(values.parallelism);
    if (!Number.isInteger(parallelism) || parallelism < 1)
      throw usage(`--parallelism ${values.parallelism} is not a positive integer`, 'pass --parallelism N with N ≥ 1');
  }
  const cancelGraceMs = optionDuration(values, 'cancel-grace', 'a duration such as 5s or 30s');
  const waitLeaseMs = optionDuration(values, 'wait-lease', 'a duration such as 30s or 10m');
  const networkTimeoutMs = durationSetting(values['network-timeout'] as string | undefined, 'network-timeout');
  durationSetting(undefined, 'heartbeat-interval');
  const reason = values.reason as string | undefined;
  const units = ([] as string[]).concat((values.unit as string | string[] | undefined) ?? []);
  // The environment import of `recover` needs no reason (seed 000's fixes paste it without one).
  const needsReason =
    ['lease break', 'hold', 'resume'].includes(command) ||
    (command === 'recover' && units.length > 0) ||
    values.reapply === true ||
    (command === 'reconcile' && values.from !== undefined) ||
    values['allow-older-source'] === true;
  if (needsReason && !reason?.trim())
    throw usage(
      `${command}${values.reapply ? ' --reapply' : values.from ? ' --from' : values['allow-older-source'] ? ' --allow-older-source' : ''} needs a reason`,
      `pass --reason "<why>"; it is recorded with who asked`,
    );
  if (reason !== undefined && !reason.trim())
    throw usage(`${command} --reason is empty`, 'pass --reason "<why>": it is recorded with who asked');
  const needsUnit = ['hold', 'resume', 'exec', 'state forget'].includes(command) || values.reapply === true;
  if (needsUnit && !units.length) throw usage(`${command} needs --unit U`, `see \`nyl ${command} --help\``);
  if (
    command === 'reconcile' &&
    reason !== undefined &&
    !values.reapply &&
    !values.from &&
    !values['allow-older-source']
  )
    throw usage(
      'reconcile --reason goes with --reapply, --from or --allow-older-source',
      'pass --unit U --reapply --reason <text>, --from U --reason <text>, or --allow-older-source --reason <text>, or drop --reason',
    );
  if (values['allow-config-change'] && !values.failed && !values.from)
    throw usage('--allow-config-change goes with --failed or --from', 'pass --failed or --from U, or drop it');
  if (command === 'reconcile' && units.length && !values.reapply)
    throw usage('reconcile --unit needs --reapply', 'pass --reapply --reason <text> to execute those units again');
  if (RUN_ARG.includes(command) && positionals.length !== 1)
    throw usage(
      `${command} needs one run id`,
      `e.g. \`nyl ${command} -e ${environment} <run>\` (\`nyl runs -e ${environment}\` lists them)`,
    );
  let limit: number | undefined;
  if (values.limit !== undefined) {
    limit = Number(values.limit);
    if (!Number.isInteger(limit) || limit < 1)
      throw usage(`--limit ${values.limit} is not a positive integer`, 'pass --limit N with N ≥ 1');
  }
  const sinceMs = optionDuration(values, 'since', 'a duration such as 12h or 7d');
  const olderThanMs = optionDuration(values, 'older-than', 'a duration such as 90d');
  if (command === 'runs prune' && olderThanMs === undefined)
    throw usage('runs prune needs --older-than DURATION', `e.g. \`nyl runs prune -e ${environment} --older-than 90d\``);
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
  return {
    environment,
    group,
    parallelism,
    cancelGraceMs,
    waitLeaseMs,
    networkTimeoutMs,
    reason,
    units,
    limit,
    sinceMs,
    olderThanMs,
  };
}

/** `--group G` (plan, reconcile): instead of -e; reconcile runs only a planned batch, by its token. */
function checkGroup(command: string, values: Values): string | undefined {
  const group = values.group as string | undefined;
  if (group === undefined) return undefined;
  if (!group) throw usage(`${command} --group is empty`, 'pass --group G, the name of an EnvironmentGroup');
  if (values.environment !== undefined)
    throw usage(`${command} takes -e ENV or --group G, not both`, 'drop -e to act on every environment of the group');
  if (values.from !== undefined)
    throw usage(
      `${command} --group does not take --from`,
      `--from names units of one environment: \`nyl ${command} -e ENV --from U\``,
    );
  if (command !== 'reconcile') return group;
  const f = values.failed ? ' --failed' : '';
  if (values.plan === undefined)
    throw usage(
      'reconcile --group needs --plan <batch token>',
      `run \`nyl plan --group ${group}${f}\`, review it, and pass its token: \`nyl reconcile --group ${group}${f} --plan <token>\``,
    );
  const perEnv = ['approve', 'unit', 'reapply', 'allow-older-source', 'reason'].filter((k) => values[k] !== undefined);
  if (perEnv.length)
    throw usage(
      `reconcile --group does not take --${perEnv[0]}`,
      'the batch token approves what each environment’s plan shows; approve or reapply per environment with -e ENV',
    );
  return group;
}

function optionDuration(values: Values, name: string, example: string): number | undefined {
  const text = values[name] as string | undefined;
  if (text === undefined) return undefined;
  const ms = parseDuration(text);
  if (ms === undefined) throw usage(`--${name} ${text} is not a duration`, `pass ${example}`);
  return ms;
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

/** The operation behind a command line. */
async function runCommand(
  ctx: OpContext,
  command: string,
  values: Values,
  positionals: string[],
  o: CheckedOptions,
  json: boolean,
): Promise<Report> {
  const { environment, parallelism, reason, units } = o;
  const unit = units[0] as string;
  switch (command) {
    case 'reconcile':
      if (o.group !== undefined)
        return reconcileGroup(ctx, {
          group: o.group,
          plan: values.plan as string,
          failed: values.failed === true,
          allowConfigChange: values['allow-config-change'] === true,
          parallelism,
        });
      return reconcile(ctx, {
        environment,
        parallelism,
        approve: values.approve as string[] | undefined,
        reapply: values.reapply ? { units, reason: reason as string } : undefined,
        plan: values.plan as string | undefined,
        allowOlderSource: values['allow-older-source'] ? { reason: reason as string } : undefined,
        failed: values.failed === true,
        from: values.from ? { units: values.from as string[], reason: reason as string } : undefined,
        allowConfigChange: values['allow-config-change'] === true,
      });
    case 'plan':
      if (o.group !== undefined) return planGroup(ctx, { group: o.group, failed: values.failed === true });
      return plan(ctx, { environment, failed: values.failed === true, from: values.from as string[] | undefined });
    case 'verify':
      return verify(ctx, { environment, parallelism });
    case 'hold':
      return perUnit(await unitsAsked(ctx, environment, unit), (u) =>
        hold(ctx, { environment, unit: u, reason: reason as string }),
      );
    case 'resume':
      return perUnit(await unitsAsked(ctx, environment, unit), (u) =>
        resume(ctx, { environment, unit: u, reason: reason as string }),
      );
    case 'exec':
      return exec(ctx, { environment, unit, command: positionals, reason, echo: !json });
    case 'teardown':
      return teardown(ctx, { environment, parallelism });
    case 'state forget':
      return perUnit(await unitsAsked(ctx, environment, unit), (u) =>
        stateForget(ctx, { environment, unit: u, reason }),
      );
    case 'state show':
      return stateShow(ctx, { environment, unit: units[0] });
    case 'recover': {
      const one = (u: string | undefined) =>
        recover(ctx, {
          environment,
          reason,
          unit: u,
          retry: values.retry === true,
          accept: values.accept as string | undefined,
        });
      return units[0] ? perUnit(await unitsAsked(ctx, environment, units[0]), one) : one(undefined);
    }
    case 'lease break':
      return leaseBreak(ctx, { environment, reason: reason as string });
    case 'environments':
      return listEnvironments(ctx);
    case 'runs':
      return listRuns(ctx, { environment, limit: o.limit, sinceMs: o.sinceMs });
    case 'runs show':
      return showRun(ctx, { environment, run: positionals[0] as string });
    case 'runs prune':
      return pruneRuns(ctx, { environment, olderThanMs: o.olderThanMs as number });
    case 'runs logs':
      return runLogs(ctx, { environment, run: positionals[0] as string, unit: units[0] });
    default:
      return status(ctx, { environment, units });
  }
}

/** Commands quoted in a report's problems and details, completed for the mode it ran in. */
function complete<R extends Report>(r: R, mode: Mode): R {
  const problems = r.problems.map((p) => completeProblem(p, mode));
  if ('outcome' in r) return { ...r, problems };
  const rows = (r.rows as { detail: string }[]).map((x) => ({ ...x, detail: completeCommands(x.detail, mode) }));
  return { ...r, problems, rows } as R;
}

/** Process and round-trip counts ride along in JSON: benchmarks read them, operators may too. */
function statsOf(ctx: OpContext | undefined): Stats {
  const b = ctx?.backend;
  return {
    gitProcesses: gitStats.spawns,
    toolProcesses: toolStats.spawns,
    remoteRoundTrips: b instanceof RemoteBackend ? b.roundTrips : 0,
    remoteRetries: b instanceof RemoteBackend ? b.retries : 0,
    backoffWaits: backoffStats.waits,
  };
}

/** The token a workstation or a workflow's run step gives nyl for the Actions API. */
const apiToken = () => process.env.GITHUB_TOKEN || process.env.GH_TOKEN || '';

/**
 * Whether a lease holder's GitHub job finished, asked with GITHUB_TOKEN; the API client is loaded
 * only when there is something to ask.
 */
function cliJobLookup(): JobLookup {
  const token = apiToken();
  if (!token) return noLookup('no token to ask the Actions API with: set GITHUB_TOKEN (it needs actions: read)');
  return async (job) => (await import('../github/jobs.js')).actionsJobLookup(token)(job);
}

/** Inside a GitHub job, with a token: record which job holds the lease, so a taker can ask about it. */
async function identifyJob(): Promise<void> {
  const token = apiToken();
  if (!token || !process.env.GITHUB_RUN_ID) return;
  setCurrentJob(await (await import('../github/jobs.js')).currentJob(token));
}
