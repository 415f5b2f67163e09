import { type GitResult, runGit } from '../git/exec.js';
import { gitLocked, lockLeftBehind } from '../git/lock-file.js';
import type { GitRepo, RefUpdate } from '../git/repo.js';
import {
  isStorageFailure,
  remoteStorageFailure,
  remoteStorageTrouble,
  storageCodeInFetch,
  storageFailure,
} from '../git/storage-failure.js';
import { Backoff } from '../util/backoff.js';
import { type Cancellation, DEFAULT_GRACE_MS } from '../util/cancel.js';
import { Exit, NylError, problem } from '../util/errors.js';
import type { RefBackend, WriteIntent } from './backend.js';
import { classifyPush, type PushVerdict, remoteMessages } from './push-outcome.js';
import {
  DEFAULT_NETWORK_TIMEOUT_MS,
  type EarlyFetch,
  FETCH,
  listingFetch,
  networkArgs,
  networkGraceMs,
  stopEarlyStateFetch,
  takeEarlyStateFetch,
  trackingRef,
} from './state-fetch.js';

export { DEFAULT_NETWORK_TIMEOUT_MS, trackingRef };

/** Bounds on every network call (docs/commands.md, "Network"). */
export interface NetworkOptions {
  /** One call's overall bound (default 60 s; `--network-timeout`, NYL_NETWORK_TIMEOUT). */
  timeoutMs: number;
  cancellation?: Cancellation;
}

/** Pushes of one write: the first and up to two more after a push that surely did not land. */
const MAX_PUSHES = 3;

/**
 * The remote is the authority: one fetch of the environment's refs per command, and every
 * write one `git push --atomic` with an explicit expected value on every ref it touches. A push
 * ends accepted, rejected (a lost race, or declined by the server), or unknown (transport error,
 * timeout, cancel): unknown is settled by reading the remote's tips again, never guessed.
 */
export class RemoteBackend implements RefBackend {
  readonly mode = 'remote' as const;
  /** Round trips to the remote made by this process (fetches, pushes, settling reads). */
  roundTrips = 0;
  /** Pushes sent again after one that did not land, and reads that settled an unknown outcome. */
  retries = 0;

  constructor(
    private readonly repo: GitRepo,
    readonly remote: string,
    private readonly net: NetworkOptions = { timeoutMs: DEFAULT_NETWORK_TIMEOUT_MS },
  ) {}

  /** The bound of the next call: the configured one, or what is left of the cancel grace window. */
  private timeout(): number {
    const left = this.net.cancellation?.remainingMs();
    return left === undefined ? this.net.timeoutMs : Math.max(500, Math.min(this.net.timeoutMs, left));
  }

  private network(args: string[], how: { guarded?: boolean; endGently?: boolean } = {}) {
    this.roundTrips++;
    return runGit([...networkArgs(this.timeout()), ...args], {
      cwd: this.repo.root,
      timeoutMs: this.timeout(),
      cancellation: this.net.cancellation,
      cancelGraceMs: networkGraceMs(this.net.cancellation?.graceMs),
      ...how,
    });
  }

  private unreachable(what: string, r: { stderr: string; ended?: string }, extra = ''): never {
    const detail = r.ended
      ? r.ended === 'timeout'
        ? `no answer within ${Math.round(this.timeout() / 1000)}s`
        : 'stopped by the cancel'
      : r.stderr
          .split('\n')
          .filter((l) => /fatal|error/.test(l))
          .slice(0, 3)
          .join('; ') ||
        r.stderr.trim() ||
        'git failed';
    throw new NylError(
      problem('NYL-REMOTE-UNREACHABLE', `could not ${what} remote ${this.remote}: ${detail}${extra}`, {
        subject: this.remote,
        exit: Exit.failed,
        fix: `check that \`git ls-remote ${this.remote}\` works from ${this.repo.root} (credentials, network), or pass --remote NAME or --local; raise --network-timeout if the remote is only slow`,
      }),
    );
  }

  /** Local refs (from --local runs) under the last listed prefix, read in the same process. */
  localTips = new Map<string, string>();

