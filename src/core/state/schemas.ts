import { z } from 'zod';

/**
 * The one schema layer for documents read from refs (docs/git-storage.md). A document whose
 * `schema` this nyl does not know, whose shape is wrong, or that is not JSON at all is
 * unreadable: never read as empty, never executed on, never written over.
 *
 * Objects are loose: fields a newer nyl of the same schema version adds are kept when a
 * document is copied forward, not dropped.
 */

const time = z.string().refine((s) => !Number.isNaN(Date.parse(s)), { message: 'is not a time' });
const str = z.string();
const strings = z.record(z.string(), z.string());
/** Attempts of a unit in one run (`retries`). */
const attempts = z.number().int().positive();

const githubJob = z.looseObject({
  serverUrl: str,
  apiUrl: str.optional(),
  repository: str,
  runId: str,
  runAttempt: str,
  job: str,
  runnerName: str.optional(),
  jobId: z.number().optional(),
  jobUrl: str.optional(),
});
const holder = z.looseObject({
  id: str,
  actor: str.optional(),
  workflowRun: str.optional(),
  github: githubJob.optional(),
});
const brokenInfo = z.looseObject({ at: time, by: str, reason: str });

export const LeaseSchema = z.looseObject({
  schema: z.literal('nyl.lease/v1'),
  environment: str,
  state: z.enum(['held', 'released', 'broken']),
  run: str,
  operation: str,
  holder,
  acquiredAt: time,
  renewedAt: time,
  deadline: time,
  heartbeatMs: z.number().positive().optional(),
  broken: brokenInfo.optional(),
});

const runState = z.enum([
  'claimed',
  'executing',
  'succeeded',
  'failed',
  'cancelled',
  'lost',
  'superseded',
  'refused',
  'timeout',
]);

export const RunRecordSchema = z.looseObject({
  schema: z.literal('nyl.run/v1'),
  run: str,
  environment: str,
  operation: str,
  state: runState,
  holder,
  source: str,
  startedAt: time,
  updatedAt: time,
  deadline: time,
  phase: z.enum(['resolution', 'wave', 'transition', 'finished']),
  wave: z.number().int().nonnegative().optional(),
  executing: z.array(str),
  basedOn: str.optional(),
  exec: z.looseObject({ unit: str, command: z.array(str), by: str, reason: str.optional() }).optional(),
  takenOver: z.looseObject({ run: str, leaseBroken: brokenInfo }).optional(),
  finishedAt: time.optional(),
  supervisor: z.looseObject({ host: str, pid: z.number(), groupsFile: str.optional() }).optional(),
  processGroups: z.array(z.number()).optional(),
  states: z
    .array(z.looseObject({ state: runState, at: time, wave: z.number().optional(), units: z.array(str).optional() }))
    .optional(),
  running: z.record(str, z.looseObject({ startedAt: time, elapsedMs: z.number() })).optional(),
  results: z
    .record(
      str,
      z.looseObject({
        result: str,
        kind: str.optional(),
        durationMs: z.number().optional(),
        exitCode: z.number().optional(),
        reason: str.optional(),
      }),
    )
    .optional(),
  importedBy: str.optional(),
  imported: z.array(str).optional(),
  ended: z.looseObject({ code: str, message: str }).optional(),
  plan: str.optional(),
  recovery: z.looseObject({ selection: str, roots: z.array(str), revision: str }).optional(),
  attempts: z.record(str, attempts).optional(),
});

export const CheckpointSchema = z.looseObject({
  schema: z.literal('nyl.checkpoint/v1'),
  name: str,
  kind: str,
  uid: str,
  executionKey: str,
  source: str.optional(),
  result: z.enum(['succeeded', 'failed', 'uncertain']),
  at: time,
  durationMs: z.number(),
  outputs: strings.optional(),
  artifacts: strings.optional(),
  exitCode: z.number().optional(),
  reason: str.optional(),
  retryable: z.boolean().optional(),
  attempts: attempts.optional(),
});

const receipt = z.looseObject({
  executionKey: str,
  uid: str,
  run: str,
  source: str.optional(),
  at: time,
  outputs: strings,
  artifacts: strings,
  attempts: attempts.optional(),
});

