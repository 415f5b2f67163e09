import * as z from 'zod/mini';
import type { RefUpdate } from '../../git/repo.js';
import { time } from '../../state/schemas.js';
import { prettyJson } from '../../util/canonical.js';
import { Exit, NylError, type Problem, problem } from '../../util/errors.js';
import '../../util/zod.js';
import type { OpContext } from '../workspace/workspace.js';

/**
 * The batch record, `nyl.batch/v1`, on `<prefix>/_groups/<group>/batches/<id>` (environment names
 * cannot start with `_`, so this never meets an environment's refs). One commit per write, each a
 * compare-and-swap on the ref: a lost one means another request is running the same batch.
 */
const exit = z.union([z.literal(0), z.literal(1), z.literal(2), z.literal(3), z.literal(4)]);
const str = z.string();
const opt = z.optional;

const EntrySchema = z.looseObject({
  environment: str,
  /** The environment's plan token the batch accepted. */
  plan: str,
  /** The tips that plan was made from, and the configuration revision of all its units. */
  desired: opt(str),
  observed: opt(str),
  config: str,
  /** Its plan warned NYL-CONFIG-CHANGED when the batch was recorded. */
  configChanged: opt(z.boolean()),
  /** When a request of this batch first went to reconcile it (kept from the first attempt). */
  started: opt(z.looseObject({ at: time, request: str })),
  /** Other plan tokens it was reconciled with (a continued run after an import): its landed run has one. */
  tokens: opt(z.array(str)),
  /** Its run finished (any result): a later request does not run it again. */
  done: opt(z.looseObject({ run: opt(str), result: str, exit, at: time, detail: opt(str) })),
  /** The latest attempt that did not finish it (a refusal, an error): the same token tries again. */
  last: opt(z.looseObject({ result: str, exit, code: opt(str), message: str, at: time })),
});

export const BatchSchema = z.looseObject({
  schema: z.literal('nyl.batch/v1'),
  token: str,
  group: str,
  failed: z.boolean(),
  source: str,
  createdAt: time,
  createdBy: str,
  updatedAt: time,
  /** The request that wrote last (each request has its own id) and who ran it. */
  updatedBy: z.looseObject({ request: str, holder: str }),
  environments: z.array(EntrySchema).check(z.minLength(1), z.maxLength(100)),
});

export type BatchEntry = z.infer<typeof EntrySchema>;
export type BatchDoc = z.infer<typeof BatchSchema>;

export const BATCH_FILE = 'batch.json';
/** Batch records are kept this long after their last write (seed 004: seven days). */
export const BATCH_RETENTION_MS = 7 * 24 * 3600 * 1000;

export function batchesPrefix(prefix: string, group: string): string {
  return `${prefix}/_groups/${group}/batches`;
}

export interface ReadBatch {
  ref: string;
  tip?: string;
  doc?: BatchDoc;
  /** The group's other batch refs with their tips (for retention). */
  others: Map<string, string>;
}

function unreadable(ref: string, cause: string): NylError {
  return new NylError(
    problem('NYL-BATCH-UNREADABLE', `the batch record ${ref} cannot be read: ${cause}`, {
      subject: ref,
      exit: Exit.failed,
      fix: `inspect it with \`git show ${ref}:${BATCH_FILE}\` (after \`git fetch origin '${ref}:${ref}'\` when it lives on the remote); once you know what it did, delete the ref (\`git push origin :${ref}\`, or \`git update-ref -d ${ref}\` with --local) and plan the batch again`,
    }),
  );
}

/** The group's batch refs (one fetch in remote mode) and the record of batch `id`, validated. */
export async function readBatch(ctx: OpContext, prefix: string, group: string, id: string): Promise<ReadBatch> {
  const base = batchesPrefix(prefix, group);
  const ref = `${base}/${id}`;
  const tips = await ctx.backend.list(base);
  const tip = tips.get(ref);
  tips.delete(ref);
  if (!tip) return { ref, others: tips };
  const c = await ctx.repo.readCommit(tip);
  if (!c) throw unreadable(ref, `its tip ${tip} is not a readable commit`);
  const files = await ctx.repo.readTreeRecursive(c.tree);
  const oid = files.get(BATCH_FILE);
  const o = oid ? await ctx.repo.readObject(oid) : undefined;
  if (o?.type !== 'blob') throw unreadable(ref, `it has no ${BATCH_FILE}`);
  let json: unknown;
  try {
    json = JSON.parse(o.body.toString('utf8'));
  } catch (e) {
    throw unreadable(ref, `${BATCH_FILE} is not JSON (${(e as Error).message})`);
  }
  const schema = (json as { schema?: unknown } | null)?.schema;
  if (schema !== 'nyl.batch/v1')
    throw unreadable(ref, `${BATCH_FILE} carries schema ${JSON.stringify(schema)}, which this nyl does not know`);
  const parsed = z.safeParse(BatchSchema, json);
  if (!parsed.success) {
    const i = parsed.error.issues[0];
    throw unreadable(ref, `${BATCH_FILE}: ${i?.path.join('.') || '(document)'} ${i?.message ?? 'is invalid'}`);
  }
  return { ref, tip, doc: parsed.data, others: tips };
}

/** Batch refs of the group whose last write is older than the retention: deleted with the next new batch. */
export async function expiredBatches(ctx: OpContext, others: Map<string, string>): Promise<RefUpdate[]> {
  const out: RefUpdate[] = [];
  for (const [ref, tip] of others) {
    const c = await ctx.repo.readCommit(tip);
    if (c && ctx.now() - c.time > BATCH_RETENTION_MS) out.push({ ref, old: tip, new: undefined });
  }
  return out;
}

/**
 * Writes the record as a new commit on its ref, compare-and-swap against `old`. Returns the new
 * tip, or undefined when the ref moved (another request wrote it). A push in doubt is said in the
 * batch's terms: the same command continues from whatever landed.
 */
export async function writeBatch(
  ctx: OpContext,
  w: { ref: string; old: string | undefined; doc: BatchDoc; message: string; also?: RefUpdate[] },
): Promise<string | undefined> {
  const batch = ctx.repo.batch();
  const tree = batch.tree(new Map([[BATCH_FILE, Buffer.from(prettyJson(w.doc))]]));
  const commit = batch.commit({
    tree,
    parents: w.old ? [w.old] : [],
    author: await ctx.repo.signature(),
    message: w.message,
  });
  await batch.flush();
  const again = `run the same \`nyl reconcile --group ${w.doc.group}${w.doc.failed ? ' --failed' : ''} --plan ${w.doc.token}\``;
  try {
    const ok = await ctx.backend.update([{ ref: w.ref, old: w.old, new: commit }, ...(w.also ?? [])], {
      environment: w.doc.group,
      what: `the write of batch record ${w.ref} (${w.message})`,
      ifLanded: 'the batch record holds it',
      ifNot: 'the batch record holds what it held before',
    });
    return ok ? commit : undefined;
  } catch (e) {
    if (!(e instanceof NylError)) throw e;
    const problems: Problem[] = e.problems.map((p) =>
      p.code === 'NYL-WRITE-IN-DOUBT'
        ? { ...p, fix: `once the remote answers again, ${again}: it goes on from what the batch record holds` }
        : p,
    );
    throw new NylError(problems);
  }
}
