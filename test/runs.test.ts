/**
 * Runs you can inspect (seed 003's ideas, in git): every run's lifecycle is persisted, and
 * `nyl runs` / `runs show` / `runs logs` read it back from the remote alone — a run that
 * succeeded, failed, was cancelled, was SIGKILLed mid-unit and taken over, or was superseded.
 */
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  command,
  commitFiles,
  ENV_DEV,
  git,
  makeRepo,
  nyl,
  nylJson,
  startNyl,
  tempDir,
  waitForFile,
} from './helpers/repo.js';

interface RunLine {
  run: string;
  operation: string;
  state: string;
  place: string;
  counts: Record<string, number>;
  detail: string;
  source: string;
  who: string;
}

function setup() {
  const root = tempDir('nyl-runs-');
  const ctl = tempDir('nyl-runs-ctl-');
  git(root, 'init', '-q', '--bare', '-b', 'main', 'remote.git');
  const bare = join(root, 'remote.git');
  const config = (b: string) =>
    ENV_DEV +
    command('a', 'echo a-says-hello') +
    command('b', b, { needs: ['a'], timeout: '1m', spec: { idempotent: true } });
  const work = makeRepo({ 'nyl.yaml': config('echo b-v1') });
  git(work, 'remote', 'add', 'origin', `file://${bare}`);
  git(work, 'push', '-q', 'origin', 'main');
  const commit = (b: string) => {
    const sha = commitFiles(work, { 'nyl.yaml': config(b) });
    git(work, 'push', '-q', 'origin', 'main');
    return sha;
  };
  return { bare, work, ctl, commit };
}

const runsOf = async (work: string, extra: string[] = []) => {
  const r = await nylJson<{ facts: { runs: RunLine[] } }>(work, ['runs', '-e', 'dev', ...extra]);
  expect(r.code, r.stdout + r.stderr).toBe(0);
  return r.json.facts.runs;
};

