import type { Signature } from '../git/objects.js';
import type { GitRepo, RefUpdate, TreeFiles } from '../git/repo.js';
import { prettyJson } from '../util/canonical.js';
import { Exit, NylError, problem } from '../util/errors.js';
import { isoTime } from '../util/time.js';
import type { RefBackend } from './backend.js';
import { FILES, type Holder, type LeaseDoc, type RunRecord } from './documents.js';
import { newLease } from './lease.js';
import type { EnvState } from './read.js';

function runSubject(run: string, r: RunRecord): string {
  if (r.phase === 'wave' && r.wave !== undefined)
    return `nyl: run ${run} wave ${r.wave + 1}: ${r.executing.join(', ')}`;
  return `nyl: run ${run} ${r.phase === 'finished' ? r.state : r.phase}`;
}

export interface StateUpdate {
  ref: string;
  old: string | undefined;
  files: TreeFiles;
  message: string;
}

/**
 * A run's writes: every one is a single transaction that renews the lease (a new lease commit,
 * so the compare-and-swap always checks something) together with run and state refs.
 */
export class RunSession {
  private leaseTip: string | undefined;
  private runTip: string | undefined;
  readonly runFiles: TreeFiles = new Map();
  lease!: LeaseDoc;
  writes = 0;
  private prepared = false;

  constructor(
    private readonly repo: GitRepo,
    private readonly backend: RefBackend,
    private readonly state: EnvState,
    readonly run: string,
    readonly operation: string,
    readonly holder: Holder,
    private readonly author: Signature,
  ) {
    this.leaseTip = state.tips.lease;
  }

  get runRef(): string {
    return this.state.refs.run(this.run);
  }

  private leaseCommit(batch: ReturnType<GitRepo['batch']>, doc: LeaseDoc, message: string): string {
    const tree = batch.tree(new Map([[FILES.lease, Buffer.from(prettyJson(doc))]]));
    return batch.commit({ tree, parents: this.leaseTip ? [this.leaseTip] : [], author: this.author, message });
  }

  private runCommit(batch: ReturnType<GitRepo['batch']>, record: RunRecord, message: string): string {
    this.runFiles.set(FILES.run, Buffer.from(prettyJson(record)));
    const tree = batch.tree(this.runFiles);
    return batch.commit({ tree, parents: this.runTip ? [this.runTip] : [], author: this.author, message });
  }

  /** For operations without a run record (recover, lease break): one write that checks and releases the lease. */
  prepare(now: number): void {
    this.prepared = true;
    this.lease = newLease(this.state.environment, this.run, this.operation, this.holder, now, 0);
  }

  /** Takes the lease and creates the run ref in one write; a lost race is NYL-LEASE-HELD's business. */
  async acquire(record: RunRecord, deadlineMs: number, now: number): Promise<boolean> {
    this.lease = newLease(this.state.environment, this.run, this.operation, this.holder, now, deadlineMs);
    const batch = this.repo.batch();
    const lease = this.leaseCommit(
      batch,
      this.lease,
      `nyl: lease ${this.state.environment} for ${this.operation} ${this.run}`,
    );
    const run = this.runCommit(batch, record, runSubject(this.run, record));
    await batch.flush();
    const ok = await this.backend.update([
      { ref: this.state.refs.lease, old: this.leaseTip, new: lease },
      { ref: this.runRef, old: undefined, new: run },
    ]);
    this.writes++;
    if (ok) {
      this.leaseTip = lease;
      this.runTip = run;
    }
    return ok;
  }

  private renewed(now: number, deadlineMs: number, state: LeaseDoc['state'] = 'held'): LeaseDoc {
    this.lease = {
      ...this.lease,
      state,
      renewedAt: isoTime(now),
      deadline: isoTime(now + deadlineMs),
    };
    return this.lease;
  }

  private lost(): never {
    // A single-write operation (verify, hold, recover, …) held no lease: someone else wrote first.
    if (this.prepared)
      throw new NylError(
        problem(
          'NYL-STATE-CHANGED',
          `the state of ${this.state.environment} changed while ${this.operation} ran; nothing was written`,
          {
            exit: Exit.refused,
            fix: `run it again (\`nyl status -e ${this.state.environment}\` shows the new state)`,
          },
        ),
      );
    throw new NylError(
      problem(
        'NYL-LEASE-LOST',
        `the lease of ${this.state.environment} was broken or taken while run ${this.run} held it; nothing more was written to the state refs`,
        {
          fix: `run \`nyl status -e ${this.state.environment}\` to see who holds it; the next run imports what this run checkpointed`,
          exit: Exit.uncertain,
        },
      ),
    );
  }

  /** Checkpoints on the run ref with a lease renewal. */
  async checkpoint(record: RunRecord, deadlineMs: number, now: number): Promise<void> {
    await this.writeLeaseAndRun(
      this.renewed(now, deadlineMs),
      `nyl: renew lease ${this.state.environment} for ${this.run}`,
      record,
      runSubject(this.run, record),
    );
  }