const condition = z.looseObject({
  state: z.enum(['uncertain', 'failed']),
  reason: str,
  run: str,
  since: time,
  retryable: z.boolean().optional(),
  exitCode: z.number().optional(),
  executionKey: str.optional(),
  checkpointed: z.boolean().optional(),
  revision: str.optional(),
  attempts: attempts.optional(),
});

export const ObservedUnitSchema = z.looseObject({
  schema: z.literal('nyl.observed-unit/v1'),
  name: str,
  kind: str,
  uid: str,
  receipt: receipt.optional(),
  condition: condition.optional(),
  lastRun: str,
  drift: z
    .looseObject({ state: z.enum(['in-sync', 'drifted', 'unknown']), detail: str, at: time, receiptKey: str })
    .optional(),
  health: z.looseObject({ state: str, detail: str, at: time }).optional(),
  attestations: strings.optional(),
  hold: z.looseObject({ by: str, reason: str, at: time }).optional(),
  repairs: z
    .array(
      z.looseObject({
        run: str,
        command: z.array(str),
        by: str,
        reason: str.optional(),
        at: time,
        exitCode: z.number().nullable(),
        output: str,
      }),
    )
    .optional(),
  approvalRequired: z.looseObject({ reason: str, since: time }).optional(),
});

export const DesiredUnitSchema = z.looseObject({
  schema: z.literal('nyl.desired-unit/v1'),
  name: str,
  kind: str,
  uid: str,
  executionKey: str,
  spec: z.record(z.string(), z.unknown()),
  inputs: strings,
  needs: z.array(str),
  timeout: str,
});

export const EnvironmentFileSchema = z.looseObject({
  schema: z.literal('nyl.environment/v1'),
  environment: str,
  waves: z.array(z.array(str)),
  source: str.optional(),
});

export const DOCUMENT_SCHEMAS = {
  lease: LeaseSchema,
  run: RunRecordSchema,
  checkpoint: CheckpointSchema,
  observed: ObservedUnitSchema,
  desired: DesiredUnitSchema,
  environment: EnvironmentFileSchema,
} as const;
export type DocumentKind = keyof typeof DOCUMENT_SCHEMAS;

const EXPECTED: Record<DocumentKind, string> = {
  lease: 'nyl.lease/v1',
  run: 'nyl.run/v1',
  checkpoint: 'nyl.checkpoint/v1',
  observed: 'nyl.observed-unit/v1',
  desired: 'nyl.desired-unit/v1',
  environment: 'nyl.environment/v1',
};

/** Why a document's `schema` is not the one expected: written by a newer nyl, or not ours at all. */
function schemaCause(kind: DocumentKind, found: unknown): string {
  const expected = EXPECTED[kind];
  if (typeof found !== 'string') return `it has no schema field (expected ${expected})`;
  const [family, version] = found.split('/');
  const [expectedFamily, expectedVersion] = expected.split('/');
  if (family === expectedFamily && version && Number(version.slice(1)) > Number(expectedVersion?.slice(1)))
    return `unknown schema ${found}: written by a newer nyl; upgrade`;
  return `unknown schema ${JSON.stringify(found)} (expected ${expected})`;
}

/** Parses and validates one document; returns it, or the cause it cannot be read. */
export function parseDocument<K extends DocumentKind>(
  kind: K,
  body: Buffer,
): { ok: true; doc: unknown } | { ok: false; cause: string } {
  let value: unknown;
  try {
    value = JSON.parse(body.toString('utf8'));
  } catch (e) {
    return { ok: false, cause: `invalid JSON: ${(e as Error).message}` };
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value))
    return {
      ok: false,
      cause: `not a JSON object (${value === null ? 'null' : Array.isArray(value) ? 'an array' : typeof value})`,
    };
  const schema = (value as { schema?: unknown }).schema;
  if (schema !== EXPECTED[kind]) return { ok: false, cause: schemaCause(kind, schema) };
  const r = DOCUMENT_SCHEMAS[kind].safeParse(value);
  if (r.success) return { ok: true, doc: r.data };
  const issue = r.error.issues[0];
  const field = issue?.path.map(String).join('.') || '(document)';
  return { ok: false, cause: `${field}: ${issue?.message ?? 'invalid'}` };
}