  private prefetched?: { prefix: string; listing: Promise<Map<string, string>> };

  prefetch(prefix: string): void {
    if (this.prefetched) return;
    const listing = this.fetchListing(prefix);
    listing.catch(() => {}); // the error is the one of the list that takes this answer
    this.prefetched = { prefix, listing };
  }

  async list(prefix: string): Promise<Map<string, string>> {
    const early = this.prefetched;
    this.prefetched = undefined;
    if (early?.prefix === prefix) return early.listing;
    // Another prefix after all: let that fetch end first (both would update FETCH state at once).
    if (early) await early.listing.catch(() => {});
    return this.fetchListing(prefix);
  }

  private async fetchListing(prefix: string): Promise<Map<string, string>> {
    const track = trackingRef(this.remote, prefix);
    const early = await this.earlyFetch(prefix);
    // Decided before any fetch of this process ran (the early one's, if it is taken).
    const args = early?.listing ?? listingFetch(this.repo.commonDir, this.remote, prefix);
    const fresh = args.includes('--depth=1');
    let r = await this.fetch(args, early?.result);
    // Another nyl in the same clone (`nyl runs` while a reconcile runs) updated the tracking refs
    // between this fetch's read and its write: what it fetched is there; fetch again to read it.
    // A lock the disk refused is no such race: fetching again would meet the same disk.
    const raced = () => /cannot lock ref/.test(r.stderr) && !this.storageTrouble(r);
    for (let i = 0; i < 3 && r.code !== 0 && raced(); i++) r = await this.fetch(args);
    // git ends a depth fetch that matched no ref with exit 1 and not a word: no state yet.
    if (r.code !== 0 && !(fresh && r.code === 1 && !r.ended && !/^(fatal|error):/m.test(r.stderr))) {
      // This clone could not store what it fetched: the remote answered.
      const full = this.storageTrouble(r);
      if (full) throw storageFailure(this.repo.commonDir, full, `what it fetched from remote ${this.remote}`);
      const lock = r.ended ? undefined : lockLeftBehind(r.stderr, this.repo.commonDir, this.repo.root);
      if (lock) throw gitLocked(lock, this.repo.root, `could not fetch from remote ${this.remote}`);
      this.unreachable('fetch from', r);
    }
    const both = await this.repo.listRefs(track, prefix);
    const out = new Map<string, string>();
    this.localTips = new Map();
    for (const [ref, oid] of both) {
      if (ref.startsWith(`${track}/`)) out.set(`${prefix}${ref.slice(track.length)}`, oid);
      else this.localTips.set(ref, oid);
    }
    return out;
  }

  /** The storage failure of this clone that ended a fetch, if that is what ended it. */
  private storageTrouble(r: GitResult): string | undefined {
    return r.ended ? undefined : storageCodeInFetch(r.stderr, this.repo.commonDir, r.signal);
  }

  /** The state fetch of `prefix` the CLI started before nyl was loaded, if it is this one (state-fetch.ts). */
  private earlyFetch(prefix: string): Promise<EarlyFetch | undefined> {
    // The configured bound (not what a cancel has left of it): the early fetch was started with it.
    const spec = {
      remote: this.remote,
      prefix,
      timeoutMs: this.net.timeoutMs,
      graceMs: this.net.cancellation?.graceMs ?? DEFAULT_GRACE_MS,
    };
    return takeEarlyStateFetch(this.repo.commonDir, spec, this.net.cancellation);
  }

  /**
   * One fetch (state-fetch.ts's FETCH), or what the one started `early` ended with. Two nyl
   * commands fetching shallow into one clone at once can meet on git's `shallow.lock`: the loser
   * fetches again once (not when the lock could not be made for want of room: that is no race).
   */
  private async fetch(args: string[], early?: GitResult) {
    const run = () => this.network([...FETCH, ...args], { endGently: true });
    // An early fetch no one took must not run beside this one (git's locks); it was a round trip all the same.
    if (early || (await stopEarlyStateFetch())) this.roundTrips++;
    let r = early ?? (await run());
    if (r.code !== 0 && !r.ended && /shallow\.lock/.test(r.stderr) && !this.storageTrouble(r)) {
      await new Backoff().wait({ cancellation: this.net.cancellation });
      r = await run();
    }
    if (r.code === 0) this.repo.objectsAdded();
    return r;
  }

