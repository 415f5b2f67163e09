import type { Signature } from '../git/objects.js';
import type { GitRepo, RefUpdate, TreeFiles } from '../git/repo.js';
import { guardedGroups } from '../proc/watchdog.js';
import { prettyJson } from '../util/canonical.js';
import { Exit, NylError, problem } from '../util/errors.js';
import { isoTime, withOffset } from '../util/time.js';
import type { RefBackend, WriteIntent } from './backend.js';
import { FILES, type Holder, type LeaseDoc, type RunRecord } from './documents.js';
import { heartbeatInterval, RENEW_MARGIN_MS } from './heartbeat.js';
import { appendHistory, endedToFold, type HistoryEntry, importedEntry } from './history.js';
import { GRACE_MS, newLease } from './lease.js';
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
 * so the compare-and-swap always checks something) together with run and state refs. Writes are
 * serialized: the heartbeat never races a wave's write. While the run holds the lease, the
 * heartbeat renews it every interval, so a taker can tell a live holder from a dead one.
 */
export class RunSession {
  private leaseTip: string | undefined;
  private runTip: string | undefined;
  readonly runFiles: TreeFiles = new Map();
  lease!: LeaseDoc;
  /** The deadline of the lease as the last write that landed recorded it (`lease` is the next write's). */
  heldUntil: string | undefined;
  /** The run ref's files as the last write that landed recorded them, and as the write under way has them. */
  private recordedFiles: TreeFiles = new Map();
  private sending: TreeFiles = new Map();
  writes = 0;
  private prepared = false;
  private queue: Promise<unknown> = Promise.resolve();
  private lastWrite = 0;
  private beat: { timer: NodeJS.Timeout; record: RunRecord } | undefined;
  private beatFailure: unknown;
  readonly heartbeatMs = heartbeatInterval();
  /**
   * While a wave runs: the units running, since when, and each one's output so far (bounded). Every
   * write of the run ref carries it — the heartbeat's too — so a run killed mid-unit leaves its
   * last output and how long its units had run.
   */
  progress: (() => { running: NonNullable<RunRecord['running']>; tails: Map<string, string> }) | undefined;
  private tailed = new Set<string>();

  constructor(
    private readonly repo: GitRepo,
    private readonly backend: RefBackend,
    private readonly state: EnvState,
    readonly run: string,
    readonly operation: string,
    readonly holder: Holder,
    private readonly author: Signature,
    private readonly now: () => number = Date.now,
  ) {
    this.leaseTip = state.tips.lease;
  }

  get runRef(): string {
    return this.state.refs.run(this.run);
  }

  private get env(): string {
    return this.state.environment;
  }

  /** One write at a time, in order. */
  private exclusive<T>(fn: () => Promise<T>): Promise<T> {
    const next = this.queue.then(fn, fn);
    this.queue = next.catch(() => undefined);
    return next;
  }

  private async send(updates: RefUpdate[], intent: Omit<WriteIntent, 'environment'>): Promise<boolean> {
    this.writes++;
    const ok = await this.backend.update(updates, { environment: this.env, ...intent });
    this.lastWrite = this.now();
    return ok;
  }

  private leaseCommit(batch: ReturnType<GitRepo['batch']>, doc: LeaseDoc, message: string): string {
    const tree = batch.tree(new Map([[FILES.lease, Buffer.from(prettyJson(doc))]]));
    return batch.commit({ tree, parents: this.leaseTip ? [this.leaseTip] : [], author: this.author, message });
  }

  private runCommit(batch: ReturnType<GitRepo['batch']>, record: RunRecord, message: string): string {
    // The tools running now, for a post step or `nyl lease break` on the same host.
    const groups = guardedGroups();
    if (groups.length || record.processGroups) record.processGroups = groups;
    this.carryProgress(record);
    this.runFiles.set(FILES.run, Buffer.from(prettyJson(record)));
    this.sending = new Map(this.runFiles);
    const tree = batch.tree(this.runFiles);
    return batch.commit({ tree, parents: this.runTip ? [this.runTip] : [], author: this.author, message });
  }

