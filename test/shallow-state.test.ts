/**
 * State refs are read at depth 1: a fresh clone fetches the tips, never the history, and every
 * write built on those shallow tips still lands (or loses its race) over file:// and smart HTTP.
 * Objects are written as one pack per write, and a repository that piles up packs gets a
 * background `git gc --auto`.
 */
import { execFileSync } from 'node:child_process';
import { cpSync, existsSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { GitRepo } from '../src/core/git/repo.js';
import { shallowCommits } from '../src/core/git/shallow.js';
import { LocalBackend } from '../src/core/state/backend.js';
import { RemoteBackend } from '../src/core/state/remote-backend.js';
import { type GitHttpServer, makeBareRepo, startGitHttpServer } from './helpers/http-git.js';
import {
  command,
  commitFiles,
  copyDir,
  ENV_DEV,
  GIT_ENV,
  git,
  makeRepo,
  nylJson,
  sleep,
  tempDir,
} from './helpers/repo.js';

let server: GitHttpServer;
beforeAll(async () => {
  server = await startGitHttpServer(tempDir('nyl-shallow-root-'));
});
afterAll(async () => {
  await server?.close();
});

interface Remote {
  url: string;
  bare: string;
}

let remotes = 0;
const transports = {
  'smart HTTP': (): Remote => {
    const rel = makeBareRepo(server.root, `s${++remotes}`);
    return { url: `${server.url}/${rel}`, bare: join(server.root, rel) };
  },
  'file://': (): Remote => {
    const bare = join(tempDir('nyl-shallow-file-'), 'r.git');
    execFileSync('git', ['init', '--bare', '-q', bare], { env: { ...process.env, GIT_CONFIG_NOSYSTEM: '1' } });
    return { url: `file://${bare}`, bare };
  },
};

const TWO_UNITS = (v: string) => ENV_DEV + command('a', `echo ${v}`) + command('b', 'true', { needs: ['a'] });
const STATE = ['lease', 'desired', 'observed'].map((r) => `refs/nyl/dev/${r}`);
const HISTORY = 'refs/nyl/dev/history';
const tracking = (ref: string) => ref.replace(/^refs\//, 'refs/nyl-remotes/origin/');

interface Report {
  exit: number;
  rows: { unit: string; result: string }[];
  problems: { code: string }[];
}

/** Per transport, a remote and its work repository after the first reconcile: made once, copied by seeded(). */
const seededOnce = new Map<string, { bare: string; dir: string }>();

/**
 * A work repository whose first reconcile put state on the remote; main pushed. The remote and the
 * work repository are copies of the ones made by the first call for that transport.
 */
async function seeded(remote: Remote): Promise<string> {
  const transport = remote.url.startsWith('file://') ? 'file://' : 'smart HTTP';
  let template = seededOnce.get(transport);
  if (!template) {
    const origin = transports[transport]();
    const dir = makeRepo({ 'nyl.yaml': TWO_UNITS('v1') });
    git(dir, 'remote', 'add', 'origin', origin.url);
    git(dir, 'push', '-q', 'origin', 'HEAD:refs/heads/main');
    git(origin.bare, 'symbolic-ref', 'HEAD', 'refs/heads/main');
    const first = await nylJson<Report>(dir, ['reconcile', '-e', 'dev']);
    expect(first.code, first.stderr).toBe(0);
    template = { bare: origin.bare, dir };
    seededOnce.set(transport, template);
  }
  rmSync(remote.bare, { recursive: true, force: true });
  cpSync(template.bare, remote.bare, { recursive: true });
  const dir = copyDir(template.dir);
  git(dir, 'remote', 'set-url', 'origin', remote.url);
  return dir;
}

/**
 * Stacks `depth` commits on each state ref of the remote (one fast-import): every new commit keeps
 * the tip's tree, so the state is the same, only with a long history behind it.
 */
function addHistory(bare: string, depth: number): void {
  const parts: string[] = [];
  for (const ref of STATE) {
    parts.push(`reset ${ref}\nfrom ${git(bare, 'rev-parse', ref)}\n\n`);
    for (let i = 1; i <= depth; i++) {
      const msg = `nyl: transition ${i} of an old history\n`;
      parts.push(
        `commit ${ref}\ncommitter h <h@l> ${1_700_000_000 + i} +0000\ndata ${Buffer.byteLength(msg)}\n${msg}\n`,
      );
    }
  }
  execFileSync('git', ['fast-import', '--quiet'], {
    cwd: bare,
    input: parts.join(''),
    env: { ...process.env, ...GIT_ENV },
  });
}

/**
 * Stacks `runs` ended runs on the remote's history ref (one fast-import): each a copy of the tip's
 * run record under a run id of its own (`old-0001`, …, newest on top), with a log of its own.
 */
function addRunHistory(bare: string, runs: number): void {
  const ref = 'refs/nyl/dev/history';
  const record = JSON.parse(git(bare, 'show', `${ref}:run.json`)) as { run: string };
  const parts = [`reset ${ref}\nfrom ${git(bare, 'rev-parse', ref)}\n\n`];
  for (let i = 1; i <= runs; i++) {
    const id = `old-${String(i).padStart(4, '0')}`;
    const run = `${JSON.stringify({ ...record, run: id }, null, 2)}\n`;
    const log = `output of ${id}\n`.repeat(20);
    const msg = `nyl: run ${id}\n`;
    parts.push(
      `commit ${ref}\ncommitter h <h@l> ${1_700_000_000 + i} +0000\ndata ${Buffer.byteLength(msg)}\n${msg}` +
        `M 100644 inline run.json\ndata ${Buffer.byteLength(run)}\n${run}\n` +
        `M 100644 inline units/a/log.txt\ndata ${Buffer.byteLength(log)}\n${log}\n\n`,
    );
  }
  execFileSync('git', ['fast-import', '--quiet'], {
    cwd: bare,
    input: parts.join(''),
    env: { ...process.env, ...GIT_ENV },
  });
}

/** Bytes of the packs a command added to a repository (what it fetched: fetches keep packs). */
async function packBytesAdded(dir: string, run: () => Promise<void>): Promise<number> {
  const packDir = join(dir, '.git', 'objects', 'pack');
  const list = () => (existsSync(packDir) ? readdirSync(packDir).filter((f) => f.endsWith('.pack')) : []);
  const before = new Set(list());
  await run();
  return list()
    .filter((f) => !before.has(f))
    .reduce((n, f) => n + statSync(join(packDir, f)).size, 0);
}

/** Loose object files under .git/objects (packs not counted). */
function looseObjects(gitDir: string): number {
  const objects = join(gitDir, 'objects');
  return readdirSync(objects)
    .filter((d) => /^[0-9a-f]{2}$/.test(d))
    .reduce((n, d) => n + readdirSync(join(objects, d)).length, 0);
}

function packs(gitDir: string): number {
  const dir = join(gitDir, 'objects', 'pack');
  return existsSync(dir) ? readdirSync(dir).filter((f) => f.endsWith('.pack')).length : 0;
}

const count = (dir: string, ref: string) => Number(git(dir, 'rev-list', '--count', ref));

describe.each(Object.entries(transports))('shallow state over %s', (_name, makeRemote) => {
  it('a fresh depth-1 clone reads the tips only, and writes on them', async () => {
    const remote = makeRemote();
    await seeded(remote);
    addHistory(remote.bare, 40);
    const before = Object.fromEntries(STATE.map((r) => [r, count(remote.bare, r)]));
    expect(before['refs/nyl/dev/observed']).toBeGreaterThan(40);

    // As actions/checkout leaves it: the source branch at depth 1.
    const fresh = join(tempDir('nyl-shallow-clone-'), 'w');
    git(tempDir(), 'clone', '-q', '--depth', '1', remote.url, fresh);
    const status = await nylJson<Report>(fresh, ['status', '-e', 'dev']);
    expect(status.code, status.stderr).toBe(0);
    for (const r of STATE) expect(count(fresh, tracking(r)), r).toBe(1);

    commitFiles(fresh, { 'nyl.yaml': TWO_UNITS('v2') }, 'v2');
    const loose = looseObjects(join(fresh, '.git'));
    const packsBefore = packs(join(fresh, '.git'));
    const r = await nylJson<Report>(fresh, ['reconcile', '-e', 'dev']);
    expect(r.code, r.stderr).toBe(0);
    expect(Object.fromEntries(r.json.rows.map((x) => [x.unit, x.result]))).toEqual({ a: 'executed', b: 'current' });
    // Every write went into a pack of its own: no loose object was added.
    expect(looseObjects(join(fresh, '.git'))).toBe(loose);
    expect(packs(join(fresh, '.git'))).toBeGreaterThan(packsBefore);

    // The remote's history goes on from the old tips, whole and connected.
    for (const ref of ['refs/nyl/dev/desired', 'refs/nyl/dev/observed'])
      expect(count(remote.bare, ref), ref).toBe((before[ref] as number) + 1);
    expect(count(remote.bare, 'refs/nyl/dev/lease')).toBeGreaterThan(before['refs/nyl/dev/lease'] as number);
    git(remote.bare, 'fsck', '--connectivity-only', '--no-dangling');
    expect(git(remote.bare, 'show', 'refs/nyl/dev/desired:units/a.json')).toContain('echo v2');

    // The next fresh clone still fetches one commit per ref.
    const next = join(tempDir('nyl-shallow-clone-'), 'w');
    git(tempDir(), 'clone', '-q', '--depth', '1', remote.url, next);
    const again = await nylJson<Report>(next, ['status', '-e', 'dev']);
    expect(again.code, again.stderr).toBe(0);
    for (const ref of STATE) expect(count(next, tracking(ref)), ref).toBe(1);
  });

  it('two writers on the same shallow tips: exactly one wins, the other loses the race', async () => {
    const remote = makeRemote();
    await seeded(remote);
    addHistory(remote.bare, 10);
    const lease = 'refs/nyl/dev/lease';
    const clones = await Promise.all(
      [0, 1].map(async () => {
        const dir = join(tempDir('nyl-shallow-race-'), 'w');
        git(tempDir(), 'clone', '-q', '--depth', '1', remote.url, dir);
        const repo = await GitRepo.open(dir);
        const backend = new RemoteBackend(repo, 'origin');
        const tips = await backend.list('refs/nyl/dev');
        expect(count(dir, tracking(lease))).toBe(1);
        return { repo, backend, tip: tips.get(lease) as string };
      }),
    );
    try {
      expect(clones[0]?.tip).toBe(clones[1]?.tip);
      const author = { name: 'racer', email: 'racer@localhost' };
      const commits = await Promise.all(
        clones.map(async (c, i) => {
          const batch = c.repo.batch();
          const tree = batch.tree(new Map([['lease.json', Buffer.from(`{"racer":${i}}\n`)]]));
          const oid = batch.commit({ tree, parents: [c.tip], author, message: `nyl: racer ${i}` });
          await batch.flush();
          return oid;
        }),
      );
      const won = await Promise.all(
        clones.map((c, i) => c.backend.update([{ ref: lease, old: c.tip, new: commits[i] }])),
      );
      expect(won.filter(Boolean)).toHaveLength(1);
      const winner = commits[won.indexOf(true)];
      expect(git(remote.bare, 'rev-parse', lease)).toBe(winner);
      expect(git(remote.bare, 'rev-parse', `${lease}^`)).toBe(clones[0]?.tip);
      // The loser read again and tries on the new tip: it lands.
      const loser = clones[won.indexOf(false)];
      if (!loser || !winner) throw new Error('no loser');
      await loser.backend.list('refs/nyl/dev');
      const batch = loser.repo.batch();
      const tree = batch.tree(new Map([['lease.json', Buffer.from('{"racer":"again"}\n')]]));
      const retry = batch.commit({ tree, parents: [winner], author, message: 'nyl: racer again' });
      await batch.flush();
      expect(await loser.backend.update([{ ref: lease, old: winner, new: retry }])).toBe(true);
      expect(await loser.backend.update([{ ref: lease, old: winner, new: retry }])).toBe(true); // already there
      git(remote.bare, 'fsck', '--connectivity-only', '--no-dangling');
    } finally {
      for (const c of clones) c.repo.close();
    }
  });

  it('status reads the history tip alone; runs --limit N deepens history to N commits', async () => {
    const remote = makeRemote();
    await seeded(remote);
    addRunHistory(remote.bare, 30);
    const fresh = join(tempDir('nyl-shallow-runs-'), 'w');
    git(tempDir(), 'clone', '-q', '--depth', '1', remote.url, fresh);
    const status = await nylJson<Report>(fresh, ['status', '-e', 'dev']);
    expect(status.code, status.stderr).toBe(0);
    expect(count(fresh, tracking(HISTORY))).toBe(1);

    type Runs = { facts: { runs: { run: string }[] } };
    const three = await nylJson<Runs>(fresh, ['runs', '-e', 'dev', '--limit', '3']);
    expect(three.code, three.stderr).toBe(0);
    expect(three.json.facts.runs.map((r) => r.run)).toEqual(['old-0030', 'old-0029', 'old-0028']);
    expect(count(fresh, tracking(HISTORY))).toBe(3);

    // Deeper next time, as deep as asked; a reconcile after it reads the tips and keeps them.
    const ten = await nylJson<Runs>(fresh, ['runs', '-e', 'dev', '--limit', '10']);
    expect(ten.code, ten.stderr).toBe(0);
    expect(ten.json.facts.runs).toHaveLength(10);
    expect(ten.json.facts.runs[9]?.run).toBe('old-0021');
    expect(count(fresh, tracking(HISTORY))).toBe(10);
    const all = await nylJson<Runs>(fresh, ['runs', '-e', 'dev', '--limit', '100']);
    expect(all.json.facts.runs).toHaveLength(31);
    expect(count(fresh, tracking(HISTORY))).toBe(31);
  });

  it('a fresh clone fetches as much for status after 300 transitions as after 10', async () => {
    const remote = makeRemote();
    await seeded(remote);
    const fetched = async () => {
      const dir = join(tempDir('nyl-shallow-bytes-'), 'w');
      git(tempDir(), 'clone', '-q', '--depth', '1', remote.url, dir);
      const loose = looseObjects(join(dir, '.git'));
      const bytes = await packBytesAdded(dir, async () => {
        const r = await nylJson<Report>(dir, ['status', '-e', 'dev']);
        expect(r.code, r.stderr).toBe(0);
      });
      expect(looseObjects(join(dir, '.git'))).toBe(loose);
      return bytes;
    };
    addHistory(remote.bare, 10);
    addRunHistory(remote.bare, 10);
    const after10 = await fetched();
    addHistory(remote.bare, 290);
    addRunHistory(remote.bare, 290);
    const after300 = await fetched();
    expect(after10).toBeGreaterThan(0);
    // Tips only: the same objects, give or take a commit message's digits.
    expect(after300).toBeLessThanOrEqual(after10 * 1.1);
  });

  it('fetchHistory deepens a state ref as far as asked', async () => {
    const remote = makeRemote();
    await seeded(remote);
    addHistory(remote.bare, 10);
    const dir = join(tempDir('nyl-shallow-history-'), 'w');
    git(tempDir(), 'clone', '-q', '--depth', '1', remote.url, dir);
    const repo = await GitRepo.open(dir);
    try {
      const backend = new RemoteBackend(repo, 'origin');
      const tips = await backend.list('refs/nyl/dev');
      const observed = tips.get('refs/nyl/dev/observed') as string;
      const tip = await repo.readCommit(observed);
      expect(tip?.parents).toHaveLength(1);
      // The parent is beyond the shallow boundary: not here.
      expect(await repo.readCommit(tip?.parents[0] as string)).toBeUndefined();
      expect(await backend.fetchHistory(['refs/nyl/dev/observed'], 5)).toBe(true);
      expect(count(dir, tracking('refs/nyl/dev/observed'))).toBe(5);
      expect(await repo.readCommit(tip?.parents[0] as string)).toBeDefined();
      expect(await backend.fetchHistory(['refs/nyl/dev/nothing-here'], 5)).toBe(false);
      expect(await new LocalBackend(repo).fetchHistory(['refs/nyl/dev/observed'], 5)).toBe(true);
    } finally {
      repo.close();
    }
  });
});

describe('shallow state and the source history', () => {
  it('a full clone with shallow state is not a shallow source: an older source is told, history kept', async () => {
    const remote = transports['file://']();
    const dir = await seeded(remote);
    const v1 = git(dir, 'rev-parse', 'HEAD');
    commitFiles(dir, { 'nyl.yaml': TWO_UNITS('v2') }, 'v2');
    git(dir, 'push', '-q', 'origin', 'HEAD:refs/heads/main');
    expect((await nylJson<Report>(dir, ['reconcile', '-e', 'dev'])).code).toBe(0);

    const full = join(tempDir('nyl-shallow-full-'), 'w');
    git(tempDir(), 'clone', '-q', remote.url, full);
    git(full, 'checkout', '-q', v1);
    const commits = count(full, 'origin/main');
    const r = await nylJson<Report>(full, ['reconcile', '-e', 'dev']);
    expect(r.code, r.stderr).toBe(0);
    expect(r.json.problems.map((p) => p.code)).toContain('NYL-SOURCE-OLDER');
    // The state came at depth 1, the source history stayed whole.
    expect(shallowCommits(join(full, '.git')).length).toBeGreaterThan(0);
    expect(count(full, 'origin/main')).toBe(commits);
    const repo = await GitRepo.open(full);
    try {
      expect(await repo.isShallow()).toBe(false);
    } finally {
      repo.close();
    }
  });

  it('a depth-1 checkout of an older commit is a shallow source: deepened, and told older', async () => {
    const remote = transports['smart HTTP']();
    const dir = await seeded(remote);
    const v1 = git(dir, 'rev-parse', 'HEAD');
    commitFiles(dir, { 'nyl.yaml': TWO_UNITS('v2') }, 'v2');
    git(dir, 'push', '-q', 'origin', 'HEAD:refs/heads/main');
    expect((await nylJson<Report>(dir, ['reconcile', '-e', 'dev'])).code).toBe(0);

    // What actions/checkout does for a re-run of an old workflow.
    const co = join(tempDir('nyl-shallow-co-'), 'w');
    git(tempDir(), 'init', '-q', co);
    git(co, 'remote', 'add', 'origin', remote.url);
    git(co, 'fetch', '-q', '--depth=1', 'origin', v1);
    git(co, 'checkout', '-q', 'FETCH_HEAD');
    const repo = await GitRepo.open(co);
    try {
      expect(await repo.isShallow()).toBe(true);
    } finally {
      repo.close();
    }
    const r = await nylJson<Report>(co, ['reconcile', '-e', 'dev']);
    expect(r.code, r.stderr).toBe(0);
    expect(r.json.problems.map((p) => p.code)).toContain('NYL-SOURCE-OLDER');
    expect(r.json.rows.every((x) => x.result !== 'executed')).toBe(true);
  });
});

describe('objects written as packs', () => {
  it('a --local reconcile writes packs, no loose objects', async () => {
    const dir = makeRepo({ 'nyl.yaml': ENV_DEV + command('a', 'true') + command('b', 'true', { needs: ['a'] }) });
    const gitDir = join(dir, '.git');
    const loose = looseObjects(gitDir);
    const r = await nylJson<Report>(dir, ['reconcile', '-e', 'dev', '--local']);
    expect(r.code, r.stderr).toBe(0);
    expect(looseObjects(gitDir)).toBe(loose);
    expect(packs(gitDir)).toBeGreaterThan(0);
    git(dir, 'fsck', '--connectivity-only', '--no-dangling');
  });

  it('a transition stores each object once: none that the repository already had', async () => {
    const config = (v: string) => ENV_DEV + command('a', `true # ${v}`) + command('b', 'true') + command('c', 'true');
    const dir = makeRepo({ 'nyl.yaml': config('v1') });
    const gitDir = join(dir, '.git');
    for (const v of ['v1', 'v2', 'v3']) {
      if (v !== 'v1') commitFiles(dir, { 'nyl.yaml': config(v) }, v);
      const r = await nylJson<Report>(dir, ['reconcile', '-e', 'dev', '--local']);
      expect(r.code, r.stderr).toBe(0);
    }
    const packDir = join(gitDir, 'objects', 'pack');
    const ids = readdirSync(packDir)
      .filter((f) => f.endsWith('.idx'))
      .flatMap((f) =>
        execFileSync('git', ['show-index'], { input: readFileSync(join(packDir, f)), encoding: 'utf8' })
          .trim()
          .split('\n')
          .map((l) => l.split(' ')[1]),
      );
    const loose = readdirSync(join(gitDir, 'objects'))
      .filter((d) => /^[0-9a-f]{2}$/.test(d))
      .flatMap((d) => readdirSync(join(gitDir, 'objects', d)).map((f) => d + f));
    const all = [...ids, ...loose];
    expect(all.filter((id, i) => all.indexOf(id) !== i)).toEqual([]);
  });

  it('a repository with too many packs gets a background gc --auto that packs no ref', async () => {
    const dir = makeRepo({ 'nyl.yaml': `${ENV_DEV}${command('a', 'true')}` });
    const gitDir = join(dir, '.git');
    for (let i = 0; i < 52; i++) {
      const oid = execFileSync('git', ['hash-object', '-w', '--stdin'], { cwd: dir, input: `filler ${i}\n` });
      execFileSync('git', ['pack-objects', '-q', join(gitDir, 'objects', 'pack', 'pack')], { cwd: dir, input: oid });
    }
    expect(packs(gitDir)).toBeGreaterThan(50);
    const r = await nylJson<Report>(dir, ['reconcile', '-e', 'dev', '--local']);
    expect(r.code, r.stderr).toBe(0);
    // The gc runs on after nyl exits; wait for it to roll the packs up.
    for (let i = 0; i < 600 && packs(gitDir) > 50; i++) await sleep(100);
    expect(packs(gitDir)).toBeLessThanOrEqual(50);
    const packed = existsSync(join(gitDir, 'packed-refs')) ? readFileSync(join(gitDir, 'packed-refs'), 'utf8') : '';
    expect(packed).not.toContain('refs/nyl/');
    expect(git(dir, 'rev-parse', 'refs/nyl/dev/observed:units/a.json')).toMatch(/^[0-9a-f]{40}$/);
  });
});