  async fetchCommits(shas: string[], opts: { depth?: number; since?: number } = {}): Promise<boolean> {
    const r = await this.fetch([
      ...(opts.depth ? [`--depth=${opts.depth}`] : []),
      ...(opts.since ? [`--shallow-since=${Math.floor(opts.since / 1000)}`] : []),
      this.remote,
      ...shas,
    ]);
    return r.code === 0;
  }

  async fetchHistory(refs: string[], depth: number): Promise<boolean> {
    if (!refs.length) return true;
    const n = Math.max(1, Math.floor(depth));
    const r = await this.fetch([
      `--depth=${n}`,
      this.remote,
      ...refs.map((ref) => `+${ref}:${trackingRef(this.remote, ref)}`),
    ]);
    return r.code === 0;
  }

  private push(updates: RefUpdate[]) {
    const args = ['push', '--atomic', '--porcelain', '--no-verify', this.remote];
    for (const u of updates) args.push(u.new === undefined ? `:${u.ref}` : `${u.new}:${u.ref}`);
    for (const u of updates) args.push(`--force-with-lease=${u.ref}:${u.old ?? ''}`);
    return this.network(args, { guarded: true });
  }

  async update(updates: RefUpdate[], intent?: WriteIntent): Promise<boolean> {
    if (!updates.length) return true;
    const backoff = new Backoff();
    let last: PushVerdict | undefined;
    for (let attempt = 1; attempt <= MAX_PUSHES; attempt++) {
      if (attempt > 1) {
        this.retries++;
        await backoff.wait({ cancellation: this.net.cancellation });
      }
      const r = await this.push(updates);
      last = classifyPush(r);
      if (last.kind === 'accepted') return this.landed(updates);
      // git itself resends a request whose answer it lost: the resend then meets our own write.
      if (last.kind === 'lost-race') return (await this.settle(updates)) === 'landed' && this.landed(updates);
      if (last.kind === 'declined') this.declined(updates, last, r.stderr, intent);
      if (last.kind === 'not-sent') continue;
      // Unknown: the server may have applied it. Read the remote's tips and compare.
      const settled = await this.settle(updates);
      if (settled === 'landed') return this.landed(updates);
      if (settled === 'moved') return false;
      if (settled === 'unreachable') this.inDoubt(updates, intent, last.detail);
      // Not landed: the write did not happen; send it again.
    }
    this.unreachable(
      'push to',
      { stderr: last?.kind === 'unknown' || last?.kind === 'not-sent' ? last.detail : '' },
      `\nthe write did not land${intent ? `: ${intent.ifNot}` : ''}`,
    );
  }

  /** Keeps the local copies in step, so plain `git log` on them shows what was just written. */
  private async landed(updates: RefUpdate[]): Promise<true> {
    try {
      await this.repo.updateRefs(
        updates.map((u) => ({ ref: trackingRef(this.remote, u.ref), old: undefined, new: u.new, force: true })),
      );
    } catch (e) {
      // The remote holds the write: copies this clone's disk refused catch up at the next fetch.
      if (!isStorageFailure(e)) throw e;
    }
    return true;
  }

  /**
   * After a push that ended without an answer: the remote's tips of the pushed refs, read until
   * one read succeeds (backing off) within one network bound. Landed: every ref at its new value;
   * not landed: every ref still at its expected old value; moved: another writer changed one.
   */
  private async settle(updates: RefUpdate[]): Promise<'landed' | 'not-landed' | 'moved' | 'unreachable'> {
    const until = Date.now() + this.timeout();
    const backoff = new Backoff();
    for (;;) {
      this.retries++;
      const r = await this.network(['ls-remote', '--refs', this.remote, ...updates.map((u) => u.ref)]);
      if (r.code === 0) {
        const tips = new Map<string, string>();
        for (const line of r.stdout.toString('utf8').split('\n')) {
          const [oid, ref] = line.split('\t');
          if (oid && ref) tips.set(ref, oid);
        }
        const at = (u: RefUpdate) => tips.get(u.ref);
        if (updates.every((u) => at(u) === u.new)) return 'landed';
        if (updates.every((u) => at(u) === u.old)) return 'not-landed';
        return 'moved';
      }
      if (Date.now() >= until || this.net.cancellation?.remainingMs() === 0) return 'unreachable';
      await backoff.wait({ until, cancellation: this.net.cancellation });
    }
  }

