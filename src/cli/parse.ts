import { parseArgs } from 'node:util';
import { Exit, NylError, problem } from '../core/util/errors.js';
import { COMMANDS, GROUPS, groupHelp, helpFor, mainHelp } from './commands.js';

/** Parsing the command line: the command's words, help and version, and its options by its spec. */

export const VERSION = '0.1.0';

export type Values = Record<string, string | boolean | string[] | undefined>;

export function usage(message: string, fix: string): NylError {
  return new NylError(problem('NYL-USAGE', message, { fix, exit: Exit.failed }));
}

/** Commands that name one run after their options. */
export const RUN_ARG = ['runs show', 'runs logs'];

/** The command (one word, or two: `lease break`) and the arguments after it. */
export function commandWords(argv: string[]): { command: string; rest: string[] } {
  const [first = '', ...tail] = argv;
  const joined = tail[0] && !tail[0].startsWith('-') ? `${first} ${tail[0]}` : undefined;
  return joined && COMMANDS[joined] ? { command: joined, rest: tail.slice(1) } : { command: first, rest: tail };
}

/** Help, version and group help: answered before any option is parsed. */
export function earlyAnswer({ command, rest }: { command: string; rest: string[] }): string | undefined {
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

export function parseOptions(command: string, rest: string[]): { values: Values; positionals: string[] } {
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
