import { rulesOf, usesFiles } from '../../files/rules.js';
import type { FileIds } from '../../files/source-files.js';
import { uncommittedFiles } from '../../files/worktree.js';
import type { DesiredUnit } from '../../resolve/desired.js';
import type { Selection } from '../../resolve/select.js';
import { Exit, NylError, type Problem } from '../../util/errors.js';
import type { EvaluatedUnit } from '../evaluate/evaluate.js';
import type { OpContext } from '../workspace/workspace.js';

/** A unit whose tools may run: its resolved spec and file identities when it has them. */
export interface ToolUnit {
  name: string;
  kind: string;
  spec?: Record<string, unknown>;
  files?: FileIds;
}

/** A unit's document as a unit whose tools may run. */
export const toolUnit = (d: DesiredUnit): ToolUnit => ({ name: d.name, kind: d.kind, spec: d.spec, files: d.files });

/**
 * The units whose files in the working tree differ from the source commit's (files/worktree.ts):
 * NYL-FILES-UNCOMMITTED, one per unit. The paths checked are those of each unit's rules (the
 * resolved spec's, else the configured one's) and every file its key names.
 */
export async function uncommitted(
  ctx: OpContext,
  sel: Selection,
  source: string,
  units: ToolUnit[],
): Promise<Problem[]> {
  const sources = sel.sources;
  if (!sources || ctx.repo.bare) return [];
  const uses = units
    .filter((u) => usesFiles(u.kind))
    .map((u) => {
      const spec = (u.spec ?? sel.units.get(u.name)?.doc.spec ?? {}) as Record<string, unknown>;
      return { name: u.name, rules: rulesOf(u.kind, spec), ...(u.files ? { files: u.files } : {}) };
    })
    .filter((u) => u.rules.length || Object.keys(u.files ?? {}).length);
  return uncommittedFiles(ctx.repo.root, source, sources, uses);
}

/** The units whose tools may run in a reconcile: those that execute, are inspected, or wait for their inputs. */
export function mayRun(evaluations: Iterable<EvaluatedUnit>): ToolUnit[] {
  return [...evaluations]
    .filter((e) => ['execute', 'pending', 'inspect'].includes(e.evaluation.action))
    .map((e) => (e.desired ? toolUnit(e.desired) : { name: e.name, kind: e.kind }));
}

/** Refuses, before anything runs, to run tools on files nobody committed (exit 2). */
export async function refuseUncommitted(
  ctx: OpContext,
  sel: Selection,
  source: string,
  units: ToolUnit[],
): Promise<void> {
  const problems = await uncommitted(ctx, sel, source, units);
  if (problems.length) throw new NylError(problems);
}

/** The same, as warnings for a plan: what it shows is the commit's, and a reconcile here would refuse. */
export async function warnUncommitted(
  ctx: OpContext,
  sel: Selection,
  source: string,
  units: ToolUnit[],
): Promise<Problem[]> {
  const problems = await uncommitted(ctx, sel, source, units);
  return problems.map((p) => ({
    ...p,
    severity: 'warning' as const,
    exit: Exit.ok,
    message: `${p.message}; this plan is of the commit, and a reconcile here that runs ${p.subject} refuses until then`,
  }));
}