  private carryProgress(record: RunRecord): void {
    const p = record.phase === 'wave' ? this.progress?.() : undefined;
    for (const unit of this.tailed) if (!p?.tails.has(unit)) this.runFiles.delete(FILES.runTail(unit));
    this.tailed = new Set(p?.tails.keys() ?? []);
    for (const [unit, text] of p?.tails ?? []) this.runFiles.set(FILES.runTail(unit), Buffer.from(text));
    if (p && Object.keys(p.running).length) record.running = p.running;
    else delete record.running;
  }

  /** For operations without a run record (recover, lease break): one write that checks and releases the lease. */
  prepare(now: number): void {
    this.prepared = true;
    this.lease = newLease(this.env, this.run, this.operation, this.holder, now, 0);
  }

  /** Takes the lease and creates the run ref in one write; a lost race is NYL-LEASE-HELD's business. */
  async acquire(record: RunRecord, deadlineMs: number, now: number): Promise<boolean> {
    return this.exclusive(async () => {
      this.lease = {
        ...newLease(this.env, this.run, this.operation, this.holder, now, deadlineMs),
        heartbeatMs: this.heartbeatMs,
      };
      const batch = this.repo.batch();
      const lease = this.leaseCommit(batch, this.lease, `nyl: lease ${this.env} for ${this.operation} ${this.run}`);
      const run = this.runCommit(batch, record, runSubject(this.run, record));
      await batch.flush();
      const ok = await this.send(
        [
          { ref: this.state.refs.lease, old: this.leaseTip, new: lease },
          { ref: this.runRef, old: undefined, new: run },
        ],
        {
          what: `taking the lease of ${this.env} for run ${this.run} (${this.operation})`,
          ifLanded: `run ${this.run} holds the lease until ${withOffset(this.lease.deadline)} with nothing started; the next run waits for it (or \`nyl lease break -e ${this.env} --reason <text>\`) and imports nothing from it`,
          ifNot: 'nothing was written',
        },
      );
      if (ok) {
        this.leaseTip = lease;
        this.heldUntil = this.lease.deadline;
        this.recordedFiles = this.sending;
        this.runTip = run;
        this.startHeartbeat(record);
      }
      return ok;
    });
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
    this.stopBeat();
    // A single-write operation (verify, hold, recover, …) held no lease: someone else wrote first.
    if (this.prepared)
      throw new NylError(
        problem(
          'NYL-STATE-CHANGED',
          `the state of ${this.env} changed while ${this.operation} ran; nothing was written`,
          {
            exit: Exit.refused,
            fix: `run it again (\`nyl status -e ${this.env}\` shows the new state)`,
          },
        ),
      );
    throw new NylError(
      problem(
        'NYL-LEASE-LOST',
        `the lease of ${this.env} was broken or taken while run ${this.run} held it; nothing more was written to the state refs`,
        {
          fix: `run \`nyl status -e ${this.env}\` to see who holds it; the next run imports what this run checkpointed`,
          exit: Exit.uncertain,
        },
      ),
    );
  }

  /** Checkpoints on the run ref with a lease renewal. */
  async checkpoint(record: RunRecord, deadlineMs: number, now: number): Promise<void> {
    await this.exclusive(() => this.renewWrite(record, deadlineMs, now));
  }

  private renewWrite(record: RunRecord, deadlineMs: number, now: number): Promise<void> {
    const listed = record.executing.length ? ` and lists ${record.executing.join(', ')} as executing` : '';
    return this.writeLeaseAndRun(
      this.renewed(now, deadlineMs),
      `nyl: renew lease ${this.env} for ${this.run}`,
      record,
      runSubject(this.run, record),
      {
        what: `the write of run ${this.run} that renews its lease${listed}`,
        ifLanded: record.executing.length
          ? `its record lists ${record.executing.join(', ')} as executing although nyl stopped before starting them: the next run marks them uncertain, and since they never started, \`nyl recover -e ${this.env} --unit <unit> --retry --reason "never started"\` is safe for each`
          : `run ${this.run} holds the lease until ${withOffset(this.lease.deadline)}; the next run takes over after that (or after \`nyl lease break\`) and imports its checkpoints`,
        ifNot: `run ${this.run} holds the lease until its previous deadline; the next run takes over after it (or after \`nyl lease break\`) and imports what its run ref holds`,
      },
    );
  }

