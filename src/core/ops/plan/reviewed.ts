import * as z from 'zod/mini';
import type { KeptChanges } from '../../changes/model.js';
import { Exit, NylError, problem } from '../../util/errors.js';
import type { RunReport, UnitRow } from '../workspace/report.js';
import type { ReviewedPlan } from './token.js';

/**
 * A plan as it is kept for review and for `reconcile --plan`: its token, its unit-level rows and
 * each resource-level unit's changes (addresses, actions, digests: never a value). `nyl plan --out
 * FILE` writes it; a PR comment keeps the same in a hidden block.
 */

export interface PlanFile extends ReviewedPlan {
  schema: 'nyl.plan/v1';
  environment: string;
  source: string;
}

/** A row as the unit-level plan has it: a row waiting only for the approval of its deletes executes there. */
export const unitLevelResult = (r: Pick<UnitRow, 'result' | 'gate'>) => (r.gate ? 'execute' : r.result);

/** The kept form of a plan's report. */
export function keptPlan(report: RunReport): PlanFile {
  const token = String(report.extra?.find(([k]) => k === 'token')?.[1] ?? '');
  const changes: Record<string, KeptChanges> = {};
  for (const r of report.rows)
    if (r.changes)
      changes[r.unit] = {
        resources: r.changes.resources.map((c) => [c.address, c.action, c.digest]),
        outputs: r.changes.outputs.map((o) => [o.name, o.action]),
      };
  return {
    schema: 'nyl.plan/v1',
    environment: report.environment,
    source: report.source,
    token,
    rows: report.rows.map((r) => ({ unit: r.unit, result: unitLevelResult(r), executionKey: r.executionKey })),
    ...(Object.keys(changes).length ? { changes } : {}),
  };
}

const ACTION = z.enum(['create', 'update', 'replace', 'delete', 'read', 'forget']);
const PlanFileSchema = z.object({
  schema: z.literal('nyl.plan/v1'),
  environment: z.string(),
  source: z.string(),
  token: z.string().check(z.regex(/^v\d+\./)),
  rows: z.optional(z.array(z.object({ unit: z.string(), result: z.string(), executionKey: z.optional(z.string()) }))),
  changes: z.optional(
    z.record(
      z.string(),
      z.object({
        resources: z.array(z.tuple([z.string(), ACTION, z.string()])),
        outputs: z.array(z.tuple([z.string(), z.enum(['create', 'update', 'delete'])])),
      }),
    ),
  ),
});

/** A plan file read back (`reconcile --plan FILE`): refused with NYL-PLAN-FILE when it is not one, or of another environment. */
export function readPlanFile(text: string, path: string, environment: string): PlanFile {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (e) {
    throw planFileError(path, `it is not JSON (${(e as Error).message})`);
  }
  const r = PlanFileSchema.safeParse(parsed);
  if (!r.success) {
    const issue = r.error.issues[0];
    throw planFileError(path, `it is not a nyl plan file (${issue?.path.join('.') || 'document'}: ${issue?.message})`);
  }
  if (r.data.environment !== environment)
    throw planFileError(path, `it is a plan of ${r.data.environment}, not of ${environment}`);
  return r.data as PlanFile;
}

function planFileError(path: string, why: string): NylError {
  return new NylError(
    problem('NYL-PLAN-FILE', `the plan file ${path} cannot be used: ${why}`, {
      exit: Exit.failed,
      fix: 'pass the file `nyl plan -e <env> --out FILE` wrote, or the token it printed',
    }),
  );
}
