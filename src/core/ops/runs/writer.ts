import { isStorageFailure } from '../../git/storage-failure.js';
import type { Checkpoint, RunRecord } from '../../state/documents.js';
import { FILES } from '../../state/documents.js';
import { endRecord } from '../../state/run-record.js';
import type { RunSession } from '../../state/run-session.js';
import { prettyJson } from '../../util/canonical.js';
import { crashPoint } from '../../util/crash.js';
import { NylError } from '../../util/errors.js';
import { isoTime } from '../../util/time.js';
import { stoppedByStorage } from './storage-stop.js';

/** Another run took the lease between our read and our write: nothing executed yet. */
export class LostRace extends Error {}

/**
 * A run's writes (reconcile, teardown), in the order the protocol makes them: the first write takes the lease
 * and creates the run ref; every later one checkpoints the finished units with a renewal; the
 * run record is moved to its next state before each. A unit's checkpoint goes into the run ref's
 * files as soon as the unit ends, so the next write carries it — the heartbeat's too: in a long
 * wave (a slow instance, a retry's backoff) a unit that finished early is not lost with the run.
 */
export class RunWriter {
  acquired = false;
  private pending: Checkpoint[] = [];

  constructor(
    readonly session: RunSession,
    readonly record: RunRecord,
    private readonly now: () => number,
    /** The command that goes on from what a stopped run left. */
    private readonly command: 'reconcile' | 'teardown' = 'reconcile',
    /** Told once the first write took the lease (the faces start a GitHub deployment then). */
    private readonly onLease?: () => void,
  ) {}

  get run(): string {
    return this.session.run;
  }

  /** A unit's checkpoint, carried by the next write (a wave's, a retry's or the heartbeat's). */
  checkpoint(c: Checkpoint): void {
    this.pending.push(c);
    this.stage();
  }

  /** Puts the staged checkpoints in the run ref's files. */
  stage(): void {
    for (const c of this.pending) this.session.runFiles.set(FILES.runCheckpoint(c.name), Buffer.from(prettyJson(c)));
    this.pending = [];
  }

  /** One write: the first takes the lease (a lost race throws LostRace), later ones checkpoint and renew. */
  async write(deadlineMs: number): Promise<void> {
    const t = this.now();
    this.record.updatedAt = isoTime(t);
    this.record.deadline = isoTime(t + deadlineMs);
    this.stage();
    if (this.acquired) {
      crashPoint('before-checkpoint');
      await this.session.checkpoint(this.record, deadlineMs, t);
      crashPoint('after-checkpoint');
      return;
    }
    crashPoint('before-lease');
    if (!(await this.session.acquire(this.record, deadlineMs, t))) throw new LostRace();
    this.acquired = true;
    crashPoint('after-lease');
    this.onLease?.();
  }

  /** Ends a run that lands no transition (cancelled, failed): run ref finished, lease released. */
  async finish(state: RunRecord['state']): Promise<void> {
    this.stage();
    endRecord(this.record, state, this.now());
    await this.session.finish(this.record, this.now());
  }

  /**
   * After any failure: a run that lost its lease records what finished on its own ref (as
   * evidence) and says it stopped, so the next run imports it at once; any other failure marks
   * the run finished and releases the lease — unless a write is in doubt (the remote does not
   * answer, and the message says what follows). Returns the error to report: for a write the
   * disk refused, one that says what the run left behind.
   */
  async fail(e: unknown): Promise<unknown> {
    if (isStorageFailure(e)) return this.stoppedByStorage(e);
    await this.release(e);
    return e;
  }

  private async release(e: unknown): Promise<void> {
    if (!(e instanceof NylError)) {
      if (this.acquired && this.session.holding) await this.finish('failed').catch(() => undefined);
      return;
    }
    if (e.problems.some((p) => p.code === 'NYL-LEASE-LOST')) {
      this.stage();
      // Lost: its deadline is not extended, so the next run imports it at once.
      const t = isoTime(this.now());
      endRecord(this.record, 'lost', this.now());
      Object.assign(this.record, { deadline: t, updatedAt: t });
      await this.session.salvage(this.record).catch(() => 'none');
      return;
    }
    if (inDoubt(e)) return;
    if (this.acquired && this.session.holding) await this.finish('failed').catch(() => undefined);
  }

  /** A write the disk refused recorded nothing: before the lease was taken nothing ran; after, storage-stop.ts. */
  private async stoppedByStorage(e: NylError): Promise<NylError> {
    if (!this.acquired || !this.session.holding) return e;
    return stoppedByStorage(e, {
      session: this.session,
      environment: this.record.environment,
      end: () => this.finish('failed'),
      otherwise: (x) => this.release(x),
      command: this.command,
    });
  }
}

/** A write whose outcome could not be told: nothing more is sent (the remote does not answer). */
export function inDoubt(e: unknown): boolean {
  return e instanceof NylError && e.problems.some((p) => p.code === 'NYL-WRITE-IN-DOUBT');
}