  /** One write of a new lease commit and a new run ref commit, both checked. */
  private async writeLeaseAndRun(
    doc: LeaseDoc,
    leaseMessage: string,
    record: RunRecord,
    runMessage: string,
    intent: Omit<WriteIntent, 'environment'>,
  ): Promise<void> {
    const batch = this.repo.batch();
    const lease = this.leaseCommit(batch, doc, leaseMessage);
    const run = this.runCommit(batch, record, runMessage);
    await batch.flush();
    const ok = await this.send(
      [
        { ref: this.state.refs.lease, old: this.leaseTip, new: lease },
        { ref: this.runRef, old: this.runTip, new: run },
      ],
      intent,
    );
    if (!ok) this.lost();
    this.leaseTip = lease;
    this.heldUntil = doc.deadline;
    this.recordedFiles = this.sending;
    this.runTip = run;
  }

  /**
   * Units whose checkpoint is not on the run ref as the last write that landed left it (whoever
   * made that write: a wave's, the heartbeat's, a retry's): what a run that stops now leaves
   * unrecorded.
   */
  /**
   * The write before a wave: its units' desired documents join the run files for it, and leave
   * them again if it fails — never recorded, never started, so no later write (the last one that
   * ends the run) carries them.
   */
  async announce(docs: [string, Buffer][], write: () => Promise<void>): Promise<void> {
    for (const [name, body] of docs) this.runFiles.set(FILES.runDesired(name), body);
    try {
      await write();
    } catch (e) {
      for (const [name] of docs) this.runFiles.delete(FILES.runDesired(name));
      throw e;
    }
  }

  /** The units the last landed write listed as executing. */
  landedExecuting(): string[] {
    const run = this.recordedFiles.get(FILES.run);
    try {
      return Buffer.isBuffer(run) ? ((JSON.parse(run.toString('utf8')) as RunRecord).executing ?? []) : [];
    } catch {
      return [];
    }
  }

  /** Whether this run has a checkpoint of `unit` (recorded or not). */
  checkpointed(unit: string): boolean {
    return this.runFiles.has(FILES.runCheckpoint(unit));
  }

  unrecordedUnits(): string[] {
    const out: string[] = [];
    // A checkpoint's path, as FILES lays it out: `<before>NAME<after>`.
    const [before, after] = FILES.runCheckpoint('\0').split('\0') as [string, string];
    for (const [path, content] of this.runFiles) {
      if (!path.startsWith(before) || !path.endsWith(after)) continue;
      const was = this.recordedFiles.get(path);
      const same = was === content || (Buffer.isBuffer(was) && Buffer.isBuffer(content) && was.equals(content));
      if (!same) out.push(path.slice(before.length, path.length - after.length));
    }
    return out.sort();
  }

  // ---- heartbeat -------------------------------------------------------------------------

  private startHeartbeat(record: RunRecord): void {
    const beat = { record, timer: setInterval(() => this.heartbeat(), this.heartbeatMs) };
    beat.timer.unref();
    this.beat = beat;
  }

  /** A renewal when no write renewed the lease for an interval; it moves the deadline only when near. */
  private heartbeat(): void {
    const beat = this.beat;
    if (!beat || this.beatFailure !== undefined) return;
    void this.exclusive(async () => {
      if (this.beat !== beat || this.now() - this.lastWrite < this.heartbeatMs * 0.9) return;
      const t = this.now();
      const left = Date.parse(beat.record.deadline) - t;
      const deadlineMs = left > RENEW_MARGIN_MS ? left : GRACE_MS;
      beat.record.deadline = isoTime(t + deadlineMs);
      beat.record.updatedAt = isoTime(t);
      await this.renewWrite(beat.record, deadlineMs, t);
    }).catch((e) => {
      this.beatFailure ??= e;
    });
  }

