/** Command-line surface: every command, its options and its help text. */

export interface OptionSpec {
  type: 'string' | 'boolean';
  multiple?: boolean;
  short?: string;
  value?: string;
  help: string;
}

export const COMMON: Record<string, OptionSpec> = {
  environment: { type: 'string', short: 'e', value: 'ENV', help: 'environment to act on (required)' },
  local: { type: 'boolean', help: 'keep leases and state in this repository’s refs, without a remote' },
  remote: { type: 'string', value: 'NAME', help: 'remote that holds the state refs, the authority (default: origin)' },
  config: {
    type: 'string',
    value: 'FILE|DIR',
    help: 'configuration file or directory, read from the source commit (default: nyl.yaml)',
  },
  json: { type: 'boolean', help: 'print one JSON document instead of tables' },
  'network-timeout': {
    type: 'string',
    value: 'DURATION',
    help: 'bound of each call to the remote (default: 60s, or NYL_NETWORK_TIMEOUT); past it the call is ended and settled',
  },
  help: { type: 'boolean', short: 'h', help: 'show this help' },
};

const WAIT_LEASE: Record<string, OptionSpec> = {
  'wait-lease': {
    type: 'string',
    value: 'DURATION',
    help: 'wait up to DURATION for a held lease instead of exiting 2 (e.g. 10m)',
  },
};

/** Recovery runs (seed 004): a selection instead of everything that differs. */
const RECOVERY: Record<string, OptionSpec> = {
  failed: {
    type: 'boolean',
    help: 'only the failed units (retryable or not), uncertain ones whose policy converges, and their dependants',
  },
  from: {
    type: 'string',
    multiple: true,
    value: 'U',
    help: 'U and everything downstream of it, current or not (reconcile: with --reason); repeatable',
  },
};

const REASON: OptionSpec = { type: 'string', value: 'TEXT', help: 'why (recorded with who asked)' };

/** plan and reconcile over every environment of an EnvironmentGroup, as one batch (docs/batches.md). */
const GROUP: Record<string, OptionSpec> = {
  environment: { ...(COMMON.environment as OptionSpec), help: 'environment to act on (required, unless --group)' },
  group: {
    type: 'string',
    value: 'G',
    help: 'every environment of EnvironmentGroup G, in promotion order, as one batch with one token (instead of -e)',
  },
};

export interface CommandSpec {
  summary: string;
  /** Written out when the command has several forms; otherwise made from `required` and the options. */
  usage?: string;
  /** Options the command cannot run without, in usage order (`environment` is always first). */
  required?: string[];
  /** What follows the options (nyl exec: `-- COMMAND [ARGS…]`). */
  trailing?: string;
  description: string;
  options: Record<string, OptionSpec>;
  exits: string;
}

/** Exit codes every command that reads an environment shares (bad input, configuration, state, remote). */
const READ_FAILS = '1 bad input or configuration, state that cannot be read, a remote that cannot be reached';
/** …and every command that writes. */
const WRITE_FAILS = `${READ_FAILS} or declines the push`;

