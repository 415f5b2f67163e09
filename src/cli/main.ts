import { configJsonSchema } from '../core/config/schema.js';
import { toolStats } from '../core/drivers/process.js';
import { gitStats } from '../core/git/exec.js';
import { isStorageFailure } from '../core/git/storage-failure.js';
import { isBatchReport } from '../core/ops/batch/report.js';
import { type JobLookup, noLookup } from '../core/ops/lease/github-job.js';
import type { RunReport, StatusReport } from '../core/ops/workspace/report.js';
import { type OpContext, openWorkspace } from '../core/ops/workspace/workspace.js';
import { configureWatchdog } from '../core/proc/watchdog.js';
import { setCurrentJob } from '../core/state/lease.js';
import { RemoteBackend } from '../core/state/remote-backend.js';
import { backoffStats } from '../core/util/backoff.js';
import { Cancellation } from '../core/util/cancel.js';
import { Exit, NylError, type Problem, problem } from '../core/util/errors.js';
import { masker } from '../core/util/mask.js';
import { batchJson, completeBatch, renderBatch } from './batch.js';
import { type CheckedOptions, checkOptions } from './check.js';
import { helpFor } from './commands.js';
import { completeCommands, completeProblem, type Mode } from './complete.js';
import { type Report, runCommand } from './dispatch.js';
import { refusedJson, reportJsonSchema, type Stats, toJson } from './json.js';
import { commandWords, earlyAnswer, parseOptions, type Values } from './parse.js';
import { progressReporter } from './progress.js';
import { renderOp, renderProblems, renderRun, renderStatus } from './render.js';

export interface Io {
  stdout: NodeJS.WriteStream;
  stderr: NodeJS.WriteStream;
  cwd: string;
}

/** Operations that are not runs say they were refused, as in seed 000 (`state-forget dev: refused`). */
const SAYS_REFUSED = ['runs-prune', 'recover', 'lease-break', 'hold', 'resume', 'exec', 'state-forget'];

/** One command line as it goes: what was asked, the mode its fixes are completed for, the workspace, the signals. */
class Invocation {
  readonly json: boolean;
  command: string | undefined;
  environment: string | undefined;
  mode: Mode;
  ctx: OpContext | undefined;
  progress: ReturnType<typeof progressReporter> | undefined;
  cancellation = new Cancellation();
  private readonly onSignal = (sig: NodeJS.Signals) => this.cancellation.cancel(sig);

  constructor(
    readonly argv: string[],
    readonly io: Io,
  ) {
    this.json = argv.includes('--json');
    this.mode = { local: argv.includes('--local') };
  }

  // Everything printed goes through the one masking step.
  out(text: string): void {
    this.io.stdout.write(masker.mask(text));
  }

  err(text: string): void {
    this.io.stderr.write(masker.mask(text));
  }

  listen(): void {
    process.on('SIGINT', this.onSignal);
    process.on('SIGTERM', this.onSignal);
  }

  end(): void {
    process.off('SIGINT', this.onSignal);
    process.off('SIGTERM', this.onSignal);
    this.ctx?.repo.close();
  }
}

/** Runs one command line; returns the exit code. Never lets a stack trace reach the user. */
export async function main(argv: string[], io: Io): Promise<number> {
  const inv = new Invocation(argv, io);
  try {
    return await run(inv);
  } catch (e) {
    return failed(inv, e);
  } finally {
    inv.end();
  }
}

/** Parse → answer what needs no workspace (help, version, schema, init) → check → open the workspace → run → print. */
async function run(inv: Invocation): Promise<number> {
  const words = commandWords(inv.argv);
  inv.command = words.command;
  const early = earlyAnswer(words);
  if (early !== undefined) return answer(inv, early);
  const { values, positionals } = parseOptions(words.command, words.rest);
  if (values.help) return answer(inv, helpFor([words.command]) as string);
  if (words.command === 'schema')
    return answer(inv, `${JSON.stringify(values.report ? reportJsonSchema() : configJsonSchema(), null, 2)}\n`);
  if (words.command === 'init') return init(inv, values);
  const o = checkOptions(words.command, values, positionals);
  inv.environment = o.environment || undefined;
  inv.mode = { local: values.local === true, remote: values.remote as string | undefined };
  const ctx = await open(inv, words.command, values, o);
  const ran = await runCommand({ ctx, command: words.command, values, positionals, o, json: inv.json });
  inv.progress?.stop();
  return print(inv, ran);
}

