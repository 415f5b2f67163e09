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

const REASON: OptionSpec = { type: 'string', value: 'TEXT', help: 'why (recorded with who asked)' };

export interface CommandSpec {
  summary: string;
  usage: string;
  description: string;
  options: Record<string, OptionSpec>;
  exits: string;
}

export const COMMANDS: Record<string, CommandSpec> = {
  reconcile: {
    summary: 'execute what differs from the recorded state and record the result',
    usage: 'nyl reconcile -e ENV [--local] [--config FILE|DIR] [--parallelism N] [--json]',
    description:
      'Reads the configuration from the source commit (HEAD), takes the environment’s lease, executes\n' +
      'the units whose desired document differs from their receipt wave by wave (the units of a wave in\n' +
      'parallel), checkpoints after each wave and lands one transition commit. With nothing to do it\n' +
      'takes no lease and writes nothing.',
    options: {
      ...COMMON,
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
        help: 'approve re-running U where it is not safe (drift repair, reapply); repeatable',
      },
      unit: { type: 'string', multiple: true, value: 'U', help: 'with --reapply: a unit to execute again; repeatable' },
      reapply: { type: 'boolean', help: 'execute the --unit units although their receipts are current' },
      reason: { type: 'string', value: 'TEXT', help: 'why (with --reapply; recorded with who asked)' },
      plan: { type: 'string', value: 'TOKEN', help: 'execute exactly the plan `nyl plan` printed this token for' },
    },
    exits: '0 done; 1 a unit failed or bad input; 2 lease held; 4 uncertain units, lease lost or run cancelled',
  },
  plan: {
    summary: 'show what reconcile would execute; executes and writes nothing',
    usage: 'nyl plan -e ENV [--local] [--config FILE|DIR] [--json]',
    description:
      'Compares the desired documents of the source commit with the recorded receipts. A unit that\n' +
      'consumes outputs of a unit that executes first is listed as `maybe`: it executes only if those\n' +
      'outputs change.',
    options: COMMON,
    exits: '0 plan shown; 1 bad input; 4 a dead run is not imported yet (the plan shows the state after its import)',
  },
  status: {
    summary: 'show the recorded state of every unit',
    usage: 'nyl status -e ENV [--local] [--config FILE|DIR] [--json]',
    description: 'Reads the state refs (never history) and compares receipts with the configuration.',
    options: COMMON,
    exits: '0 all current or pending; 1 a unit failed; 2 drifted units; 4 uncertain units',
  },
  recover: {
    summary: 'import a dead run, or record a decision about one unit; executes nothing',
    usage:
      'nyl recover -e ENV --reason TEXT [--local]\n       nyl recover -e ENV --unit U (--retry | --accept RUN) --reason TEXT [--local]',
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
    exits: '0 recorded; 1 bad input; 2 lease held or broken, or no checkpoint to accept; 4 unimported run',
  },
  'lease break': {
    summary: 'declare the lease holder gone (its runner died)',
    usage: 'nyl lease break -e ENV --reason TEXT [--local]',
    description:
      'Writes a broken lease naming who broke it and why. The holder, if alive, can no longer write\n' +
      'state. Only an operation that imports the broken run takes the lease over: nyl reconcile or\n' +
      'nyl recover -e ENV; other writes refuse with NYL-LEASE-BROKEN until then.',
    options: { ...COMMON, reason: REASON },
    exits: '0 broken (or nothing to break); 1 bad input; 2 the lease changed meanwhile',
  },
  verify: {
    summary: 'ask each unit’s driver whether its receipt still holds; executes nothing',
    usage: 'nyl verify -e ENV [--local] [--wait-lease DURATION] [--json]',
    description:
      'Runs each unit’s check (Command: spec.check, exit 0 in sync, 2 drifted with stdout as the\n' +
      'detail, anything else unknown) and records the latest drift, health and attestations in one\n' +
      'observed commit, none when nothing changed. Never changes a receipt or a condition.',
    options: {
      ...COMMON,
      ...WAIT_LEASE,
      parallelism: { type: 'string', value: 'N', help: 'checks run at once (default: 4)' },
    },
    exits: '0 in sync; 1 bad input; 2 lease held or broken; 3 drift found',
  },
  hold: {
    summary: 'hold a unit: reconcile neither executes nor re-resolves it',
    usage: 'nyl hold -e ENV --unit U --reason TEXT [--local]',
    description:
      'A held unit keeps the desired document of its last receipt, its consumers resolve from that\n' +
      'receipt, and its condition stays. `nyl exec` runs native repairs on it.',
    options: { ...COMMON, ...WAIT_LEASE, unit: { type: 'string', value: 'U', help: 'the unit' }, reason: REASON },
    exits: '0 held; 1 bad input; 2 lease held or broken',
  },
  resume: {
    summary: 'resume a held unit',
    usage: 'nyl resume -e ENV --unit U --reason TEXT [--local]',
    description:
      'Ends the hold; the condition stays. After a repair with `nyl exec`, the unit’s first execution\n' +
      'needs the plan approved: `nyl plan -e ENV`, then `nyl reconcile -e ENV --plan <token>`.',
    options: { ...COMMON, ...WAIT_LEASE, unit: { type: 'string', value: 'U', help: 'the unit' }, reason: REASON },
    exits: '0 resumed; 1 bad input; 2 lease held or broken',
  },
  exec: {
    summary: 'run a native state repair tool on a held unit',
    usage: 'nyl exec -e ENV --unit U [--reason TEXT] [--local] -- COMMAND [ARGS…]',
    description:
      'Records the repair (lease and run ref naming the command) before the tool starts, runs it in\n' +
      'the repository root in its own process group, and keeps its exit code and output on the unit.',
    options: { ...COMMON, ...WAIT_LEASE, unit: { type: 'string', value: 'U', help: 'the held unit' }, reason: REASON },
    exits: 'the tool’s failure is 1; 2 the unit is not held, or the lease is held or broken',
  },
  teardown: {
    summary: 'destroy every unit in reverse order and drop its state',
    usage: 'nyl teardown -e ENV [--local] [--wait-lease DURATION] [--json]',
    description:
      'Runs each unit’s destroy (Command: spec.destroy) in reverse dependency order, units that left\n' +
      'the configuration included, and lands one transition dropping what was torn down. A unit\n' +
      'without destroy only loses its state. Imports a broken run first.',
    options: {
      ...COMMON,
      ...WAIT_LEASE,
      parallelism: { type: 'string', value: 'N', help: 'units of a wave at once (default: 4)' },
    },
    exits: '0 done; 1 a destroy failed; 2 lease held, or held units; 4 uncertain',
  },
  'state show': {
    summary: 'print the recorded documents of a unit (or every unit)',
    usage: 'nyl state show -e ENV [--unit U] [--local]',
    description: 'The observed and desired documents as stored on the state refs, as JSON.',
    options: { ...COMMON, unit: { type: 'string', value: 'U', help: 'one unit' } },
    exits: '0; 1 bad input',
  },
  'state forget': {
    summary: 'drop a unit’s recorded state (receipt, condition, desired document)',
    usage: 'nyl state forget -e ENV --unit U [--reason TEXT] [--local]',
    description: 'For a unit that left the configuration or whose resource is gone by other means.',
    options: { ...COMMON, ...WAIT_LEASE, unit: { type: 'string', value: 'U', help: 'the unit' }, reason: REASON },
    exits: '0 forgotten; 1 bad input; 2 lease held or broken',
  },
  schema: {
    summary: 'print the JSON Schema of nyl.yaml documents',
    usage: 'nyl schema',
    description: 'The schema editors use to validate nyl.yaml; it is also committed as schema/nyl.schema.json.',
    options: { help: COMMON.help as OptionSpec },
    exits: '0',
  },
};

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
    `usage: ${c.usage}`,
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