  /** The heartbeat found the lease lost (or could not write): start nothing more. */
  get heartbeatFailure(): unknown {
    return this.beatFailure;
  }

  /** A write made while units run (a retry's) failed: treated as the heartbeat's failure. */
  writeFailed(e: unknown): void {
    this.beatFailure ??= e;
  }

  private stopBeat(): void {
    if (this.beat) clearInterval(this.beat.timer);
    this.beat = undefined;
  }

  /** Waits for a heartbeat in flight; rethrows what it met (a lost lease). */
  async settleHeartbeat(): Promise<void> {
    await this.exclusive(async () => undefined);
    const f = this.beatFailure;
    if (f !== undefined) {
      this.beatFailure = undefined;
      this.stopBeat();
      throw f;
    }
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
    /** This run's own history entry (its final record and logs); consumed runs get theirs here. */
    own?: HistoryEntry,
  ): Promise<{ tips: Map<string, string>; late: string[] }> {
    await this.settleHeartbeat();
    this.stopBeat();
    return this.exclusive(() => this.landWrite(updates, now, consumed, own));
  }

  /**
   * The history ref's update of a landing write: each consumed run ref's entry (oldest first),
   * the ended refs folded in (and deleted), then this run's own.
   */
  private async historyWrite(
    batch: ReturnType<GitRepo['batch']>,
    now: number,
    consumed: { id: string; ref: string }[],
    own: HistoryEntry | undefined,
    /** The refs as read again after a lost race: history goes on from their tips. */
    fresh?: Map<string, string>,
  ): Promise<RefUpdate[]> {
    const imported = consumed
      .filter((c) => c.ref === this.state.refs.run(c.id))
      .map((c) => this.state.runs.get(c.id))
      .filter((r) => r !== undefined)
      .sort((a, b) => (a.id < b.id ? -1 : 1))
      .map((r) => importedEntry(r, this.run, now));
    const ended = endedToFold(this.state).filter((e) => !fresh || fresh.get(e.ref) === e.tip);
    const update = await appendHistory(this.repo, batch, {
      ref: this.state.refs.history,
      tip: fresh ? fresh.get(this.state.refs.history) : this.state.tips.history,
      // This run's own ref is deleted in the same write: its last commit stays reachable from history.
      entries: [...imported, ...(own ? [{ ...own, runTip: own.runTip ?? this.runTip }] : [])],
      ended,
      author: this.author,
    });
    if (!update) return [];
    return [update, ...ended.map((e) => ({ ref: e.ref, old: e.tip, new: undefined }))];
  }