describe('nyl runs', () => {
  it('lists succeeded, failed, cancelled, lost (SIGKILLed mid-unit, taken over) and superseded runs; logs keep the killed unit’s last output', async () => {
    const s = setup();
    const beat = { NYL_HEARTBEAT_INTERVAL: '300ms' };
    // 1. succeeded
    const first = await nyl(s.work, ['reconcile', '-e', 'dev']);
    expect(first.code, first.stderr).toBe(0);
    const v1 = git(s.work, 'rev-parse', 'HEAD');
    // 2. failed
    s.commit('echo b-v2-failing; exit 3');
    expect((await nyl(s.work, ['reconcile', '-e', 'dev'])).code).toBe(1);
    // 3. cancelled (SIGINT while b runs)
    s.commit(`echo b-v3; touch ${s.ctl}/v3; sleep 30`);
    const cancelled = startNyl(s.work, ['reconcile', '-e', 'dev', '--cancel-grace', '1s']);
    await waitForFile(join(s.ctl, 'v3'));
    cancelled.child.kill('SIGINT');
    expect((await cancelled.done).code).toBe(4);
    // 4. SIGKILLed mid-unit: b has printed a line when the last heartbeat passed.
    s.commit(`echo b-v4-halfway-there; touch ${s.ctl}/v4; sleep 60`);
    const killed = startNyl(s.work, ['reconcile', '-e', 'dev'], beat);
    await waitForFile(join(s.ctl, 'v4'));
    // While it runs, it is listed live, with its wave and heartbeat.
    let live: RunLine | undefined;
    for (let i = 0; i < 100 && !live?.detail.includes('heartbeat'); i++) {
      // The newest run ref is the live one (the cancelled run's goes when the live run lands).
      const tail = git(s.bare, 'for-each-ref', '--format=%(refname)', 'refs/nyl/dev/runs/').split('\n').pop();
      if (tail && git(s.bare, 'ls-tree', '-r', '--name-only', tail).includes('units/b/tail.txt'))
        live = (await runsOf(s.work)).find((r) => r.place === 'live');
      else await new Promise((r) => setTimeout(r, 100));
    }
    expect(live).toMatchObject({ state: 'executing', operation: 'reconcile' });
    expect(live?.detail).toMatch(/^live, wave 2: b; heartbeat \S+ ago$/);
    // status says who holds the lease while it runs.
    const during = await nyl(s.work, ['status', '-e', 'dev']);
    expect(during.stdout).toMatch(new RegExp(`^  lease: +held by run ${live?.run} \\(.+\\), deadline \\S+$`, 'm'));
    killed.child.kill('SIGKILL');
    await killed.done;
    const broke = await nyl(s.work, ['lease', 'break', '-e', 'dev', '--reason', 'runner died']);
    expect(broke.code, broke.stderr).toBe(0);
    // Broken before its deadline: the listing says so (not that the deadline passed).
    const dead = (await runsOf(s.work)).find((r) => r.place === 'dead');
    expect(dead?.detail).toMatch(/^dead, not imported yet \(stopped at wave 2: b; its lease was broken\)/);
    // 5. succeeded, importing the killed run first.
    s.commit('echo b-v5');
    const fifth = await nyl(s.work, ['reconcile', '-e', 'dev']);
    expect(fifth.code, fifth.stdout + fifth.stderr).toBe(0);
    // 6. superseded: an older source is not applied.
    git(s.work, 'checkout', '-q', v1);
    const older = await nyl(s.work, ['reconcile', '-e', 'dev']);
    expect(older.code, older.stderr).toBe(0);
    expect(older.stdout).toMatch(/superseded/);
    git(s.work, 'checkout', '-q', 'main');

    const runs = await runsOf(s.work);
    expect(runs.map((r) => r.state)).toEqual(['superseded', 'succeeded', 'lost', 'cancelled', 'failed', 'succeeded']);
    expect(runs.map((r) => r.place)).toEqual(['ended', 'history', 'history', 'history', 'history', 'history']);
    const [sup, fifthRun, lost, cancel, fail, succ] = runs as RunLine[];
    expect(succ?.counts).toEqual({ executed: 2 });
    expect(fail?.counts).toEqual({ current: 1, failed: 1 });
    expect(cancel?.counts).toMatchObject({ uncertain: 1 });
    expect(lost?.detail).toBe(`imported by ${fifthRun?.run}`);
    // The killed run died before it landed its import of the cancelled run: the fifth imports both.
    expect(fifthRun?.detail).toBe(`imported ${cancel?.run}, ${lost?.run}`);
    expect(cancel?.detail).toBe(`imported by ${fifthRun?.run}`);
    expect(sup?.detail).toBe('NYL-SOURCE-OLDER');
    expect(sup?.source).toBe(v1);

    // The text table: one line per run, newest first.
    const text = await nyl(s.work, ['runs', '-e', 'dev', '--limit', '3']);
    expect(text.code).toBe(0);
    const lines = text.stdout.trimEnd().split('\n');
    expect(lines[0]).toMatch(/^RUN +OPERATION +STATE +STARTED +DURATION +WHO +SOURCE +RESULTS +DETAIL$/);
    expect(lines.slice(1).map((l) => l.split(/ +/)[2])).toEqual(['superseded', 'succeeded', 'lost']);

    // The killed run's logs: a's full log, and b's output as its last heartbeat saw it.
    const logs = await nyl(s.work, ['runs', 'logs', '-e', 'dev', lost?.run as string]);
    expect(logs.code, logs.stderr).toBe(0);
    expect(logs.stdout).toBe('==> b (uncertain, output at the last heartbeat) <==\nb-v4-halfway-there\n');
    const failLogs = await nyl(s.work, ['runs', 'logs', '-e', 'dev', fail?.run as string, '--unit', 'b']);
    expect(failLogs.stdout).toBe('==> b (failed) <==\nb-v2-failing\n');
    const firstLogs = await nyl(s.work, ['runs', 'logs', '-e', 'dev', succ?.run as string]);
    expect(firstLogs.stdout).toBe('==> a (executed) <==\na-says-hello\n\n==> b (executed) <==\nb-v1\n');

    // One run's full record: its states with their times, its units, who imported it.
    const show = await nylJson<{ facts: Record<string, unknown> }>(s.work, [
      'runs',
      'show',
      '-e',
      'dev',
      fail?.run as string,
    ]);
    expect(show.json.facts.states).toEqual([
      expect.objectContaining({ state: 'claimed' }),
      expect.objectContaining({ state: 'executing', wave: 1, units: ['b'] }),
      expect.objectContaining({ state: 'failed' }),
    ]);
    expect(show.json.facts.units).toEqual([
      expect.objectContaining({ unit: 'a', result: 'current' }),
      expect.objectContaining({ unit: 'b', result: 'failed', exitCode: 3, reason: 'exited with 3: b-v2-failing' }),
    ]);
    const showLost = await nyl(s.work, ['runs', 'show', '-e', 'dev', String(lost?.run).slice(0, 20)]);
    expect(showLost.code).toBe(0);
    expect(showLost.stdout).toContain(`  importedBy: ${fifthRun?.run}\n`);
    expect(showLost.stdout).toMatch(/\n {2}lost +\S+ *\n/);

    // History is plain git: one commit per ended run on refs/nyl/dev/history, along first parents;
    // each entry after the first keeps its run ref's last commit as second parent (the run's moves).
    const entries = git(s.bare, 'log', '--first-parent', '--format=%H %P', 'refs/nyl/dev/history').split('\n');
    expect(entries).toHaveLength(5);
    expect(entries.map((e) => e.split(' ').length - 1)).toEqual([2, 2, 2, 2, 0]);
    expect(git(s.bare, 'log', '-1', '--format=%s', 'refs/nyl/dev/history^2')).toMatch(/^nyl: run \S+ /);
    // Deleting the run refs left nothing nyl wrote for them unreachable, but the first run's moves
    // (the first entry has no parent to hang its run on) and, at most, the one heartbeat the killed
    // run was pushing when SIGKILL came (its run and lease commits sent, its refs never moved).
    const unreachable = git(s.bare, 'fsck', '--unreachable', '--no-reflogs', '--no-progress')
      .split('\n')
      .filter((l) => l.startsWith('unreachable commit'))
      .map((l) => git(s.bare, 'log', '-1', '--format=%s', l.split(' ')[2] as string));
    const firstRun = /^nyl: run (\S+) /.exec(
      git(s.bare, 'log', '--first-parent', '--format=%s', 'refs/nyl/dev/history').split('\n')[4] as string,
    )?.[1];
    expect(firstRun).toBeDefined();
    const lostOnes = unreachable.filter(
      (x) => x.startsWith(`nyl: run ${lost?.run} `) || x === `nyl: renew lease dev for ${lost?.run}`,
    );
    expect(lostOnes.length).toBeLessThanOrEqual(2);
    for (const subject of unreachable.filter((x) => !lostOnes.includes(x)))
      expect(subject).toContain(`nyl: run ${firstRun} `);

    // An unknown run is a clear error.
    const unknown = await nyl(s.work, ['runs', 'show', '-e', 'dev', 'nope']);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toMatch(/^error NYL-RUN-UNKNOWN \(nope\)\n {2}dev has no run nope\n/);
  }, 120_000);

  it('a refused run is recorded on a ref of its own, listed, and folded into history by the next write', async () => {
    const dir = makeRepo({
      'nyl.yaml': [
        ENV_DEV,
        '---\nkind: Environment\nname: staging\npromotion: {after: [dev]}\n',
        command('app', 'echo app'),
      ].join(''),
    });
    const refused = await nyl(dir, ['reconcile', '-e', 'staging', '--local']);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toMatch(/^error NYL-PROMOTION-PENDING/);
    const ended = git(dir, 'for-each-ref', '--format=%(refname)', 'refs/nyl/staging/ended/');
    expect(ended).toMatch(/^refs\/nyl\/staging\/ended\/[0-9a-f-]{36}$/);
    const listed = await runsOf(dir, ['--local'].concat([]));
    expect(listed).toEqual([]); // dev has none
    const staging = await nylJson<{ facts: { runs: RunLine[] } }>(dir, ['runs', '-e', 'staging', '--local']);
    expect(staging.json.facts.runs).toEqual([
      expect.objectContaining({ state: 'refused', place: 'ended', detail: 'NYL-PROMOTION-PENDING', counts: {} }),
    ]);
    // dev, then staging: its transition folds the refused run into history and drops the ref.
    expect((await nyl(dir, ['reconcile', '-e', 'dev', '--local'])).code).toBe(0);
    expect((await nyl(dir, ['reconcile', '-e', 'staging', '--local'])).code).toBe(0);
    expect(git(dir, 'for-each-ref', 'refs/nyl/staging/ended/')).toBe('');
    const after = await nylJson<{ facts: { runs: RunLine[] } }>(dir, ['runs', '-e', 'staging', '--local']);
    expect(after.json.facts.runs.map((r) => [r.state, r.place])).toEqual([
      ['succeeded', 'history'],
      ['refused', 'history'],
    ]);
  });

  it('runs prune drops history older than the cutoff and moves no state ref', async () => {
    const dir = makeRepo({ 'nyl.yaml': ENV_DEV + command('app', 'echo v0') });
    const reconcileWith = async (v: string) => {
      commitFiles(dir, { 'nyl.yaml': ENV_DEV + command('app', `echo ${v}`) });
      expect((await nyl(dir, ['reconcile', '-e', 'dev', '--local'])).code).toBe(0);
    };
    for (const v of ['v1', 'v2', 'v3']) await reconcileWith(v);
    const t3 = Date.now();
    await new Promise((r) => setTimeout(r, 2_000));
    const t4 = Date.now();
    for (const v of ['v4', 'v5']) await reconcileWith(v);
    const state = () =>
      git(dir, 'for-each-ref', '--format=%(refname) %(objectname)', 'refs/nyl/dev/desired', 'refs/nyl/dev/observed');
    const before = state();
    const none = await nyl(dir, ['runs', 'prune', '-e', 'dev', '--local', '--older-than', '1h']);
    expect(none.stdout).toBe('runs prune dev: nothing to prune\n  kept: 5\n  olderThan: 1h\n');
    // The cutoff falls in the pause between the third and the fourth run.
    const olderThan = `${Date.now() - Math.round((t3 + t4) / 2)}ms`;
    const pruned = await nyl(dir, ['runs', 'prune', '-e', 'dev', '--local', '--older-than', olderThan]);
    expect(pruned.code, pruned.stderr).toBe(0);
    expect(pruned.stdout).toMatch(
      /^runs prune dev: pruned\n {2}kept: 2\n {2}olderThan: \S+\n {2}history: [0-9a-f]{40}\n$/,
    );
    expect(state()).toBe(before);
    expect(git(dir, 'rev-list', '--first-parent', '--count', 'refs/nyl/dev/history')).toBe('2');
    // The kept entries keep their runs' moves, the oldest one none (it has no parent).
    expect(
      git(dir, 'log', '--first-parent', '--format=%H %P', 'refs/nyl/dev/history')
        .split('\n')
        .map((p) => p.split(' ').length - 1),
    ).toEqual([2, 0]);
    const runs = await nylJson<{ facts: { runs: RunLine[] } }>(dir, ['runs', '-e', 'dev', '--local']);
    expect(runs.json.facts.runs.map((r) => r.state)).toEqual(['succeeded', 'succeeded']);
    const usage = await nyl(dir, ['runs', 'prune', '-e', 'dev', '--local']);
    expect(usage.code).toBe(1);
    expect(usage.stderr).toMatch(/^error NYL-USAGE\n {2}runs prune needs --older-than DURATION\n/);
  });
});
