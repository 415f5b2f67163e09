import { startEarlyFetch } from './cli/early-fetch.js';
import { endAll, endGently } from './core/proc/children.js';
import { removeWorkdir } from './core/proc/workdir.js';

/**
 * Every way out ends every child nyl started and exits, once what was printed is written: a
 * stray handle (a reader process, a timer) must never keep a finished nyl waiting. Fetches still
 * running are ended first the way git cleans up after (its locks). The first way out decides the
 * exit code.
 */
let exiting = false;
function exit(code: number): void {
  if (exiting) return;
  exiting = true;
  process.exitCode = code;
  void endingFetches().then(() => {
    endAll();
    removeWorkdir();
    process.stdout.write('', () => process.stderr.write('', () => process.exit(code)));
  });
}

/**
 * Ends the fetches still running (an early one no one took among them) the way git cleans up
 * after (their locks); a signal meanwhile ends them (and every child) at once.
 */
async function endingFetches(): Promise<void> {
  const hurry = () => endAll();
  process.on('SIGINT', hurry);
  process.on('SIGTERM', hurry);
  try {
    await endGently();
  } finally {
    process.off('SIGINT', hurry);
    process.off('SIGTERM', hurry);
  }
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

// The state fetch goes out first; the rest of nyl loads while the remote answers. A signal
// before main() is in charge ends the fetch with nyl, as it would have ended nyl alone.
let phase: 'loading' | 'main' | 'ending' = 'loading';
const beforeMain = (signal: NodeJS.Signals) => {
  if (phase !== 'loading') return;
  phase = 'ending';
  const stopped = endingFetches(); // listens for a second signal from here on
  process.off('SIGINT', beforeMain);
  process.off('SIGTERM', beforeMain);
  void stopped.then(() => {
    endAll();
    process.kill(process.pid, signal);
  });
};
process.on('SIGINT', beforeMain);
process.on('SIGTERM', beforeMain);

/** Loads the rest of nyl while the early fetch is out, then hands over to main(). */
async function start(): Promise<void> {
  startEarlyFetch(process.argv.slice(2), process.cwd());
  // Tests hold nyl here to signal it while it loads.
  const hold = Number(process.env.NYL_TEST_LOAD_DELAY_MS);
  if (hold > 0) await new Promise((resolve) => setTimeout(resolve, hold));
  const { main } = await import('./cli/main.js');
  if (phase !== 'loading') return;
  phase = 'main';
  main(process.argv.slice(2), { stdout: process.stdout, stderr: process.stderr, cwd: process.cwd() }).then(
    exit,
    internal,
  );
  // main() listens for signals before its first await: removing ours now loses none (removing the
  // last listener would drop a signal that arrived while the bundle loaded and was not handled yet).
  process.off('SIGINT', beforeMain);
  process.off('SIGTERM', beforeMain);
}

// No top-level await: the bundle is CommonJS (dist/cli.cjs), run by the loader (cli-loader.ts).
start().catch(internal);
