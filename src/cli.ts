import { main } from './cli/main.js';
import { endAll } from './core/proc/children.js';
import { removeWorkdir } from './core/proc/workdir.js';

/**
 * Every way out ends every child nyl started and exits, once what was printed is written: a
 * stray handle (a reader process, a timer) must never keep a finished nyl waiting.
 */
function exit(code: number): void {
  endAll();
  removeWorkdir();
  process.exitCode = code;
  process.stdout.write('', () => process.stderr.write('', () => process.exit(code)));
}

function internal(e: unknown): void {
  process.stderr.write(
    `error NYL-INTERNAL\n  unexpected failure: ${(e as Error)?.message ?? String(e)}\n  fix: this is a bug in nyl; report it with the command you ran (set NYL_DEBUG=1 for details)\n`,
  );
  if (process.env.NYL_DEBUG) process.stderr.write(`${(e as Error)?.stack}\n`);
  exit(1);
}

process.on('uncaughtException', internal);
process.on('unhandledRejection', internal);
main(process.argv.slice(2), { stdout: process.stdout, stderr: process.stderr, cwd: process.cwd() }).then(
  exit,
  internal,
);
