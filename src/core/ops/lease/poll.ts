import { existsSync, type FSWatcher, watch } from 'node:fs';
import { isAbsolute, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { runGit } from '../../git/exec.js';
import type { EnvState } from '../../state/read.js';
import { DEFAULT_NETWORK_TIMEOUT_MS, RemoteBackend } from '../../state/remote-backend.js';
import { Exit, NylError, problem } from '../../util/errors.js';
import type { OpContext } from '../workspace/workspace.js';

/** Past this, listing every ref of the remote costs more than a second request would: ask for the lease alone. */
const FULL_LISTING_MAX = 128 * 1024;
/** A ref update is a lock file renamed into place; atomic pushes rename several: let them land. */
const SETTLE_MS = 20;

/**
 * One poll of a held lease: the tips of the lease ref and the run refs alone, not a fetch (the
 * caller fetches once they changed: every write moves the lease). Over HTTP it is one request, a
 * protocol v0 `GET info/refs` (protocol v2 would add a POST), unless the remote lists so many
 * refs that two small requests cost less. Where the refs are files on this machine (--local, a
 * file:// remote), their directories are watched too, so a change wakes the waiter at once;
 * the polls go on, in case the watch misses something.
 */
export class LeasePoller {
  /** Requests one poll costs. */
  cost = 1;
  private narrow = false;
  private readonly watchers: FSWatcher[] = [];
  private woken = false;
  private wake: (() => void) | undefined;
  private readonly base: string;

  private constructor(
    private readonly ctx: OpContext,
    prefix: string,
    environment: string,
  ) {
    this.base = `${prefix}/${environment}`;
  }

  static async open(ctx: OpContext, prefix: string, environment: string): Promise<LeasePoller> {
    const p = new LeasePoller(ctx, prefix, environment);
    const dir = await p.localGitDir().catch(() => undefined);
    if (dir) p.watchRefs(dir);
    return p;
  }

  private get remote(): string {
    return this.ctx.opts.remote ?? 'origin';
  }

  /** The git directory holding the refs, when it is on this machine. */
  private async localGitDir(): Promise<string | undefined> {
    const root = this.ctx.repo.root;
    let at = root;
    if (!this.ctx.opts.local) {
      const r = await runGit(['ls-remote', '--get-url', this.remote], { cwd: root, timeoutMs: 5_000 });
      const url = r.stdout.toString('utf8').trim();
      if (r.code !== 0 || !url) return undefined;
      if (url.startsWith('file://')) at = fileURLToPath(url);
      // A plain path; `host:path` (no slash before the colon) is ssh.
      else if (!/^[A-Za-z][A-Za-z0-9+.-]*:\/\//.test(url) && !/^[^/]*:/.test(url))
        at = isAbsolute(url) ? url : resolve(root, url);
      else return undefined;
    }
    const r = await runGit(['rev-parse', '--git-common-dir'], { cwd: at, timeoutMs: 5_000 });
    const dir = r.stdout.toString('utf8').trim();
    return r.code === 0 && dir ? resolve(at, dir) : undefined;
  }

  private watchRefs(gitDir: string): void {
    const env = join(gitDir, this.base);
    const on = (dir: string, wanted: (name: string) => boolean) => {
      if (!existsSync(dir)) return;
      try {
        const w = watch(dir, { persistent: false }, (_event, name) => {
          if (name === null || wanted(String(name))) this.changed();
        });
        w.on('error', () => w.close());
        this.watchers.push(w);
      } catch {
        // Nothing to watch there (or no watches left): the polls still find the change.
      }
    };
    on(env, (n) => n === 'lease' || n === 'runs');
    on(join(env, 'runs'), (n) => !n.endsWith('.lock'));
    on(gitDir, (n) => n === 'packed-refs');
    on(join(gitDir, 'reftable'), () => true);
  }

  private changed(): void {
    this.woken = true;
    if (this.wake) setTimeout(() => this.wake?.(), SETTLE_MS);
  }

  /**
   * Waits `ms`, or less: until a watched ref changes, or the operation is cancelled. True when a
   * watched ref changed (then the environment is worth reading without a poll first).
   */
  sleep(ms: number): Promise<boolean> {
    if (this.woken || ms <= 0 || this.ctx.cancellation.requested) {
      const woken = this.woken;
      this.woken = false;
      return Promise.resolve(woken);
    }
    return new Promise((done) => {
      const end = () => {
        clearTimeout(timer);
        off();
        if (this.wake === end) this.wake = undefined;
        const woken = this.woken;
        this.woken = false;
        done(woken);
      };
      const timer = setTimeout(end, ms);
      const off = this.ctx.cancellation.onCancel(end);
      this.wake = end;
    });
  }

  /** The tips of the lease and run refs now; undefined when they could not be listed (the caller reads instead). */
  async poll(): Promise<Map<string, string> | undefined> {
    const { ctx } = this;
    if (ctx.opts.local) return this.only(await ctx.repo.listRefs(this.base));
    const b = ctx.backend;
    if (b instanceof RemoteBackend) b.roundTrips++;
    const timeoutMs = this.timeoutMs();
    const lowSpeed = Math.max(1, Math.min(20, Math.floor(timeoutMs / 2000)));
    const args = ['-c', 'http.lowSpeedLimit=1000', '-c', `http.lowSpeedTime=${lowSpeed}`];
    if (this.narrow) args.push('ls-remote', '--refs', this.remote, `${this.base}/lease`, `${this.base}/runs/*`);
    else args.push('-c', 'protocol.version=0', 'ls-remote', '--refs', this.remote);
    const r = await runGit(args, { cwd: ctx.repo.root, timeoutMs, cancellation: ctx.cancellation });
    if (r.ended === 'timeout')
      throw new NylError(
        problem(
          'NYL-REMOTE-UNREACHABLE',
          `could not list the lease of remote ${this.remote}: no answer within ${Math.round(timeoutMs / 1000)}s`,
          {
            subject: this.remote,
            exit: Exit.failed,
            fix: `check that \`git ls-remote ${this.remote}\` works from ${ctx.repo.root} (credentials, network), or pass --remote NAME or --local; raise --network-timeout if the remote is only slow`,
          },
        ),
      );
    if (r.code !== 0) return undefined;
    if (!this.narrow && r.stdout.length > FULL_LISTING_MAX) {
      this.narrow = true;
      this.cost = 2;
    }
    const tips = new Map<string, string>();
    for (const line of r.stdout.toString('utf8').split('\n')) {
      const tab = line.indexOf('\t');
      if (tab > 0) tips.set(line.slice(tab + 1), line.slice(0, tab));
    }
    return this.only(tips);
  }

  /** The bound of one call: --network-timeout, or what is left of the cancel grace window. */
  private timeoutMs(): number {
    const net = this.ctx.opts.networkTimeoutMs ?? DEFAULT_NETWORK_TIMEOUT_MS;
    const left = this.ctx.cancellation.remainingMs();
    return left === undefined ? net : Math.max(500, Math.min(net, left));
  }

  private only(refs: Map<string, string>): Map<string, string> {
    const lease = `${this.base}/lease`;
    const runs = `${this.base}/runs/`;
    const out = new Map<string, string>();
    for (const [ref, oid] of refs)
      if (ref === lease || (ref.startsWith(runs) && !ref.slice(runs.length).includes('/'))) out.set(ref, oid);
    return out;
  }

  close(): void {
    for (const w of this.watchers) w.close();
    this.watchers.length = 0;
    this.wake?.();
  }
}

/** Whether polled tips are those the state was read at: the lease and every run ref unchanged. */
export function sameLeaseTips(state: EnvState, tips: Map<string, string>): boolean {
  const known = new Map<string, string>();
  if (state.tips.lease) known.set(state.refs.lease, state.tips.lease);
  for (const [id, tip] of state.tips.runs) known.set(state.refs.run(id), tip);
  if (known.size !== tips.size) return false;
  for (const [ref, oid] of known) if (tips.get(ref) !== oid) return false;
  return true;
}
