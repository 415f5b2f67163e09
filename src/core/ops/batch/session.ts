import type { RefUpdate } from '../../git/repo.js';
import { Exit, type Problem, problem } from '../../util/errors.js';
import { isoTime } from '../../util/time.js';
import type { OpContext } from '../workspace/workspace.js';
import { type BatchDoc, readBatch, writeBatch } from './record.js';

/** What one request does with the batch: the record, its tip, and who this request is. */
export interface Session {
  ctx: OpContext;
  ref: string;
  tip: string | undefined;
  doc: BatchDoc;
  request: string;
  holder: string;
  /** Changes not written yet (the record is written before each environment and at the end). */
  dirty: boolean;
  /** Refs deleted with the first write (expired batches of the group). */
  also: RefUpdate[];
  /** What the next write records, for its commit message (`e1 success, start e2`). */
  notes: string[];
}

/** Writes the record when it changed; false when another request wrote it first (said in `problems`). */
export async function flush(s: Session, problems: Problem[]): Promise<boolean> {
  if (!s.dirty) return true;
  const done = s.doc.environments.filter((e) => e.done).length;
  const message = `${s.notes.join(', ')} (${done} of ${s.doc.environments.length} done)`;
  s.doc.updatedAt = isoTime(s.ctx.now());
  s.doc.updatedBy = { request: s.request, holder: s.holder };
  const id = s.ref.slice(s.ref.lastIndexOf('/') + 1);
  const next = await writeBatch(s.ctx, {
    ref: s.ref,
    old: s.tip,
    doc: s.doc,
    message: `nyl: batch ${id} of ${s.doc.group}: ${message}`,
    also: s.also,
  });
  if (next) {
    s.tip = next;
    s.dirty = false;
    s.also = [];
    s.notes = [];
    return true;
  }
  problems.push(await busyProblem(s));
  return false;
}

async function busyProblem(s: Session): Promise<Problem> {
  const g = s.doc.group;
  let who = 'another request';
  try {
    const prefix = s.ref.slice(0, s.ref.indexOf('/_groups/'));
    const again = await readBatch(s.ctx, prefix, g, s.ref.slice(s.ref.lastIndexOf('/') + 1));
    if (again.doc) who = `another request (${again.doc.updatedBy.holder}, which wrote it at ${again.doc.updatedAt})`;
  } catch {
    /* the record cannot be read now: say what is known */
  }
  return problem(
    'NYL-BATCH-BUSY',
    `${who} is running batch ${s.doc.token}: the batch record ${s.ref} changed while this request ran; this request stops here (what it ran so far is kept on each environment's refs)`,
    {
      subject: g,
      exit: Exit.refused,
      fix: `let the other request finish (\`git log ${s.ref}\` shows its progress); if it died, run the same \`nyl reconcile --group ${g}${s.doc.failed ? ' --failed' : ''} --plan ${s.doc.token}\` again: it continues without running environments done`,
    },
  );
}