export const COMMANDS: Record<string, CommandSpec> = {
  init: {
    summary: 'start Nyl in this repository: write nyl.yaml and the GitHub workflows (plan, deploy, verify, recover)',
    description:
      'Writes nyl.yaml (the environments in a promotion line; a unit per Terraform/OpenTofu root module\n' +
      'found, or a Command example when there is none) and .github/workflows/{plan,deploy,verify,recover}.yml\n' +
      'made from Nyl’s example workflows, the environments, the branch and the actions’ reference filled\n' +
      'in; then prints the next steps. Needs no configuration. Writes nothing when a file exists (unless\n' +
      '--force) or anything else is wrong.',
    options: {
      environments: {
        type: 'string',
        value: 'LIST',
        help: 'the environments, comma separated, in promotion order (default: dev,staging,prod)',
      },
      tool: {
        type: 'string',
        value: 'terraform|tofu',
        help: 'the kind of the root modules’ units: Terraform (default) or OpenTofu',
      },
      'actions-ref': {
        type: 'string',
        value: 'OWNER/REPO@REF',
        help: 'where the workflows take Nyl’s actions from (default: the placeholder your-org/nyl@v1, to replace)',
      },
      branch: {
        type: 'string',
        value: 'NAME',
        help: 'the branch pull requests go into and pushes deploy from (default: origin’s HEAD, else the branch checked out)',
      },
      force: { type: 'boolean', help: 'write over files that exist' },
      'dry-run': { type: 'boolean', help: 'print the files and their content instead of writing them' },
      json: COMMON.json as OptionSpec,
      help: COMMON.help as OptionSpec,
    },
    exits:
      '0 written (or printed, --dry-run); 1 bad input (an option, an environment name), not in a git work tree, a detached HEAD without --branch, a file that cannot be written; 2 a file exists (nothing written; --force writes over it)',
  },
  reconcile: {
    summary: 'execute what differs from the recorded state and record the result',
    required: [],
    description:
      'Reads the configuration from the source commit (HEAD), takes the environment’s lease, executes\n' +
      'the units whose desired document differs from their receipt wave by wave (the units of a wave in\n' +
      'parallel), checkpoints after each wave and lands one transition commit. With nothing to do it\n' +
      'takes no lease and writes nothing. With --group G --plan <batch token>: each environment of\n' +
      'the group in turn, as `nyl plan --group G` planned it, the batch recorded on the group’s ref; the\n' +
      'same command again continues an interrupted batch without running environments done.',
    options: {
      ...COMMON,
      ...GROUP,
      ...WAIT_LEASE,
      parallelism: { type: 'string', value: 'N', help: 'units of a wave run at once (default: 4)' },
      'cancel-grace': {
        type: 'string',
        value: 'DURATION',
        help: 'on SIGINT/SIGTERM, time tools get to stop before their process group is killed (default: 30s)',
      },
      approve: {
        type: 'string',
        multiple: true,
        value: 'U',
        help: 'approve re-running U where it is not safe (drift repair, reapply), or the deletes and replaces its plan makes (OpenTofu, Terraform); repeatable',
      },
      unit: { type: 'string', multiple: true, value: 'U', help: 'with --reapply: a unit to execute again; repeatable' },
      reapply: { type: 'boolean', help: 'execute the --unit units although their receipts are current' },
      reason: {
        type: 'string',
        value: 'TEXT',
        help: 'why (with --reapply, --from or --allow-older-source; recorded with who asked)',
      },
      plan: {
        type: 'string',
        value: 'TOKEN|FILE',
        help: 'execute exactly the plan `nyl plan` printed this token for (or wrote to FILE with --out), or refuse it when stale',
      },
      ...RECOVERY,
      'allow-config-change': {
        type: 'boolean',
        help: 'with --failed/--from: run units whose configuration changed since the attempt that failed',
      },
      'allow-older-source': {
        type: 'boolean',
        help: 'apply a source commit older than the one the environment was last reconciled from (with --reason)',
      },
      deployments: {
        type: 'boolean',
        help: 'record the run as a GitHub deployment (a token in GITHUB_TOKEN or GH_TOKEN with deployments: write; the repository from GITHUB_REPOSITORY or a github.com remote)',
      },
      'deployment-environment': {
        type: 'string',
        value: 'NAME',
        help: 'with --deployments: the GitHub environment (default: the environment’s name)',
      },
    },
    exits: `0 done, or superseded (an older source: nothing run); ${WRITE_FAILS}, or a unit failed; 2 lease held or broken, units awaiting approval, a stale or missing plan, a promotion gate or a diverged source refused, a batch not done or run by another request; 4 uncertain units, lease lost, run cancelled, a write in doubt`,
  },
  plan: {
    summary: 'show what reconcile would execute; executes and writes nothing',
    required: [],
    description:
      'Compares the desired documents of the source commit with the recorded receipts. A unit that\n' +
      'consumes outputs of a unit that executes first is listed as `maybe`: it executes only if those\n' +
      'outputs change. Terraform and OpenTofu units that would execute are planned by their tool\n' +
      '(without the state lock): their resource changes are listed under the table, a unit whose plan\n' +
      'deletes or replaces resources waits for approval, and the token covers the changes. With\n' +
      '--group G: every environment of the group in promotion order, and one token for the batch\n' +
      '(`nyl reconcile --group G --plan <token>` runs it).',
    options: {
      ...COMMON,
      ...GROUP,
      ...RECOVERY,
      'unit-level': {
        type: 'boolean',
        help: 'run no terraform or tofu: plan Terraform and OpenTofu units at the unit level only',
      },
      out: {
        type: 'string',
        value: 'FILE',
        help: 'also write the plan (token, rows, resource changes; no values) to FILE for `nyl reconcile --plan FILE`',
      },
    },
    exits: `0 plan shown; ${READ_FAILS}; 4 a dead run is not imported yet (the plan shows the state after its import)`,
  },
  status: {
    summary: 'show the recorded state of every unit',
    required: [],
    description:
      'Reads the state refs (never history) and compares receipts with the configuration. With --unit:\n' +
      'only those units (an instance name#key, or a group name for all its instances) and their problems.',
    options: { ...COMMON, unit: { type: 'string', multiple: true, value: 'U', help: 'only this unit (repeatable)' } },
    exits: `0 all current or pending; ${READ_FAILS}, or a unit failed; 2 drifted units; 4 uncertain units, or a dead run not imported yet`,
  },
  recover: {
    summary: 'import a dead run, or record a decision about one unit; executes nothing',
    usage:
      'nyl recover -e ENV [--reason TEXT] [--local] [--remote NAME] [--config FILE|DIR] [--wait-lease DURATION] [--network-timeout DURATION] [--json]\n       nyl recover -e ENV --unit U (--retry | --accept RUN) --reason TEXT [--local] [--remote NAME] [--config FILE|DIR] [--wait-lease DURATION] [--network-timeout DURATION] [--json]',
    description:
      'Without --unit: imports the runs left behind (a broken or expired lease, a cancelled or killed\n' +
      'run) as a reconcile takeover would, with execution switched off, in one transition commit.\n' +
      'With --unit: --retry clears the unit’s condition (uncertain or failed) and keeps its last\n' +
      'receipt; --accept RUN adopts that run’s checkpoint as the receipt when its execution key and uid\n' +
      'equal the unit’s desired document. Either writes one observed commit; the next reconcile acts.',
    options: {
      ...COMMON,
      ...WAIT_LEASE,
      reason: REASON,
      unit: { type: 'string', value: 'U', help: 'the unit to decide about' },
      retry: { type: 'boolean', help: 'clear the condition; the next reconcile runs the unit again' },
      accept: { type: 'string', value: 'RUN', help: 'adopt the checkpoint RUN recorded for the unit' },
    },
    exits: `0 recorded, or nothing to import; ${WRITE_FAILS}; 2 lease held or broken, the state changed meanwhile, no checkpoint to accept, a held unit, unpublished --local work; 4 a dead run not imported yet, a write in doubt`,
  },
  'lease break': {
    summary: 'declare the lease holder gone (its runner died)',
    required: ['reason'],
    description:
      'Writes a broken lease naming who broke it and why. The holder, if alive, can no longer write\n' +
      'state. Only an operation that imports the broken run takes the lease over: nyl reconcile or\n' +
      'nyl recover -e ENV; other writes refuse with NYL-LEASE-BROKEN until then.',
    options: { ...COMMON, reason: REASON },
    exits: `0 broken, or nothing to break; ${WRITE_FAILS}; 2 the lease changed meanwhile; 4 a write in doubt`,
  },
  verify: {
    summary: 'ask each unit’s driver whether its receipt still holds; executes nothing',
    required: [],
    description:
      'Runs each unit’s check (Command: spec.check, exit 0 in sync, 2 drifted with stdout as the\n' +
      'detail, anything else unknown) and records the latest drift, health and attestations in one\n' +
      'observed commit, none when nothing changed. Never changes a receipt or a condition.',
    options: {
      ...COMMON,
      ...WAIT_LEASE,
      parallelism: { type: 'string', value: 'N', help: 'checks run at once (default: 4)' },
    },
    exits: `0 in sync; ${WRITE_FAILS}; 2 lease held or broken, the state changed meanwhile, unpublished --local work; 3 drift found; 4 a dead run not imported yet, a write in doubt`,
  },
  hold: {
    summary: 'hold a unit: reconcile neither executes nor re-resolves it',
    required: ['unit', 'reason'],
    description:
      'A held unit keeps the desired document of its last receipt, its consumers resolve from that\n' +
      'receipt, and its condition stays. `nyl exec` runs native repairs on it.',
    options: { ...COMMON, ...WAIT_LEASE, unit: { type: 'string', value: 'U', help: 'the unit' }, reason: REASON },
    exits: `0 held, or already held; ${WRITE_FAILS}, or an unknown unit; 2 lease held or broken, the state changed meanwhile; 4 a dead run not imported yet, a write in doubt`,
  },
  resume: {
    summary: 'resume a held unit',
    required: ['unit', 'reason'],
    description:
      'Ends the hold; the condition stays. After a repair with `nyl exec`, the unit’s first execution\n' +
      'needs the plan approved: `nyl plan -e ENV`, then `nyl reconcile -e ENV --plan <token>`.',
    options: { ...COMMON, ...WAIT_LEASE, unit: { type: 'string', value: 'U', help: 'the unit' }, reason: REASON },
    exits: `0 resumed, or not held; ${WRITE_FAILS}, or an unknown unit; 2 lease held or broken, the state changed meanwhile; 4 a dead run not imported yet, a write in doubt`,
  },
  exec: {
    summary: 'run a native state repair tool on a held unit',
    required: ['unit'],
    trailing: '-- COMMAND [ARGS…]',
    description:
      'Records the repair (lease and run ref naming the command) before the tool starts, runs it in\n' +
      'the repository root in its own process group, and keeps its exit code and output on the unit.',
    options: { ...COMMON, ...WAIT_LEASE, unit: { type: 'string', value: 'U', help: 'the held unit' }, reason: REASON },
    exits: `0 the tool succeeded; ${WRITE_FAILS}, or the tool failed; 2 the unit is not held, lease held or broken; 4 lease lost, a dead run not imported yet, a write in doubt`,
  },
  teardown: {
    summary: 'destroy every unit in reverse order and drop its state',
    required: [],
    description:
      'Runs each unit’s destroy (Command: spec.destroy) in reverse dependency order, units that left\n' +
      'the configuration included, and lands one transition dropping what was torn down. A unit\n' +
      'without destroy only loses its state. Imports a broken run first.',
    options: {
      ...COMMON,
      ...WAIT_LEASE,
      parallelism: { type: 'string', value: 'N', help: 'units of a wave at once (default: 4)' },
      deployments: {
        type: 'boolean',
        help: 'mark the environment’s latest GitHub deployment inactive once torn down (a token in GITHUB_TOKEN or GH_TOKEN with deployments: write; the repository from GITHUB_REPOSITORY or a github.com remote)',
      },
      'deployment-environment': {
        type: 'string',
        value: 'NAME',
        help: 'with --deployments: the GitHub environment (default: the environment’s name)',
      },
    },
    exits: `0 done; ${WRITE_FAILS}, or a destroy failed; 2 lease held, held units; 4 uncertain units, lease lost, a write in doubt`,
  },
  'state show': {
    summary: 'print the recorded documents of a unit (or every unit)',
    required: [],
    description: 'The observed and desired documents as stored on the state refs, as JSON.',
    options: { ...COMMON, unit: { type: 'string', value: 'U', help: 'one unit' } },
    exits: `0 shown; ${READ_FAILS}, or no state recorded for the unit`,
  },
  'state forget': {
    summary: 'drop a unit’s recorded state (receipt, condition, desired document)',
    required: ['unit'],
    description: 'For a unit that left the configuration or whose resource is gone by other means.',
    options: { ...COMMON, ...WAIT_LEASE, unit: { type: 'string', value: 'U', help: 'the unit' }, reason: REASON },
    exits: `0 forgotten, or nothing recorded; ${WRITE_FAILS}, or an unknown unit; 2 lease held or broken, the state changed meanwhile; 4 a dead run not imported yet, a write in doubt`,
  },
  runs: {
    summary: 'list the environment’s runs, newest first: live, dead, ended',
    required: [],
    description:
      'One line per run: id, operation, state (claimed, executing, succeeded, failed, cancelled, lost,\n' +
      'superseded, refused), start, duration, who (and the GitHub job), source and results counted.\n' +
      'Live runs and dead runs not imported yet show their phase and heartbeat age. Reads the state\n' +
      'refs’ tips and only as much of the run history (refs/nyl/ENV/history) as --limit needs.',
    options: {
      ...COMMON,
      limit: { type: 'string', value: 'N', help: 'at most N runs (default: 20)' },
      since: { type: 'string', value: 'DURATION', help: 'runs started in the last DURATION (e.g. 7d, 12h)' },
    },
    exits: `0 listed; ${READ_FAILS}`,
  },
  'runs show': {
    summary: 'print one run’s full record: states with times, units, who, imports',
    required: [],
    trailing: 'RUN',
    description:
      'Every state the run moved through with its time, each unit’s result, duration, exit code and\n' +
      'failure text, who ran it, what it imported and what imported it. RUN may be a prefix of the id.',
    options: { ...COMMON },
    exits: `0 shown; ${READ_FAILS}, or no such run`,
  },
  'runs logs': {
    summary: 'print the logs a run kept of its units (a header per unit)',
    required: [],
    trailing: 'RUN',
    description:
      'The kept log of each unit the run executed (its head and tail, the cut marked) — of a live,\n' +
      'dead, cancelled or evidence run too — and, for a unit killed mid-run, the tail of its output\n' +
      'as the last heartbeat saw it.',
    options: { ...COMMON, unit: { type: 'string', value: 'U', help: 'only this unit' } },
    exits: `0 shown; ${READ_FAILS}, no such run, or no log of the unit`,
  },
  'runs prune': {
    summary: 'drop run history older than a duration (only the history ref is rewritten)',
    required: ['older-than'],
    description:
      'Re-commits the history entries newer than the cutoff onto no parent, in one write under the\n' +
      'lease; the state refs and their tips are not touched. The remote frees the dropped commits at\n' +
      'its next garbage collection.',
    options: {
      ...COMMON,
      ...WAIT_LEASE,
      'older-than': { type: 'string', value: 'DURATION', help: 'drop runs that ended longer ago than this (e.g. 90d)' },
    },
    exits: `0 pruned, or nothing to prune; ${WRITE_FAILS}; 2 lease held or broken, the state changed meanwhile; 4 a dead run not imported yet, a write in doubt`,
  },
  environments: {
    summary: 'list the environments in promotion order (for people, and for a workflow matrix)',
    usage: 'nyl environments [--config FILE|DIR] [--json]',
    description:
      'Every environment of the configuration, each after the environments its promotion gate names\n' +
      '(promotion.after, or its group’s promote list). For a matrix:\n' +
      '`nyl environments --json | jq -c .facts.environments`.',
    options: { config: COMMON.config as OptionSpec, json: COMMON.json as OptionSpec, help: COMMON.help as OptionSpec },
    exits: '0 listed; 1 bad input or configuration',
  },
  site: {
    summary: 'write a static site of the environments from the state refs (no server)',
    usage:
      'nyl site --out DIR [-e ENV | --group G] [--no-logs] [--no-outputs] [--local] [--remote NAME] [--config FILE|DIR] [--network-timeout DURATION] [--json]',
    required: ['out'],
    description:
      'Reads each environment’s status and runs (what `nyl status` and `nyl runs` read) and writes\n' +
      'self-contained HTML to DIR: index.html (first what needs a person, then every environment in\n' +
      'promotion order), env/ENV/index.html (units, url, outputs, runs newest first; runs-2.html … for\n' +
      'older runs) and env/ENV/run/RUN.html (record, states, units, resource changes, logs), with one\n' +
      'site.css, relative links and no script. Every string is masked. A GitHub Pages site is public\n' +
      'unless the organisation has private Pages: see docs/site.md.',
    options: {
      ...COMMON,
      environment: { ...(COMMON.environment as OptionSpec), help: 'only this environment (default: all)' },
      group: { type: 'string', value: 'G', help: 'only the environments of EnvironmentGroup G' },
      out: { type: 'string', value: 'DIR', help: 'the folder to write the site to (created; its pages replaced)' },
      'no-logs': { type: 'boolean', help: 'leave the units’ logs out' },
      'no-outputs': { type: 'boolean', help: 'leave the units’ recorded outputs out' },
    },
    exits: `0 written; ${READ_FAILS}, an unknown environment or group, a folder that cannot be written`,
  },
  schema: {
    summary: 'print the JSON Schema of nyl.yaml documents (or, with --report, of --json output)',
    usage: 'nyl schema [--report]',
    description:
      'The schema editors use to validate nyl.yaml; it is also committed as schema/nyl.schema.json.\n' +
      'With --report: the schema of every command’s --json output (schema/nyl.report.schema.json).',
    options: {
      report: { type: 'boolean', help: 'the JSON Schema of --json output instead' },
      help: COMMON.help as OptionSpec,
    },
    exits: '0',
  },
};

