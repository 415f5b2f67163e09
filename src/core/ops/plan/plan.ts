import { loadConfig } from '../../config/load.js';
import { selectEnvironment } from '../../resolve/select.js';
import { withSources } from '../../resolve/unit-sources.js';
import type { EnvState } from '../../state/read.js';
import { emptyEnvState } from '../../state/read.js';
import { Exit, NylError, type Problem, problem, worstExit } from '../../util/errors.js';
import { type ToolUnit, warnUncommitted } from '../judge/files-gate.js';
import { configChanged, type RecoveryAsk, type RecoverySelection } from '../recovery/selection.js';
import type { RunReport, UnitRow } from '../workspace/report.js';
import { refuseUnknown as refuseUnknownUnit } from '../workspace/unit-names.js';
import { loadEnvironment, type OpContext } from '../workspace/workspace.js';
import { computePlan } from './compute.js';
import { planResources, type ResourcePlanning, withResourcePlans } from './resources.js';

export { computePlan, configKey, type Plan } from './compute.js';
export { keptKey } from './kept.js';
export { checkToken, staleProblem } from './stale.js';
export { type ReviewedPlan, tokenParts } from './token.js';

export interface PlanOptions extends RecoveryAsk {
  environment: string;
  /** On a pull request: a remote whose state cannot be read is planned as new, saying so. */
  asNewWhenUnreachable?: boolean;
  /** Whether Terraform/OpenTofu units are planned by their tools (default: yes). */
  resources?: ResourcePlanning;
}

/** What a reconcile would do now, executing nothing and writing nothing. */
export async function plan(ctx: OpContext, opts: PlanOptions): Promise<RunReport> {
  const { cfg, sel, state, unread } = await loadForPlan(ctx, opts);
  for (const u of opts.from ?? []) refuseUnknownUnit(sel, u);
  const computed = computePlan(sel, state, ctx.now(), opts);
  const resources = await planResources(ctx, sel, computed, opts.resources ?? { run: true });
  const { rows, token } = withResourcePlans(sel, computed, resources);
  const { problems, recovery } = computed;
  problems.unshift(...unread);
  problems.push(...resources.problems);
  // Every unit's: an edit the plan cannot show (it is of the commit) is said, not silently left out.
  problems.push(...(await warnUncommitted(ctx, sel, cfg.source, rows.map(rowUnit))));
  if (recovery?.changed.length) problems.push(configChanged(sel, recovery, 'warning'));
  return {
    operation: 'plan',
    environment: opts.environment,
    source: cfg.source,
    rows,
    problems,
    exit: worstExit(problems.map((p) => p.exit)),
    extra: [['plan', planSummary(rows)], ...(recovery ? recoveryFacts(state, rows, recovery) : []), ['token', token]],
    desired: state.tips.desired,
    observed: state.tips.observed,
  };
}

const rowUnit = (r: UnitRow): ToolUnit => ({ name: r.unit, kind: r.kind, ...(r.files ? { files: r.files } : {}) });

/** `--failed: b, then c (dependants)`: the roots, then what runs because it depends on them. */
function selectionText(r: RecoverySelection): string {
  if (!r.roots.length) return `${r.why}: nothing failed or is uncertain`;
  const roots = new Set(r.roots);
  const dependants = [...r.only].filter((u) => !roots.has(u)).sort();
  return `${r.why}: ${r.roots.join(', ')}${dependants.length ? `, then ${dependants.join(', ')} (dependants)` : ''}`;
}

/**
 * A recovery plan's preview (seed 004): what it selects, the receipts it reuses, the dead runs
 * imported first, and the configuration revision it runs against.
 */
function recoveryFacts(state: EnvState, rows: UnitRow[], r: RecoverySelection): [string, unknown][] {
  const reused = rows.filter((x) => x.result === 'current' && !r.only.has(x.unit)).map((x) => x.unit);
  const imports = [...state.runs.keys()].sort();
  return [
    ['selection', selectionText(r)],
    ['reused', reused.length ? reused.join(', ') : '(none)'],
    ...(imports.length ? [['imports', imports.join(', ')] as [string, unknown]] : []),
    ['revision', r.revision],
  ];
}

/**
 * Configuration and state for a plan. On a pull request (asNewWhenUnreachable) a remote whose
 * state this token cannot read (a fork's read-only token, no permission) is planned as new, saying so.
 */
async function loadForPlan(ctx: OpContext, opts: { environment: string; asNewWhenUnreachable?: boolean }) {
  try {
    return { ...(await loadEnvironment(ctx, opts.environment)), unread: [] as Problem[] };
  } catch (e) {
    const p = e instanceof NylError ? e.problems.find((x) => x.code === 'NYL-REMOTE-UNREACHABLE') : undefined;
    if (!opts.asNewWhenUnreachable || !p) throw e;
    const cfg = await loadConfig(ctx.repo, { config: ctx.opts.config, cwd: ctx.opts.cwd });
    const sel = await withSources(ctx.repo, cfg, selectEnvironment(cfg, opts.environment));
    const unread = problem(
      'NYL-REMOTE-UNREACHABLE',
      `the recorded state of ${opts.environment} could not be read (${p.message}): it is planned as new`,
      {
        severity: 'warning',
        subject: opts.environment,
        exit: Exit.ok,
        fix: 'give the plan job a token that can read the repository (contents: read)',
      },
    );
    return { cfg, sel, state: emptyEnvState(sel.prefix, opts.environment), unread: [unread] };
  }
}

/**
 * `2 to execute, 1 depending on outputs, 1 awaiting approval, 1 uncertain, 3 unchanged`: what
 * neither executes nor is current (uncertain, failed, held, blocked, drifted, to inspect) is
 * counted by its result, never as unchanged.
 */
function planSummary(rows: UnitRow[]): string {
  const counts = new Map<string, number>();
  for (const r of rows) counts.set(r.result, (counts.get(r.result) ?? 0) + 1);
  const take = (result: string) => {
    const n = counts.get(result) ?? 0;
    counts.delete(result);
    return n;
  };
  const named = [
    `${take('execute')} to execute`,
    ...[
      ['maybe', 'depending on outputs'],
      ['awaiting-approval', 'awaiting approval'],
      ['skipped', 'not selected'],
      ['inspect', 'to inspect'],
    ].flatMap(([result, words]) => {
      const n = take(result as string);
      return n ? [`${n} ${words}`] : [];
    }),
  ];
  const unchanged = take('current');
  return [...named, ...[...counts].map(([result, n]) => `${n} ${result}`), `${unchanged} unchanged`].join(', ');
}
