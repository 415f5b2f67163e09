import { runGit } from '../git/exec.js';
import type { GitRepo, RefUpdate } from '../git/repo.js';
import { Exit, NylError, problem } from '../util/errors.js';
import type { RefBackend } from './backend.js';

/** Where fetched state refs are kept locally: `refs/nyl-remotes/<remote>/<ref without refs/>`. */
export function trackingRef(remote: string, ref: string): string {
  return `refs/nyl-remotes/${remote.replace(/[^A-Za-z0-9_.-]/g, '_')}/${ref.replace(/^refs\//, '')}`;
}

export interface PushOutcome {
  ok: boolean;
  /** Per ref: the porcelain status line's summary, e.g. `[rejected] (stale info)`. */
  lines: string[];
}

/** Reads `git push --porcelain`: any `!` line is a rejection, either form means a lost race. */
export function parsePorcelain(stdout: string): { rejected: string[]; seen: number } {
  const rejected: string[] = [];
  let seen = 0;
  for (const line of stdout.split('\n')) {
    const m = /^([ +\-*!=])\t([^\t]*)\t(.*)$/.exec(line);
    if (!m) continue;
    seen++;
    if (m[1] === '!') rejected.push(`${m[2]} ${m[3]}`);
  }
  return { rejected, seen };
}

/**
 * The remote is the authority: one fetch of the environment's refs per command, and every
 * write one `git push --atomic` with an explicit expected value on every ref it touches.
 */
export class RemoteBackend implements RefBackend {
  readonly mode = 'remote' as const;
  /** Round trips to the remote made by this process (fetches and pushes). */
  roundTrips = 0;

  constructor(
    private readonly repo: GitRepo,
    readonly remote: string,
  ) {}

  private unreachable(what: string, stderr: string): never {
    const detail = stderr
      .split('\n')
      .filter((l) => /fatal|error/.test(l))
      .slice(0, 3)
      .join('; ');
    throw new NylError(
      problem(
        'NYL-REMOTE-UNREACHABLE',
        `could not ${what} remote ${this.remote}: ${detail || stderr.trim() || 'git failed'}`,
        {
          subject: this.remote,
          exit: Exit.failed,
          fix: `check that \`git ls-remote ${this.remote}\` works from ${this.repo.root} (credentials, network), or pass --remote NAME or --local`,
        },
      ),
    );
  }

  /** Local refs (from --local runs) under the last listed prefix, read in the same process. */
  localTips = new Map<string, string>();

  async list(prefix: string): Promise<Map<string, string>> {
    const track = trackingRef(this.remote, prefix);
    this.roundTrips++;
    const r = await runGit(
      [
        'fetch',
        '--quiet',
        '--no-tags',
        '--prune',
        '--no-write-fetch-head',
        '--no-auto-gc',
        this.remote,
        `+${prefix}/*:${track}/*`,
      ],
      { cwd: this.repo.root },
    );
    if (r.code !== 0) this.unreachable('fetch from', r.stderr);
    const both = await this.repo.listRefs(track, prefix);
    const out = new Map<string, string>();
    this.localTips = new Map();
    for (const [ref, oid] of both) {
      if (ref.startsWith(`${track}/`)) out.set(`${prefix}${ref.slice(track.length)}`, oid);
      else this.localTips.set(ref, oid);
    }
    return out;
  }

  async update(updates: RefUpdate[]): Promise<boolean> {
    if (!updates.length) return true;
    const args = ['push', '--atomic', '--porcelain', '--no-verify', this.remote];
    for (const u of updates) args.push(u.new === undefined ? `:${u.ref}` : `${u.new}:${u.ref}`);
    for (const u of updates) args.push(`--force-with-lease=${u.ref}:${u.old ?? ''}`);
    this.roundTrips++;
    const r = await runGit(args, { cwd: this.repo.root });
    const out = r.stdout.toString('utf8');
    const { rejected, seen } = parsePorcelain(out);
    if (r.code === 0 && !rejected.length) {
      // Keep the local copies in step, so plain `git log` on them shows what was just written.
      await this.repo.updateRefs(
        updates.map((u) => ({ ref: trackingRef(this.remote, u.ref), old: undefined, new: u.new, force: true })),
      );
      return true;
    }
    if (rejected.length) return false;
    if (!seen) this.unreachable('push to', r.stderr);
    return false;
  }
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
