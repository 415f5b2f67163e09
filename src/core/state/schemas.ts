import * as z from 'zod/mini';
import { validFast } from '../util/fast-validate.js';
import '../util/zod.js';

/**
 * The one schema layer for documents read from refs (docs/git-storage.md). A document whose
 * `schema` this nyl does not know, whose shape is wrong, or that is not JSON at all is
 * unreadable: never read as empty, never executed on, never written over.
 *
 * Objects are loose: fields a newer nyl of the same schema version adds are kept when a
 * document is copied forward, not dropped.
 */

/** A time as nyl writes it (ISO 8601); refs' documents and batch records use it. */
export const time = z
  .string()
  .check(z.refine((s: string) => !Number.isNaN(Date.parse(s)), { message: 'is not a time' }));
const str = z.string();
const strings = z.record(z.string(), z.string());
const num = z.number();
const opt = z.optional;
/** Attempts of a unit in one run (`retries`). */
const attempts = z.number().check(z.int(), z.positive());

const githubJob = z.looseObject({
  serverUrl: str,
  apiUrl: opt(str),
  repository: str,
  runId: str,
  runAttempt: str,
  job: str,
  runnerName: opt(str),
  jobId: opt(num),
  jobUrl: opt(str),
});
const holder = z.looseObject({
  id: str,
  actor: opt(str),
  workflowRun: opt(str),
  github: opt(githubJob),
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
  heartbeatMs: opt(z.number().check(z.positive())),
  broken: opt(brokenInfo),
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
  wave: opt(z.number().check(z.int(), z.nonnegative())),
  executing: z.array(str),
  basedOn: opt(str),
  exec: opt(z.looseObject({ unit: str, command: z.array(str), by: str, reason: opt(str) })),
  takenOver: opt(z.looseObject({ run: str, leaseBroken: brokenInfo })),
  finishedAt: opt(time),
  supervisor: opt(z.looseObject({ host: str, pid: num, groupsFile: opt(str) })),
  processGroups: opt(z.array(num)),
  states: opt(z.array(z.looseObject({ state: runState, at: time, wave: opt(num), units: opt(z.array(str)) }))),
  running: opt(z.record(str, z.looseObject({ startedAt: time, elapsedMs: num }))),
  results: opt(
    z.record(
      str,
      z.looseObject({
        result: str,
        kind: opt(str),
        durationMs: opt(num),
        exitCode: opt(num),
        reason: opt(str),
      }),
    ),
  ),
  importedBy: opt(str),
  imported: opt(z.array(str)),
  ended: opt(z.looseObject({ code: str, message: str })),
  plan: opt(str),
  recovery: opt(z.looseObject({ selection: str, roots: z.array(str), revision: str })),
  attempts: opt(z.record(str, attempts)),
});

const ACTIONS = ['create', 'update', 'replace', 'delete', 'read', 'forget'] as const;
const resourceList = z.array(z.tuple([str, z.enum(ACTIONS)]));
const changes = z.looseObject({
  counts: z.looseObject({ create: num, update: num, replace: num, delete: num, read: num }),
  resources: resourceList,
});

export const CheckpointSchema = z.looseObject({
  schema: z.literal('nyl.checkpoint/v1'),
  name: str,
  kind: str,
  uid: str,
  executionKey: str,
  source: opt(str),
  result: z.enum(['succeeded', 'failed', 'uncertain']),
  at: time,
  durationMs: num,
  outputs: opt(strings),
  artifacts: opt(strings),
  exitCode: opt(num),
  reason: opt(str),
  retryable: opt(z.boolean()),
  attempts: opt(attempts),
  files: opt(strings),
  changes: opt(changes),
});

const receipt = z.looseObject({
  executionKey: str,
  uid: str,
  run: str,
  source: opt(str),
  at: time,
  outputs: strings,
  artifacts: strings,
  attempts: opt(attempts),
  files: opt(strings),
  changes: opt(changes),
});

const condition = z.looseObject({
  state: z.enum(['uncertain', 'failed']),
  reason: str,
  run: str,
  since: time,
  retryable: opt(z.boolean()),
  exitCode: opt(num),
  executionKey: opt(str),
  files: opt(strings),
  checkpointed: opt(z.boolean()),
  revision: opt(str),
  attempts: opt(attempts),
});

export const ObservedUnitSchema = z.looseObject({
  schema: z.literal('nyl.observed-unit/v1'),
  name: str,
  kind: str,
  uid: str,
  receipt: opt(receipt),
  condition: opt(condition),
  lastRun: str,
  drift: opt(
    z.looseObject({
      state: z.enum(['in-sync', 'drifted', 'unknown']),
      detail: str,
      at: time,
      receiptKey: str,
      resources: opt(resourceList),
    }),
  ),
  health: opt(z.looseObject({ state: str, detail: str, at: time })),
  attestations: opt(strings),
  hold: opt(z.looseObject({ by: str, reason: str, at: time })),
  repairs: opt(
    z.array(
      z.looseObject({
        run: str,
        command: z.array(str),
        by: str,
        reason: opt(str),
        at: time,
        exitCode: z.nullable(num),
        output: str,
      }),
    ),
  ),
  approvalRequired: opt(z.looseObject({ reason: str, since: time })),
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
  files: opt(strings),
});

export const EnvironmentFileSchema = z.looseObject({
  schema: z.literal('nyl.environment/v1'),
  environment: str,
  waves: z.array(z.array(str)),
  source: opt(str),
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
  // Well-formed documents skip zod's per-value machinery; zod words what is wrong with the others.
  const fast = validFast(DOCUMENT_SCHEMAS[kind], value);
  if (fast) return { ok: true, doc: fast.data };
  const r = z.safeParse(DOCUMENT_SCHEMAS[kind], value);
  if (r.success) return { ok: true, doc: r.data };
  const issue = r.error.issues[0];
  const field = issue?.path.map(String).join('.') || '(document)';
  return { ok: false, cause: `${field}: ${issue?.message ?? 'invalid'}` };
}