function answer(inv: Invocation, text: string): number {
  inv.out(text);
  return Exit.ok;
}

/** `nyl init` writes the configuration the workspace would need: it opens none (loaded on use, with the examples it embeds). */
async function init(inv: Invocation, values: Values): Promise<number> {
  const { report, text } = await (await import('./init.js')).runInit(values, inv.io.cwd);
  inv.out(inv.json ? `${JSON.stringify(toJson(report, statsOf(undefined)), null, 2)}\n` : text);
  return report.exit;
}

/** The workspace a command acts in: its cancel and grace, progress on stderr, which GitHub job holds a lease. */
async function open(inv: Invocation, command: string, values: Values, o: CheckedOptions): Promise<OpContext> {
  if (o.cancelGraceMs !== undefined) inv.cancellation = new Cancellation(o.cancelGraceMs);
  configureWatchdog({ graceMs: inv.cancellation.graceMs });
  inv.progress = progressReporter(
    inv.io.stderr,
    !inv.json && ['reconcile', 'teardown'].includes(command) && process.env.NYL_PROGRESS !== '0',
  );
  inv.listen();
  inv.ctx = await openWorkspace(
    {
      cwd: inv.io.cwd,
      config: values.config as string | undefined,
      local: values.local === true,
      remote: values.remote as string | undefined,
      waitLeaseMs: o.waitLeaseMs,
      networkTimeoutMs: o.networkTimeoutMs,
    },
    { cancellation: inv.cancellation, onEvent: inv.progress.onEvent, jobLookup: cliJobLookup() },
  );
  if (['reconcile', 'teardown', 'exec'].includes(command)) await identifyJob();
  return inv.ctx;
}

/** A report as a table (or --json), its fixes completed for the mode it ran in. */
function print(inv: Invocation, ran: Report): number {
  if (isBatchReport(ran)) {
    const batch = completeBatch(ran, inv.mode);
    inv.out(inv.json ? `${JSON.stringify(batchJson(batch, statsOf(inv.ctx)), null, 2)}\n` : renderBatch(batch));
    return batch.exit;
  }
  const report = complete(ran, inv.mode);
  if (inv.json) inv.out(`${JSON.stringify(toJson(report, statsOf(inv.ctx)), null, 2)}\n`);
  else if ('outcome' in report) inv.out(renderOp(report));
  else inv.out(report.operation === 'status' ? renderStatus(report as StatusReport) : renderRun(report as RunReport));
  return report.exit;
}

/** A refusal or failure: its problems on stderr (or as JSON), `<op> <env>: refused` where the seed prints it. */
function failed(inv: Invocation, e: unknown): number {
  inv.progress?.stop();
  const problems: Problem[] = (
    e instanceof NylError
      ? e.problems
      : [
          problem('NYL-INTERNAL', `unexpected failure: ${(e as Error)?.message ?? String(e)}`, {
            fix: 'this is a bug in nyl; report it with the command you ran (set NYL_DEBUG=1 for details)',
          }),
        ]
  ).map((p) => completeProblem(p, inv.mode));
  if (!(e instanceof NylError) && process.env.NYL_DEBUG) inv.err(`${(e as Error)?.stack}\n`);
  const exit = e instanceof NylError ? e.exit : Exit.failed;
  const op = (inv.command ?? 'nyl').replace(' ', '-');
  if (inv.json) {
    inv.out(`${JSON.stringify(refusedJson(op, inv.environment, exit, problems, statsOf(inv.ctx)), null, 2)}\n`);
    return exit;
  }
  // A stop the disk forced after something ran (an exec's repair) is no refusal.
  const ran = isStorageFailure(e) && exit === Exit.uncertain;
  if (inv.environment && SAYS_REFUSED.includes(op) && !ran) inv.out(`${op} ${inv.environment}: refused\n\n`);
  inv.err(`${renderProblems(problems)}\n`);
  return exit;
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
