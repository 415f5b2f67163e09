import type * as z from 'zod/mini';
import type { Config } from '../../config/model.js';
import type { CommandSpecSchema } from '../../config/schema.js';
import type { GitRepo } from '../../git/repo.js';
import type { DesiredUnit } from '../../resolve/desired.js';
import { expandFrom, type Selection, selectEnvironment } from '../../resolve/select.js';
import { withSources } from '../../resolve/unit-sources.js';
import { type EnvState, readEnvironment } from '../../state/read.js';
import { Exit, NylError, problem } from '../../util/errors.js';
import { evaluateAll } from '../evaluate/evaluate.js';
import { desiredFiles, sameFiles } from '../transition/documents.js';
import type { OpContext } from '../workspace/workspace.js';
import { sourceOrder } from './source-order.js';

/** Where an environment of a promotion gate stands for a source. */
export interface GateStatus {
  environment: string;
  /** The source it was last reconciled from. */
  source?: string;
  ready: boolean;
  /** What it lacks for the gate, in the operator's words. */
  missing: string[];
}

/** Whether a unit has a check a verify runs (a Command only with spec.check). */
export function verifiable(kind: string, spec: unknown): boolean {
  return kind !== 'Command' || !!(spec as z.infer<typeof CommandSpecSchema>).check;
}

/**
 * A promotion gate (`promotion: {after: [dev], verified: true}`, or a group's `promote` list): the
 * source may be reconciled here only once every environment named has it (or a descendant)
 * recorded, with no failed or uncertain unit, and, with `verified`, a verify of its current
 * receipts that found them in sync. One fetch per environment named.
 */
export async function promotionGate(
  ctx: OpContext,
  cfg: Config,
  sel: Selection,
  source: string,
): Promise<GateStatus[]> {
  const gate = sel.promotion;
  if (!gate) return [];
  return Promise.all(gate.after.map((name) => earlierEnvironment(ctx, cfg, name, source, gate.verified)));
}

/** Where one earlier environment stands for this source: what it lacks, if anything. */
async function earlierEnvironment(
  ctx: OpContext,
  cfg: Config,
  name: string,
  source: string,
  verified: boolean,
): Promise<GateStatus> {
  let other: Selection;
  try {
    other = await withSources(ctx.repo, cfg, selectEnvironment(cfg, name));
  } catch {
    return { environment: name, ready: false, missing: [`${name}'s configuration cannot be selected`] };
  }
  const state = await readEnvironment(ctx.repo, ctx.backend, other.prefix, name);
  expandFrom(other, (u) => state.observed.get(u)?.receipt?.outputs);
  const missing: string[] = [];
  if (state.unreadable.length) missing.push(`${name}'s recorded state cannot be read`);
  const at = state.recordedSource;
  const lacks = at ? await sourceLacking(ctx, other, state, source, at) : `${name} has no source recorded yet`;
  if (lacks) missing.push(lacks);
  const bad = [...state.observed.values()].filter((o) => o.condition && other.units.has(o.name));
  if (bad.length) missing.push(`${name} has ${bad.map((o) => `${o.name} (${o.condition?.state})`).join(', ')}`);
  const unverified = verified ? unverifiedUnits(other, state) : [];
  if (unverified.length) missing.push(`${name} has not been verified in sync: ${unverified.join(', ')}`);
  return { environment: name, ...(at ? { source: at } : {}), ready: !missing.length, missing };
}

/** Whether the environment's recorded source `at` holds this source (or a commit that changes nothing for it does). */
async function sourceLacking(
  ctx: OpContext,
  other: Selection,
  state: EnvState,
  source: string,
  at: string,
): Promise<string | undefined> {
  const name = other.environment;
  const order = await sourceOrder(ctx.repo, ctx.backend, source, at);
  if (order.kind === 'unknown')
    return `whether ${name}'s ${at.slice(0, 12)} contains this source could not be told (${order.why})`;
  if (order.kind === 'same' || order.kind === 'older') return undefined;
  // A commit that changes nothing for it (a README merge) leaves it where it was: as good as there.
  if (order.kind === 'newer' && unchangedBy(ctx.repo, other, state)) return undefined;
  return `${name} is at ${at.slice(0, 12)}, which does not contain this source ${source.slice(0, 12)}`;
}

/** Units with a receipt and a check that no verify found in sync since that receipt. */
function unverifiedUnits(other: Selection, state: EnvState): string[] {
  const out: string[] = [];
  for (const [unit, u] of other.units) {
    const o = state.observed.get(unit);
    if (!verifiable(u.doc.kind, u.doc.spec) || !o?.receipt) continue;
    const d = o.drift;
    if (!d || d.receiptKey !== o.receipt.executionKey || d.at < o.receipt.at)
      out.push(`${unit} (not verified since its receipt)`);
    else if (d.state !== 'in-sync') out.push(`${unit} (${d.state})`);
  }
  return out;
}

/**
 * Whether this source changes nothing for an environment: every unit current against its record
 * and the desired documents as recorded, so its reconcile would write nothing and never record
 * the source.
 */
function unchangedBy(repo: GitRepo, sel: Selection, state: EnvState): boolean {
  const evaluated = evaluateAll(sel, state);
  const docs = new Map<string, DesiredUnit>();
  for (const [n, e] of evaluated) {
    if (e.evaluation.action !== 'current' || !e.desired) return false;
    docs.set(n, e.desired);
  }
  return sameFiles(repo, desiredFiles(sel, docs, state), state.desiredFiles);
}

/** NYL-PROMOTION-PENDING: what the environments before this one still lack; nothing was executed. */
export function refusePending(sel: Selection, gate: GateStatus[]): void {
  const waiting = gate.filter((g) => !g.ready);
  if (!waiting.length) return;
  const env = sel.environment;
  const verify = sel.promotion?.verified ? ' and verify it' : '';
  throw new NylError(
    problem(
      'NYL-PROMOTION-PENDING',
      `${env} reconciles a source only after ${sel.promotion?.after.join(', ')}: ${waiting.flatMap((g) => g.missing).join('; ')}\nnothing was executed`,
      {
        subject: env,
        exit: Exit.refused,
        fix: `reconcile ${waiting.map((g) => g.environment).join(' and ')} with this source first${verify} (${waiting
          .map(
            (g) =>
              `\`nyl reconcile -e ${g.environment}\`${sel.promotion?.verified ? `, \`nyl verify -e ${g.environment}\`` : ''}`,
          )
          .join('; ')}), then run this again`,
      },
    ),
  );
}