  /** One write of a new lease commit and a new run ref commit, both checked. */
  private async writeLeaseAndRun(
    doc: LeaseDoc,
    leaseMessage: string,
    record: RunRecord,
    runMessage: string,
  ): Promise<void> {
    const batch = this.repo.batch();
    const lease = this.leaseCommit(batch, doc, leaseMessage);
    const run = this.runCommit(batch, record, runMessage);
    await batch.flush();
    const ok = await this.backend.update([
      { ref: this.state.refs.lease, old: this.leaseTip, new: lease },
      { ref: this.runRef, old: this.runTip, new: run },
    ]);
    this.writes++;
    if (!ok) this.lost();
    this.leaseTip = lease;
    this.runTip = run;
  }

  /**
   * Lands the transition: state refs, consumed dead run refs deleted or retired to evidence,
   * this run's ref deleted, lease released, in one write. A dead run that is in fact alive may
   * move its ref meanwhile (a late checkpoint): then, if the lease is still ours, that ref is
   * retired as evidence instead and the write retried once. Returns the new state tips.
   */
  async land(
    updates: StateUpdate[],
    now: number,
    consumed: { id: string; ref: string; tip: string; retire: boolean }[] = [],
  ): Promise<{ tips: Map<string, string>; late: string[] }> {
    const batch = this.repo.batch();
    const tips = new Map<string, string>();
    const refUpdates: RefUpdate[] = [];
    for (const u of updates) {
      const tree = batch.tree(u.files);
      const commit = batch.commit({ tree, parents: u.old ? [u.old] : [], author: this.author, message: u.message });
      tips.set(u.ref, commit);
      refUpdates.push({ ref: u.ref, old: u.old, new: commit });
    }
    const lease = this.leaseCommit(
      batch,
      this.releasedLease(now),
      `nyl: release lease ${this.state.environment} from ${this.run}`,
    );
    await batch.flush();
    const late: string[] = [];
    const attempt = (list: typeof consumed) => {
      const dead: RefUpdate[] = [];
      for (const c of list) {
        dead.push({ ref: c.ref, old: c.tip, new: undefined });
        if (c.retire) dead.push({ ref: this.state.refs.evidence(c.id), old: undefined, new: c.tip });
      }
      return this.backend.update([
        { ref: this.state.refs.lease, old: this.leaseTip, new: lease },
        ...refUpdates,
        ...(this.runTip ? [{ ref: this.runRef, old: this.runTip, new: undefined }] : []),
        ...dead,
      ]);
    };
    this.writes++;
    let ok = await attempt(consumed);
    if (!ok && consumed.length) {
      const fresh = await this.backend.list(this.state.refs.lease.replace(/\/lease$/, ''));
      if (fresh.get(this.state.refs.lease) === this.leaseTip) {
        const again = consumed.flatMap((c) => {
          const tip = fresh.get(c.ref);
          if (tip === undefined) return [];
          if (tip !== c.tip) late.push(c.id);
          // An evidence ref that moved holds a late checkpoint: keep it.
          if (tip !== c.tip && c.ref === this.state.refs.evidence(c.id)) return [];
          return [{ ...c, tip, retire: c.retire || tip !== c.tip }];
        });
        this.writes++;
        ok = await attempt(again);
      }
    }
    if (!ok) this.lost();
    this.leaseTip = lease;
    this.runTip = undefined;
    return { tips, late };
  }

  /** A broken lease taken over by an importer goes back when no import lands (seed: "puts the broken lease back"). */
  restoreOnRelease: LeaseDoc | undefined;

  private releasedLease(now: number): LeaseDoc {
    return this.renewed(now, 0, 'released');
  }

  /**
   * After losing the lease: checkpoints still go to this run's own ref (or, once retired, its
   * evidence ref) with a compare-and-swap on that ref alone. Late checkpoints: evidence, never state.
   */
  async salvage(record: RunRecord): Promise<'run' | 'evidence' | 'none'> {
    if (!this.runTip) return 'none';
    const batch = this.repo.batch();
    const run = this.runCommit(batch, record, `nyl: run ${this.run} late checkpoint`);
    await batch.flush();
    if (await this.backend.update([{ ref: this.runRef, old: this.runTip, new: run }])) {
      this.runTip = run;
      return 'run';
    }
    const evidence = this.state.refs.evidence(this.run);
    if (await this.backend.update([{ ref: evidence, old: this.runTip, new: run }])) return 'evidence';
    return 'none';
  }

  /** Ends a run that lands no transition: marks the run ref finished and releases the lease. */
  async finish(record: RunRecord, now: number): Promise<void> {
    await this.writeLeaseAndRun(
      this.restoreOnRelease ?? this.releasedLease(now),
      `nyl: release lease ${this.state.environment} from ${this.run}`,
      record,
      `nyl: run ${this.run} ${record.state}`,
    );
  }

  /** True once this session has taken the lease. */
  get holding(): boolean {
    return this.runTip !== undefined;
  }
}
