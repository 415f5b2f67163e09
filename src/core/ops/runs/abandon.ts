import { FILES, type LeaseDoc, type RunRecord } from '../../state/documents.js';
import { prettyJson } from '../../util/canonical.js';
import { isoTime } from '../../util/time.js';
import { loadEnvironment, type OpContext } from '../workspace/workspace.js';

/**
 * For a CI post step after its main step was killed: if this job's run still holds the lease,
 * mark its run ref finished (what it was executing stays listed, so the next run imports those
 * units as uncertain) and release the lease in one write, so the next run takes over at once.
 */
export async function releaseAbandoned(
  ctx: OpContext,
  opts: { environment: string; isOurs: (lease: LeaseDoc) => boolean; note: string },
): Promise<{ released?: string }> {
  // Whatever cannot be read is not this job's to release (nor to write over).
  const { state } = await loadEnvironment(ctx, opts.environment, () => true);
  const lease = state.lease;
  if (lease?.state !== 'held' || !opts.isOurs(lease)) return {};
  const run = state.runs.get(lease.run);
  const author = await ctx.repo.signature();
  const now = isoTime(ctx.now());
  const batch = ctx.repo.batch();
  const released: LeaseDoc = { ...lease, state: 'released', renewedAt: now, deadline: now };
  const leaseCommit = batch.commit({
    tree: batch.tree(new Map([[FILES.lease, Buffer.from(prettyJson(released))]])),
    parents: state.tips.lease ? [state.tips.lease] : [],
    author,
    message: `nyl: release lease ${opts.environment} from ${lease.run} (${opts.note})`,
  });
  const updates = [{ ref: state.refs.lease, old: state.tips.lease, new: leaseCommit }];
  if (run?.record) {
    const files = await ctx.repo.readTreeRecursive((await ctx.repo.readCommit(run.tip))?.tree ?? '');
    const tree = new Map([...files].map(([p, oid]) => [p, { oid }] as [string, { oid: string } | Buffer]));
    const record: RunRecord = { ...run.record, state: 'cancelled', phase: 'finished', finishedAt: now, updatedAt: now };
    tree.set(FILES.run, Buffer.from(prettyJson({ ...record, note: opts.note })));
    const runCommit = batch.commit({
      tree: batch.tree(tree),
      parents: [run.tip],
      author,
      message: `nyl: run ${lease.run} finished by its post step`,
    });
    updates.push({ ref: run.ref, old: run.tip, new: runCommit });
  }
  await batch.flush();
  return (await ctx.backend.update(updates)) ? { released: lease.run } : {};
}