  private async landWrite(
    updates: StateUpdate[],
    now: number,
    consumed: { id: string; ref: string; tip: string; retire: boolean }[],
    own: HistoryEntry | undefined,
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
    const heldUntil = this.lease?.deadline;
    const lease = this.leaseCommit(batch, this.releasedLease(now), `nyl: release lease ${this.env} from ${this.run}`);
    const history = await this.historyWrite(batch, now, consumed, own);
    await batch.flush();
    const late: string[] = [];
    const intent = this.prepared
      ? {
          what: `the ${this.operation} write of ${this.env}`,
          ifLanded: 'it is recorded',
          ifNot: 'nothing was written; run the command again',
        }
      : {
          what: `the transition of run ${this.run} (its results, and the lease released)`,
          ifLanded: 'its results are recorded and the lease is free',
          ifNot: `run ${this.run} holds the lease until ${heldUntil ? withOffset(heldUntil) : 'its deadline'}; the next run takes over after that (or after \`nyl lease break -e ${this.env} --reason <text>\`) and imports what its run ref holds: units of the last wave were not checkpointed there and become uncertain`,
        };
    const attempt = (list: typeof consumed, history: RefUpdate[]) => {
      const dead: RefUpdate[] = [];
      for (const c of list) {
        dead.push({ ref: c.ref, old: c.tip, new: undefined });
        if (c.retire) dead.push({ ref: this.state.refs.evidence(c.id), old: undefined, new: c.tip });
      }
      return this.send(
        [
          { ref: this.state.refs.lease, old: this.leaseTip, new: lease },
          ...refUpdates,
          ...(this.runTip ? [{ ref: this.runRef, old: this.runTip, new: undefined }] : []),
          ...dead,
          ...history,
        ],
        intent,
      );
    };
    let ok = await attempt(consumed, history);
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
        ok = await attempt(again, await this.historyAgain(now, again, own, fresh));
      }
    }
    if (!ok) this.lost();
    this.leaseTip = lease;
    this.runTip = undefined;
    return { tips, late };
  }

  /**
   * The history update of a landing write's second push, built again: a consumed run ref that is
   * gone was recorded by whoever deleted it (the run's own landing, which a read taken while that
   * write committed saw half done). Its entry would record it twice, and its tip, which that
   * history may not reach, would be a parent the remote declines to take from a shallow clone.
   */
  private async historyAgain(
    now: number,
    consumed: { id: string; ref: string }[],
    own: HistoryEntry | undefined,
    fresh: Map<string, string>,
  ): Promise<RefUpdate[]> {
    const batch = this.repo.batch();
    const history = await this.historyWrite(batch, now, consumed, own, fresh);
    await batch.flush();
    return history;
  }

  /**
   * A single write (prepared) that replaces refs outright — `nyl runs prune` re-commits the history
   * ref — checked against the lease, which it renews and releases in the same push.
   */
  async replace(updates: RefUpdate[], now: number, what: string): Promise<void> {
    await this.exclusive(async () => {
      const batch = this.repo.batch();
      const lease = this.leaseCommit(batch, this.releasedLease(now), `nyl: release lease ${this.env} from ${this.run}`);
      await batch.flush();
      const ok = await this.send([{ ref: this.state.refs.lease, old: this.leaseTip, new: lease }, ...updates], {
        what,
        ifLanded: 'it is done',
        ifNot: 'nothing was changed; run the command again',
      });
      if (!ok) this.lost();
      this.leaseTip = lease;
    });
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
    this.stopBeat();
    return this.exclusive(async () => {
      if (!this.runTip) return 'none';
      const batch = this.repo.batch();
      const run = this.runCommit(batch, record, `nyl: run ${this.run} late checkpoint`);
      await batch.flush();
      const intent = {
        what: `the late checkpoint of run ${this.run} (after it lost its lease)`,
        ifLanded: 'its run ref holds it as evidence',
        ifNot: 'the units it finished since its last write become uncertain at the next import',
      };
      if (await this.send([{ ref: this.runRef, old: this.runTip, new: run }], intent)) {
        this.runTip = run;
        return 'run';
      }
      const evidence = this.state.refs.evidence(this.run);
      if (await this.send([{ ref: evidence, old: this.runTip, new: run }], intent)) return 'evidence';
      return 'none';
    });
  }

  /** Ends a run that lands no transition: marks the run ref finished and releases the lease. */
  async finish(record: RunRecord, now: number): Promise<void> {
    this.stopBeat();
    await this.exclusive(() =>
      this.writeLeaseAndRun(
        this.restoreOnRelease ?? this.releasedLease(now),
        `nyl: release lease ${this.env} from ${this.run}`,
        record,
        `nyl: run ${this.run} ${record.state}`,
        {
          what: `the write that ends run ${this.run} (${record.state}) and releases the lease`,
          ifLanded: 'the run is marked finished and the lease is free: the next run takes over at once',
          ifNot: `run ${this.run} holds the lease until ${this.heldUntil ? withOffset(this.heldUntil) : 'its deadline'}; the next run takes over after that (or after \`nyl lease break\`) and imports what its run ref holds`,
        },
      ),
    );
  }

  /** True once this session has taken the lease. */
  get holding(): boolean {
    return this.runTip !== undefined;
  }
}
