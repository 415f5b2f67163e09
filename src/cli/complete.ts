import type { Problem } from '../core/util/errors.js';

/** Where the command that printed a message keeps state: what a pasted nyl command needs to say it. */
export interface Mode {
  local: boolean;
  /** The remote, when it is not `origin`. */
  remote?: string;
}

/**
 * Makes every nyl command quoted in a message (`` `nyl recover -e dev …` ``) complete for the mode
 * the message was printed in: `--local` for a local run, `--remote NAME` for another remote, so a
 * fix works when pasted. Commands without `-e` or `--group` (a mention, not a command) are left alone; an
 * `nyl exec` gets the flag before its `--`.
 */
export function completeCommands(text: string, mode: Mode): string {
  const flag = mode.local ? '--local' : mode.remote && mode.remote !== 'origin' ? `--remote ${mode.remote}` : '';
  if (!flag || !text.includes('`nyl ')) return text;
  return text.replace(/`(nyl [^`]*)`/g, (whole, cmd: string) => {
    if (!/ (-e|--group) \S/.test(cmd) || /(^| )--(local|remote)( |$)/.test(cmd)) return whole;
    const sep = cmd.indexOf(' -- ');
    return sep >= 0 ? `\`${cmd.slice(0, sep)} ${flag}${cmd.slice(sep)}\`` : `\`${cmd} ${flag}\``;
  });
}

export function completeProblem(p: Problem, mode: Mode): Problem {
  return {
    ...p,
    message: completeCommands(p.message, mode),
    ...(p.fix !== undefined ? { fix: completeCommands(p.fix, mode) } : {}),
  };
}