  private declined(
    updates: RefUpdate[],
    v: Extract<PushVerdict, { kind: 'declined' }>,
    stderr: string,
    intent?: WriteIntent,
  ): never {
    const said = remoteMessages(stderr);
    const refs = v.refs.length ? v.refs : updates.map((u) => u.ref);
    const server = said.length ? `\nthe server said:\n${said.map((l) => `  ${l}`).join('\n')}` : '';
    if (remoteStorageTrouble(v.reason, said))
      throw remoteStorageFailure(
        this.remote,
        `remote ${this.remote} could not store the push of ${refs.join(', ')}: ${v.reason}${server}\nthis write was not applied${intent ? ` (${intent.what})` : ''}`,
      );
    throw new NylError(
      problem(
        'NYL-REMOTE-REJECTED',
        `remote ${this.remote} declined the push of ${refs.join(', ')}: ${v.reason}${said.length ? `\nthe server said:\n${said.map((l) => `  ${l}`).join('\n')}` : ''}\nthis write was not applied${intent ? ` (${intent.what})` : ''}`,
        {
          subject: refs[0],
          exit: Exit.failed,
          fix: `let these credentials push refs under ${refs[0]?.split('/').slice(0, 2).join('/') ?? 'refs/nyl'}/ (GitHub Actions: \`permissions: contents: write\`), and keep them out of branch protection, rulesets and hooks that decline pushes; then run the command again`,
        },
      ),
    );
  }

  private inDoubt(updates: RefUpdate[], intent: WriteIntent | undefined, detail: string): never {
    const what = intent?.what ?? `the push of ${updates.map((u) => u.ref).join(', ')}`;
    throw new NylError(
      problem(
        'NYL-WRITE-IN-DOUBT',
        `${what} got no answer from remote ${this.remote} (${detail}), and the remote could not be read again to tell whether it landed\nif it landed: ${intent?.ifLanded ?? 'the state refs hold it'}\nif not: ${intent?.ifNot ?? 'nothing was written'}`,
        {
          subject: this.remote,
          exit: Exit.uncertain,
          fix: `once the remote answers again, \`git ls-remote ${this.remote} '${envPrefixOf(updates)}/*'\` shows what landed; the next \`nyl reconcile -e ${intent?.environment ?? '<env>'}\` goes on from it as said above`,
        },
      ),
    );
  }
}

/** `refs/nyl/dev` of a write's refs (the lease is always among them). */
function envPrefixOf(updates: RefUpdate[]): string {
  const lease = updates.find((u) => u.ref.endsWith('/lease'))?.ref ?? updates[0]?.ref ?? 'refs/nyl/<env>/x';
  return lease.replace(/\/(lease|desired|observed)$/, '').replace(/\/(runs|evidence|unreadable)\/[^/]+$/, '');
}

/**
 * Receipts written with --local that the remote does not hold: local desired/observed tips the
 * remote's do not contain. An online write would leave them behind. (Local run and evidence refs
 * are not compared: a copy fetched earlier cannot be told from local work, and their results
 * only count once imported into observed.)
 */
export async function unpublishedLocalWork(
  repo: GitRepo,
  remoteTips: Map<string, string>,
  localTips: Map<string, string>,
): Promise<string[]> {
  const out: string[] = [];
  for (const [ref, oid] of localTips) {
    if (!/\/(desired|observed)$/.test(ref)) continue;
    const remote = remoteTips.get(ref);
    if (remote === oid) continue;
    if (!remote || !(await repo.isAncestor(oid, remote))) out.push(ref);
  }
  return out;
}
