import { DEFAULT_PARALLELISM } from '../core/ops/reconcile/options.js';
import { parseDuration } from '../core/util/duration.js';
import { RUN_ARG, usage, type Values } from './parse.js';

/** Checking the options a command line gave: which go together, and their values (durations, numbers). */

export interface CheckedOptions {
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
  if (command === 'plan' && (values.out !== undefined || values['unit-level']))
    throw usage(
      `plan --group does not take --${values.out !== undefined ? 'out' : 'unit-level'}`,
      'a group is planned at the unit level, with one batch token; keep one environment’s plan with `nyl plan -e ENV --out FILE`',
    );
  if (command !== 'reconcile') return group;
  const f = values.failed ? ' --failed' : '';
  if (values.plan === undefined)
    throw usage(
      'reconcile --group needs --plan <batch token>',
      `run \`nyl plan --group ${group}${f}\`, review it, and pass its token: \`nyl reconcile --group ${group}${f} --plan <token>\``,
    );
  const perEnv = ['approve', 'unit', 'reapply', 'allow-older-source', 'reason', 'deployments'].filter(
    (k) => values[k] !== undefined,
  );
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

/** A positive whole number option (--parallelism, --limit), or its default. */
function positive(values: Values, name: string, fallback?: number): number | undefined {
  if (values[name] === undefined) return fallback;
  const n = Number(values[name]);
  if (!Number.isInteger(n) || n < 1)
    throw usage(`--${name} ${values[name]} is not a positive integer`, `pass --${name} N with N ≥ 1`);
  return n;
}

/** --reason: required where a person's decision is recorded, never empty, and with reconcile only where it is recorded. */
function checkReason(command: string, values: Values, units: string[]): string | undefined {
  const reason = values.reason as string | undefined;
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
  return reason;
}

/** What a command needs besides options: --unit U, a run id; options that go together. */
function checkArguments(command: string, values: Values, positionals: string[], env: string, units: string[]): void {
  const needsUnit = ['hold', 'resume', 'exec', 'state forget'].includes(command) || values.reapply === true;
  if (needsUnit && !units.length) throw usage(`${command} needs --unit U`, `see \`nyl ${command} --help\``);
  if (values['allow-config-change'] && !values.failed && !values.from)
    throw usage('--allow-config-change goes with --failed or --from', 'pass --failed or --from U, or drop it');
  if (command === 'reconcile' && units.length && !values.reapply)
    throw usage('reconcile --unit needs --reapply', 'pass --reapply --reason <text> to execute those units again');
  if (RUN_ARG.includes(command) && positionals.length !== 1)
    throw usage(
      `${command} needs one run id`,
      `e.g. \`nyl ${command} -e ${env} <run>\` (\`nyl runs -e ${env}\` lists them)`,
    );
}

/** A command after `--` for exec; --retry or --accept for recover --unit. */
function checkCommandArgs(command: string, values: Values, positionals: string[], env: string, units: string[]): void {
  if (command === 'exec' && !positionals.length)
    throw usage(
      'exec needs a command after --',
      `e.g. \`nyl exec -e ${env} --unit ${units[0] ?? 'U'} -- terraform force-unlock <id>\``,
    );
  if (command === 'recover') checkRecover(values, units);
}

function checkRecover(values: Values, units: string[]): void {
  if (units.length && !values.retry && values.accept === undefined)
    throw usage('recover --unit needs --retry or --accept RUN', 'see `nyl recover --help`');
  if (values.retry && values.accept !== undefined)
    throw usage('pass either --retry or --accept RUN, not both', 'see `nyl recover --help`');
  if (!units.length && (values.retry || values.accept !== undefined))
    throw usage('--retry and --accept need --unit U', 'see `nyl recover --help`');
}

/** Every rule about which options go together, each answered with NYL-USAGE and a fix. */
export function checkOptions(command: string, values: Values, positionals: string[]): CheckedOptions {
  const environment = (values.environment as string | undefined) ?? '';
  const group = checkGroup(command, values);
  // Every command acts on one environment, but the one that lists them (and batches over a group).
  if (command === 'site' && !values.out)
    throw usage('site needs --out DIR', 'pass the folder to write the site to, e.g. `nyl site --out site`');
  if (!environment && command !== 'environments' && command !== 'site' && group === undefined)
    throw usage(`${command} needs an environment`, `pass -e ENV, e.g. \`nyl ${command} -e dev\``);
  const parallelism = positive(values, 'parallelism', DEFAULT_PARALLELISM) as number;
  const durations = {
    cancelGraceMs: optionDuration(values, 'cancel-grace', 'a duration such as 5s or 30s'),
    waitLeaseMs: optionDuration(values, 'wait-lease', 'a duration such as 30s or 10m'),
    networkTimeoutMs: durationSetting(values['network-timeout'] as string | undefined, 'network-timeout'),
  };
  durationSetting(undefined, 'heartbeat-interval');
  const units = ([] as string[]).concat((values.unit as string | string[] | undefined) ?? []);
  const reason = checkReason(command, values, units);
  checkArguments(command, values, positionals, environment, units);
  const limit = positive(values, 'limit');
  const sinceMs = optionDuration(values, 'since', 'a duration such as 12h or 7d');
  const olderThanMs = optionDuration(values, 'older-than', 'a duration such as 90d');
  if (command === 'runs prune' && olderThanMs === undefined)
    throw usage('runs prune needs --older-than DURATION', `e.g. \`nyl runs prune -e ${environment} --older-than 90d\``);
  checkCommandArgs(command, values, positionals, environment, units);
  return {
    environment,
    group,
    parallelism,
    ...durations,
    reason,
    units,
    limit,
    sinceMs,
    olderThanMs,
  };
}