/** Two-word commands by their first word: `nyl lease --help` lists them. */
export const GROUPS: Record<string, string[]> = Object.keys(COMMANDS).reduce(
  (g, name) => {
    const [first, second] = name.split(' ');
    if (second) g[first as string] = [...(g[first as string] ?? []), name];
    return g;
  },
  {} as Record<string, string[]>,
);

/** The usage line: required options first, then every other option in brackets. */
export function usageOf(name: string): string {
  const c = COMMANDS[name] as CommandSpec;
  if (c.usage) return c.usage;
  const flag = (k: string) => {
    const o = c.options[k] as OptionSpec;
    return `${o.short ? `-${o.short}` : `--${k}`}${o.value ? ` ${o.value}` : ''}`;
  };
  const required = ['environment', ...(c.required ?? [])].filter((k) => k in c.options);
  const optional = Object.keys(c.options).filter((k) => !required.includes(k) && k !== 'help');
  return [
    `nyl ${name}`,
    ...required.map(flag),
    ...optional.map((k) => `[${flag(k)}${c.options[k]?.multiple ? ' …' : ''}]`),
    ...(c.trailing ? [c.trailing] : []),
  ].join(' ');
}

function optionLines(options: Record<string, OptionSpec>): string[] {
  const rows = Object.entries(options).map(([name, o]) => {
    const flag = `${o.short ? `-${o.short}, ` : '    '}--${name}${o.value ? ` ${o.value}` : ''}`;
    return [flag, o.help] as const;
  });
  const w = Math.max(...rows.map(([f]) => f.length));
  return rows.map(([f, h]) => `  ${f.padEnd(w + 2)}${h}`);
}

