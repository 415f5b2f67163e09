import { loadConfig } from '../../config/load.js';
import type { Config } from '../../config/model.js';
import { type Selection, selectEnvironment } from '../../resolve/select.js';
import { worstExit } from '../../util/errors.js';
import { selectionRevision } from '../evaluate/revision.js';
import { plan } from '../plan/plan.js';
import type { RunReport } from '../workspace/report.js';
import type { OpContext } from '../workspace/workspace.js';
import { groupMembers } from './members.js';
import type { BatchReport } from './report.js';
import { batchToken } from './token.js';

/** One environment's plan, as a batch keeps it. */
export interface EnvPlan {
  environment: string;
  report: RunReport;
  token: string;
  desired?: string;
  observed?: string;
  /** The configuration revision of all its units (launch settings, variable names: ops/evaluate/revision.ts). */
  config: string;
  /** Where its refs live. */
  prefix: string;
  /** Its plan warned NYL-CONFIG-CHANGED: its reconcile needs --allow-config-change. */
  configChanged: boolean;
  /** Something would execute or inspect: a reconcile of it takes the lease. */
  needsRun: boolean;
}

/** Rows a reconcile acts on (an approved plan's awaiting-approval rows execute too). */
const ACTS = new Set(['execute', 'maybe', 'inspect', 'awaiting-approval']);

export const fact = (r: RunReport, key: string) => r.extra?.find(([k]) => k === key)?.[1];

function configDigest(sel: Selection): string {
  return selectionRevision(sel, sel.units.keys());
}

/** Each environment planned as `nyl plan -e` plans it, one after another. */
export async function planEach(ctx: OpContext, cfg: Config, envs: string[], failed: boolean): Promise<EnvPlan[]> {
  const out: EnvPlan[] = [];
  for (const environment of envs) {
    // At the unit level: a batch reconciles each environment with its token, whose Terraform and
    // OpenTofu units plan in their waves (their deletes and replaces then wait for --approve).
    const report = await plan(ctx, { environment, resources: { run: false }, ...(failed ? { failed } : {}) });
    const sel = selectEnvironment(cfg, environment);
    out.push({
      environment,
      report,
      token: String(fact(report, 'token')),
      desired: report.desired,
      observed: report.observed,
      config: configDigest(sel),
      configChanged: report.problems.some((p) => p.code === 'NYL-CONFIG-CHANGED'),
      prefix: sel.prefix,
      needsRun: report.rows.some((r) => ACTS.has(r.result)),
    });
  }
  return out;
}

export async function loadGroup(ctx: OpContext, group: string): Promise<{ cfg: Config; members: string[] }> {
  const cfg = await loadConfig(ctx.repo, { config: ctx.opts.config, cwd: ctx.opts.cwd });
  return { cfg, members: groupMembers(cfg, group) };
}

/** `nyl plan --group G`: every environment's plan in promotion order, and one token for the batch. */
export async function planGroup(ctx: OpContext, opts: { group: string; failed?: boolean }): Promise<BatchReport> {
  const failed = opts.failed === true;
  const { cfg, members } = await loadGroup(ctx, opts.group);
  const plans = await planEach(ctx, cfg, members, failed);
  const token = batchToken({ group: opts.group, failed, plans });
  const problems = plans.flatMap((p) => p.report.problems);
  return {
    batch: true,
    operation: 'plan',
    group: opts.group,
    outcome: plans.some((p) => p.needsRun) ? 'planned' : 'nothing to do',
    token,
    source: cfg.source,
    failed,
    environments: plans.map((p) => ({
      environment: p.environment,
      token: p.token,
      state: 'planned',
      result: String(fact(p.report, 'plan') ?? ''),
      exit: p.report.exit,
      report: p.report,
    })),
    problems,
    exit: worstExit(plans.map((p) => p.report.exit)),
  };
}