export function commandHelp(name: string): string {
  const c = COMMANDS[name] as CommandSpec;
  return [
    `usage: ${usageOf(name)}`,
    '',
    c.summary,
    '',
    c.description,
    '',
    'options:',
    ...optionLines(c.options),
    '',
    `exit codes: ${c.exits}`,
    '',
  ].join('\n');
}

export function mainHelp(): string {
  const w = Math.max(...Object.keys(COMMANDS).map((k) => k.length));
  return [
    'usage: nyl <command> [options]',
    '',
    'Nyl reconciles deployment environments from a git repository and keeps leases, runs,',
    'checkpoints and receipts in git refs.',
    '',
    'commands:',
    ...Object.entries(COMMANDS).map(([k, c]) => `  ${k.padEnd(w + 2)}${c.summary}`),
    '',
    'Run `nyl <command> --help` for a command’s options.',
    'exit codes: 0 done; 1 failed or bad input; 2 refused or waiting on a person; 3 drift; 4 uncertainty',
    '',
  ].join('\n');
}

/** `nyl lease --help`, `nyl state --help`: the commands of a group. */
export function groupHelp(group: string): string {
  const names = GROUPS[group] ?? [];
  const w = Math.max(...names.map((k) => k.length));
  return [
    `usage: ${names.map((n) => `nyl ${n} …`).join(' | ')}`,
    '',
    'commands:',
    ...names.map((k) => `  ${k.padEnd(w + 2)}${COMMANDS[k]?.summary}`),
    '',
    `Run \`nyl ${names[0]} --help\` for a command’s options.`,
    '',
  ].join('\n');
}

/** Help for a topic of one or more words (`nyl help lease break`, `nyl help state`), or undefined. */
export function helpFor(words: string[]): string | undefined {
  const topic = words.join(' ');
  if (COMMANDS[topic]) return commandHelp(topic);
  if (words.length === 1 && GROUPS[topic]) return groupHelp(topic);
  return undefined;
}
