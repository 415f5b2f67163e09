/**
 * End-to-end tests of the built `nyl` against a bare remote served over smart HTTP
 * (`git http-backend` behind a Node server that records every request), without --local:
 * round trips, the lease, and the takeover story of seed 000 (a killed runner, `nyl lease break`,
 * the import by the next run, `nyl recover`, late checkpoints and evidence refs).
 */
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { hostname, userInfo } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type GitHttpServer, makeBareRepo, startGitHttpServer } from './helpers/http-git.js';
import {
  command,
  commitFiles,
  ENV_DEV,
  GIT_ENV,
  git,
  makeRepo,
  nyl,
  nylJson,
  parseTable,
  type Running,
  startNyl,
  tempDir,
  waitForFile,
} from './helpers/repo.js';

const ENV = ['-e', 'dev'];
const UUID = '[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}';
/** RFC 3339 time as the seed shows it (`…:59.431883317+00:00`, `…:12.386099409Z`): any precision, any offset. */
const TIME = '\\d{4}-\\d\\d-\\d\\dT\\d\\d:\\d\\d:\\d\\d(?:\\.\\d+)?(?:Z|[+-]\\d\\d:\\d\\d)';
/** Who the tests' git identity is (helpers/repo.ts GIT_ENV). */
const BY = `${GIT_ENV.GIT_AUTHOR_NAME} <${GIT_ENV.GIT_AUTHOR_EMAIL}>`;

/** The lease holder nyl records on this machine (`user@host`), as `currentHolder()` computes it. */
function holderId(): string {
  let user = 'unknown';
  try {
    user = userInfo().username || 'unknown';
  } catch {
    /* no passwd entry */
  }
  return `${user}@${hostname() || 'localhost'}`;
}

function re(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

let server: GitHttpServer;
beforeAll(async () => {
  server = await startGitHttpServer(tempDir('nyl-remote-root-'));
});

afterAll(async () => {
  await server?.close();
  // Temporary folders go with the harness's own clean-up (helpers/repo.ts).
});

interface Remote {
  /** What `git remote add origin` gets. */
  url: string;
  /** The bare repository on disk, read directly by assertions. */
  bare: string;
  /** Path prefix of this repository's requests on the HTTP server (undefined for file://). */
  path?: string;
}

let remotes = 0;
function httpRemote(): Remote {
  const rel = makeBareRepo(server.root, `r${++remotes}`);
  return { url: `${server.url}/${rel}`, bare: join(server.root, rel), path: `/${rel}/` };
}

function fileRemote(): Remote {
  const bare = join(tempDir('nyl-remote-file-'), 'r.git');
  execFileSync('git', ['init', '--bare', '-q', bare], { env: { ...process.env, GIT_CONFIG_NOSYSTEM: '1' } });
  return { url: `file://${bare}`, bare };
}

/** A work repository with `nyl.yaml` committed and `origin` pointing at the remote. */
function workRepo(remote: Remote, config: string): string {
  const dir = makeRepo({ 'nyl.yaml': config });
  git(dir, 'remote', 'add', 'origin', remote.url);
  return dir;
}

/** Every ref under refs/nyl on the remote, read from the bare repository itself. */
function remoteRefs(remote: Remote): Map<string, string> {
  const out = git(remote.bare, 'for-each-ref', '--format=%(objectname) %(refname)', 'refs/nyl/');
  return new Map(
    out
      .split('\n')
      .filter(Boolean)
      .map((l) => {
        const [oid, ref] = l.split(' ');
        return [ref as string, oid as string];
      }),
  );
}

function remoteFile(remote: Remote, ref: string, path: string): string {
  return git(remote.bare, 'show', `${ref}:${path}`);
}

/** Requests the HTTP server received for this remote since `from` (an index into server.requests). */
function requestsOf(remote: Remote, from: number) {
  return server.requests.slice(from).filter((r) => remote.path && r.path.startsWith(remote.path));
}

function results(stdout: string): Record<string, string> {
  return Object.fromEntries(parseTable(stdout).map((r) => [r.UNIT, r.RESULT ?? r.STATE ?? '']));
}

interface JsonReport {
  run?: string;
  rows: { unit: string; result: string }[];
  stats: { remoteRoundTrips: number };
}

// ---------------------------------------------------------------------------------------------

describe.each([
  ['smart HTTP', httpRemote],
  ['file://', fileRemote],
] as const)('round trips over %s', (_name, makeRemote) => {
  it('W waves take at most W + 2 round trips; nothing to do is one fetch, no lease, no write', async () => {
    const remote = makeRemote();
    const dir = workRepo(
      remote,
      ENV_DEV +
        command('a', 'echo "v=a1" >> "$NYL_OUTPUT"') +
        command('b', 'echo "v=${{ units.a.outputs.v }}-b" >> "$NYL_OUTPUT"') +
        command('c', 'echo "${{ units.b.outputs.v }}" > /dev/null', { needs: ['b'] }),
    );
    const from = remote.path ? server.requests.length : 0;
    const first = await nylJson<JsonReport>(dir, ['reconcile', ...ENV]);
    expect(first.code, first.stderr).toBe(0);
    expect(Object.fromEntries(first.json.rows.map((r) => [r.unit, r.result]))).toEqual({
      a: 'executed',
      b: 'executed',
      c: 'executed',
    });
    const trips = first.json.stats.remoteRoundTrips;
    expect(trips).toBeLessThanOrEqual(3 + 2);
    expect(trips).toBeGreaterThanOrEqual(2); // at least the fetch and the final push
    if (remote.path) {
      const reqs = requestsOf(remote, from);
      const pushes = reqs.filter((r) => r.method === 'POST' && r.path.endsWith('/git-receive-pack')).length;
      const pushDiscovery = reqs.filter((r) => r.method === 'GET' && r.service === 'git-receive-pack').length;
      const fetches = reqs.filter((r) => r.method === 'GET' && r.service === 'git-upload-pack').length;
      expect(fetches).toBe(1);
      // Every push nyl counted reached the server as one receive-pack exchange, and nothing else did.
      expect(pushes).toBe(trips - fetches);
      expect(pushDiscovery).toBe(pushes);
    }
    const refs = remoteRefs(remote);
    expect([...refs.keys()].sort()).toEqual([
      'refs/nyl/dev/desired',
      'refs/nyl/dev/history',
      'refs/nyl/dev/lease',
      'refs/nyl/dev/observed',
    ]);

    const from2 = remote.path ? server.requests.length : 0;
    const second = await nylJson<JsonReport>(dir, ['reconcile', ...ENV]);
    expect(second.code, second.stderr).toBe(0);
    expect(second.json.stats.remoteRoundTrips).toBe(1);
    expect(second.json.rows.map((r) => r.result)).toEqual(['current', 'current', 'current']);
    expect(second.json.run).toBeUndefined(); // no run: no lease taken
    if (remote.path) {
      const reqs = requestsOf(remote, from2);
      expect(reqs.filter((r) => r.path.endsWith('/git-receive-pack') || r.service === 'git-receive-pack')).toEqual([]);
      expect(reqs.filter((r) => r.method === 'GET' && r.service === 'git-upload-pack')).toHaveLength(1);
    }
    expect(remoteRefs(remote)).toEqual(refs);

    // The text face says the same.
    const third = await nyl(dir, ['reconcile', ...ENV]);
    expect(third.code).toBe(0);
    expect(results(third.stdout)).toEqual({ a: 'current', b: 'current', c: 'current' });
    expect(third.stdout).not.toMatch(/run:/);
    expect(remoteRefs(remote)).toEqual(refs);
  });
});

// ---------------------------------------------------------------------------------------------

describe('the lease over smart HTTP', () => {
  it('NYL-LEASE-HELD while a run is live; deleting the lease ref alone does not let a run in; the holder loses', async () => {
    const remote = httpRemote();
    const ctl = tempDir('nyl-remote-ctl-');
    const base = ENV_DEV + command('base', 'echo "v=1" >> "$NYL_OUTPUT"');
    const dir = workRepo(remote, base);
    expect((await nyl(dir, ['reconcile', ...ENV])).code).toBe(0);
    commitFiles(dir, {
      'nyl.yaml': base + command('wait', `touch ${ctl}/started; while [ ! -f ${ctl}/release ]; do sleep 0.05; done`),
    });
    const before = remoteRefs(remote);

    const holder = startNyl(dir, ['reconcile', ...ENV]);
    await waitForFile(join(ctl, 'started'));
    const runRefs = [...remoteRefs(remote).keys()].filter((r) => r.startsWith('refs/nyl/dev/runs/'));
    expect(runRefs).toHaveLength(1);
    const run = (runRefs[0] as string).slice('refs/nyl/dev/runs/'.length);

    const second = await nyl(dir, ['reconcile', ...ENV]);
    expect(second.code).toBe(2);
    expect(second.stdout).toBe('');
    expect(second.stderr).toMatch(
      new RegExp(
        `^error NYL-LEASE-HELD\\n {2}dev is held by run ${run} \\(reconcile\\) by ${re(holderId())}, until ${TIME}\\n {2}fix: wait for that run to finish, pass --wait-lease <duration>, or run \`nyl lease break\` if its runner is gone\\n$`,
      ),
    );

    // Delete the lease ref on the remote, over HTTP: the run ref still holds the environment.
    git(dir, 'push', '-q', 'origin', ':refs/nyl/dev/lease');
    expect(remoteRefs(remote).has('refs/nyl/dev/lease')).toBe(false);
    const third = await nyl(dir, ['reconcile', ...ENV]);
    expect(third.code).toBe(2);
    expect(third.stderr).toMatch(
      new RegExp(`^error NYL-LEASE-HELD\\n {2}dev is held by run ${run} \\(reconcile\\) by ${re(holderId())}, until `),
    );

    writeFileSync(join(ctl, 'release'), '');
    const done = await holder.done;
    expect(done.code).toBe(4);
    expect(done.stderr).toMatch(/^error NYL-LEASE-LOST\n {2}.+\n {2}fix: .+\n$/);
    const after = remoteRefs(remote);
    // Nothing reached the state refs, nor the lease.
    expect(after.get('refs/nyl/dev/observed')).toBe(before.get('refs/nyl/dev/observed'));
    expect(after.get('refs/nyl/dev/desired')).toBe(before.get('refs/nyl/dev/desired'));
    expect(after.has('refs/nyl/dev/lease')).toBe(false);
    // What it finished is kept on its own run ref, as evidence for the next run.
    const cp = JSON.parse(remoteFile(remote, `refs/nyl/dev/runs/${run}`, 'units/wait/checkpoint.json'));
    expect(cp).toMatchObject({ name: 'wait', result: 'succeeded' });
  });
});

// ---------------------------------------------------------------------------------------------

/** Seed 000's story: database checkpointed in wave 1, then the runner is killed while migrate runs. */
function storyConfig(ctl: string, migrateVersion = 'v1', wait = true): string {
  const waitLoop = wait
    ? `echo $$ > ${ctl}/migrate.pgid; touch ${ctl}/migrate.started; while [ ! -f ${ctl}/release ]; do sleep 0.05; done; `
    : '';
  return (
    ENV_DEV +
    command('database', `echo "url=pg://db/$NYL_ENVIRONMENT" >> "$NYL_OUTPUT"; echo ran >> ${ctl}/database.log`) +
    command('migrate', `${waitLoop}echo "${migrateVersion} \${{ units.database.outputs.url }}" >> ${ctl}/migrate.log`)
  );
}

/** SIGKILLs the nyl process and the tool's process group, as a runner that dies would. */
async function killRunner(running: Running, ctl: string): Promise<void> {
  await waitForFile(join(ctl, 'migrate.started'));
  running.child.kill('SIGKILL');
  const pgid = Number(readFileSync(join(ctl, 'migrate.pgid'), 'utf8').trim());
  try {
    process.kill(-pgid, 'SIGKILL');
  } catch {
    /* already gone */
  }
  const r = await running.done;
  expect(r.code).toBe(-1); // killed by a signal
}

function deadRunOf(remote: Remote): string {
  const runs = [...remoteRefs(remote).keys()].filter((r) => r.startsWith('refs/nyl/dev/runs/'));
  expect(runs).toHaveLength(1);
  return (runs[0] as string).slice('refs/nyl/dev/runs/'.length);
}

/**
 * `nyl lease break`'s exact output for a run (seed 000). Breaking on the host the run ran on, it
 * also says whether that run's tools are gone (here they are: the runner was killed with them).
 */
function leaseBreakOutput(run: string, tools = 'gone (it ran on this host)'): string {
  return [
    'lease-break dev: done',
    `  broken: run ${run}`,
    ...(tools ? [`  tools: ${tools}`] : []),
    '',
    'warning NYL-LEASE-HELD',
    `  the lease of run ${run} by ${holderId()} was broken; if that run is still alive it may still cause effects, but it can no longer write state`,
    '  fix: make sure the runner is gone; units it was executing become uncertain at the next run',
    '',
  ].join('\n');
}

/** A remote and a work repo whose first reconcile was killed while migrate ran, after database's checkpoint. */
async function killedRun() {
  const remote = httpRemote();
  const ctl = tempDir('nyl-remote-ctl-');
  const dir = workRepo(remote, storyConfig(ctl));
  const running = startNyl(dir, ['reconcile', ...ENV]);
  await killRunner(running, ctl);
  const dead = deadRunOf(remote);
  // database was its own wave: its checkpoint is on the dead run ref.
  const cp = JSON.parse(remoteFile(remote, `refs/nyl/dev/runs/${dead}`, 'units/database/checkpoint.json'));
  expect(cp).toMatchObject({ name: 'database', result: 'succeeded', outputs: { url: 'pg://db/dev' } });
  expect(existsSync(join(ctl, 'migrate.log'))).toBe(false);
  return { remote, ctl, dir, dead };
}

describe('taking over from a killed runner over smart HTTP (seed 000)', () => {
  it('lease break, NYL-LEASE-BROKEN, the import, status, recover --retry, and the next reconcile', async () => {
    const { remote, ctl, dir, dead } = await killedRun();
    const source = git(dir, 'rev-parse', 'HEAD');

    // Its lease is still held until its deadline.
    const held = await nyl(dir, ['reconcile', ...ENV]);
    expect(held.code).toBe(2);
    expect(held.stderr).toMatch(new RegExp(`^error NYL-LEASE-HELD\\n {2}dev is held by run ${dead} \\(reconcile\\)`));

    const brk = await nyl(dir, ['lease', 'break', ...ENV, '--reason', 'runner was killed']);
    expect(brk.stderr).toBe('');
    expect(brk.stdout).toBe(leaseBreakOutput(dead));
    expect(brk.code).toBe(0);

    // Until an import lands, status says the run is unimported.
    const unimported = await nyl(dir, ['status', ...ENV]);
    expect(unimported.code).toBe(4);
    expect(unimported.stdout).toContain(`warning NYL-RUN-UNIMPORTED (${dead})`);

    // A write that is not an import is refused with the seed's NYL-LEASE-BROKEN.
    const refsBefore = remoteRefs(remote);
    const refused = await nyl(dir, ['recover', ...ENV, '--unit', 'migrate', '--retry', '--reason', 'r']);
    expect(refused.code).toBe(2);
    expect(refused.stdout).toBe('recover dev: refused\n\n');
    expect(refused.stderr).toBe(
      [
        'error NYL-LEASE-BROKEN',
        `  the lease of dev was broken and its run ${dead} has not been imported yet`,
        '  fix: run `nyl recover -e dev` to import it (a `nyl reconcile` or `nyl teardown` of dev imports it too), then run this command again',
        '',
      ].join('\n'),
    );
    expect(remoteRefs(remote)).toEqual(refsBefore);

    // The next reconcile imports database and marks migrate uncertain.
    const takeover = await nyl(dir, ['reconcile', ...ENV]);
    const refs = remoteRefs(remote);
    const desired = refs.get('refs/nyl/dev/desired') as string;
    const observed = refs.get('refs/nyl/dev/observed') as string;
    const run = /\n {2}run: {6}(\S+)\n/.exec(takeover.stdout)?.[1] as string;
    expect(run).toMatch(new RegExp(`^${UUID}$`));
    expect(takeover.stdout).toBe(
      [
        'UNIT      KIND     RESULT     DETAIL',
        'database  Command  imported',
        `migrate   Command  uncertain  run ${dead} was executing it when its lease was broken`,
        '',
        `  run:      ${run}`,
        `  source:   ${source}`,
        `  desired:  ${desired}`,
        `  observed: ${observed}`,
        '',
      ].join('\n'),
    );
    expect(takeover.stderr).toBe('');
    expect(takeover.code).toBe(4);
    expect(existsSync(join(ctl, 'migrate.log'))).toBe(false); // manual policy: not run again

    // Its transition commit records both lists and the break, exactly as the seed shows it
    // (soft, so that the rest of the story still runs when only the message differs).
    git(dir, 'fetch', '-q', 'origin', '+refs/nyl/dev/*:refs/fetched/dev/*');
    const msg = git(dir, 'log', '-1', '--format=%B', 'refs/fetched/dev/observed');
    const dbKey = JSON.parse(git(dir, 'show', 'refs/fetched/dev/desired:units/database.json')).executionKey;
    expect(dbKey).toMatch(/^sha256:[0-9a-f]{64}$/);
    expect
      .soft(msg, 'transition commit message (seed 000)')
      .toMatch(
        new RegExp(
          `^${re(
            [
              'nyl: reconcile dev (1 imported, 1 uncertain)',
              '',
              'units:',
              `  database: {"executionKey":"${dbKey}","result":"imported","run":"${dead}"}`,
              `  migrate: {"reason":"run ${dead} was executing it when its lease was broken","result":"uncertain"}`,
              'recovered: [migrate]',
              'imported: [database]',
              'leaseBroken: {"at":"',
            ].join('\n'),
          )}${TIME}${re(`","by":"${BY}","reason":"runner was killed"}`)}$`,
        ),
      );
    expect(git(dir, 'log', '-1', '--format=%B', 'refs/fetched/dev/desired')).toBe(msg);
    // The dead run ref is consumed (kept as evidence while migrate is uncertain); the lease is free.
    expect(refs.has(`refs/nyl/dev/runs/${dead}`)).toBe(false);
    expect(JSON.parse(remoteFile(remote, 'refs/nyl/dev/lease', 'lease.json'))).toMatchObject({ state: 'released' });

    // nyl status reports the uncertain unit as the seed shows, and exits 4.
    const st = await nyl(dir, ['status', ...ENV]);
    expect(st.stdout).toBe(
      [
        'UNIT      KIND     STATE      RECEIPT  LAST RUN                              DETAIL',
        `database  Command  current    current  ${dead}`,
        `migrate   Command  uncertain  none     ${dead}  run ${dead} was executing it when its lease was broken`,
        '',
        `  source:   ${source}`,
        '',
        'warning NYL-UNIT-UNCERTAIN (migrate)',
        `  unit migrate is uncertain: run ${dead} was executing it when its lease was broken`,
        '  fix: check what the execution did; a unit whose recovery policy converges runs again in the next nyl reconcile, otherwise run `nyl recover -e dev --unit migrate --retry --reason <text>` once it is safe to run it again',
        '',
      ].join('\n'),
    );
    expect(st.code).toBe(4);

    // A second reconcile reads no run ref and changes nothing: importing is idempotent.
    const again = await nylJson<JsonReport>(dir, ['reconcile', ...ENV]);
    expect(again.code).toBe(4);
    expect(again.json.stats.remoteRoundTrips).toBe(1);
    expect(remoteRefs(remote)).toEqual(refs);

    // recover --retry clears the condition in one observed commit.
    const rec = await nyl(dir, [
      'recover',
      ...ENV,
      '--unit',
      'migrate',
      '--retry',
      '--reason',
      'migration not applied, checked the schema version',
    ]);
    expect(rec.stderr).toBe('');
    expect(rec.code).toBe(0);
    const observed2 = remoteRefs(remote).get('refs/nyl/dev/observed') as string;
    expect(observed2).not.toBe(observed);
    expect(rec.stdout).toMatch(
      new RegExp(
        `^recover dev: done\\n {2}observed: ${observed2}\\n {2}condition: ${re(
          `{"reason":"run ${dead} was executing it when its lease was broken","run":"${dead}","since":"`,
        )}${TIME}${re('","state":"uncertain"}')}\\n {2}evidence: \\[\\]\\n$`,
      ),
    );

    // The next reconcile executes migrate; database stays current; the desired ref does not move.
    writeFileSync(join(ctl, 'release'), '');
    const next = await nyl(dir, ['reconcile', ...ENV]);
    const refs3 = remoteRefs(remote);
    const run3 = /\n {2}run: {6}(\S+)\n/.exec(next.stdout)?.[1] as string;
    expect(next.stdout).toBe(
      [
        'UNIT      KIND     RESULT    DETAIL',
        'database  Command  current',
        'migrate   Command  executed',
        '',
        `  run:      ${run3}`,
        `  source:   ${source}`,
        `  observed: ${refs3.get('refs/nyl/dev/observed')}`,
        '',
      ].join('\n'),
    );
    expect(next.stdout).not.toMatch(/desired:/);
    expect(next.code).toBe(0);
    expect(refs3.get('refs/nyl/dev/desired')).toBe(desired);
    expect(readFileSync(join(ctl, 'migrate.log'), 'utf8')).toBe('v1 pg://db/dev\n');
    expect(readFileSync(join(ctl, 'database.log'), 'utf8')).toBe('ran\n'); // imported, never run again
    expect([...refs3.keys()].sort()).toEqual([
      'refs/nyl/dev/desired',
      'refs/nyl/dev/history',
      'refs/nyl/dev/lease',
      'refs/nyl/dev/observed',
    ]);
  });

  it('nyl recover -e imports the killed run without executing, and writes no run ref of its own', async () => {
    const remote = httpRemote();
    const ctl = tempDir('nyl-remote-ctl-');
    // First everything runs; then migrate changes and its runner is killed while it runs.
    const dir = workRepo(remote, storyConfig(ctl, 'v1', false));
    expect((await nyl(dir, ['reconcile', ...ENV])).code).toBe(0);
    commitFiles(dir, { 'nyl.yaml': storyConfig(ctl, 'v2') });
    const running = startNyl(dir, ['reconcile', ...ENV]);
    await killRunner(running, ctl);
    const dead = deadRunOf(remote);
    expect((await nyl(dir, ['lease', 'break', ...ENV, '--reason', 'runner was killed'])).stdout).toBe(
      leaseBreakOutput(dead),
    );

    const from = server.requests.length;
    const rec = await nyl(dir, ['recover', ...ENV, '--reason', 'import the killed run']);
    const reqs = requestsOf(remote, from);
    const refs = remoteRefs(remote);
    expect(rec.stderr).toBe('');
    expect(rec.stdout).toMatch(
      new RegExp(
        `^${re(
          [
            'recover dev: done',
            `  desired: ${refs.get('refs/nyl/dev/desired')}`,
            `  observed: ${refs.get('refs/nyl/dev/observed')}`,
            '  imported: []',
            '  leaseBroken: {"at":"',
          ].join('\n'),
        )}${TIME}${re(`","by":"${BY}","reason":"runner was killed"}\n  recovered: ["migrate"]\n`)}$`,
      ),
    );
    expect(rec.code).toBe(0);
    // One write: the transition commit with the lease, no run record of its own.
    expect(reqs.filter((r) => r.method === 'POST' && r.path.endsWith('/git-receive-pack'))).toHaveLength(1);
    expect([...refs.keys()].filter((r) => r.includes('/runs/'))).toEqual([]);
    expect([...refs.keys()].sort()).toEqual([
      'refs/nyl/dev/desired',
      `refs/nyl/dev/evidence/${dead}`,
      'refs/nyl/dev/history',
      'refs/nyl/dev/lease',
      'refs/nyl/dev/observed',
    ]);
    expect(JSON.parse(remoteFile(remote, 'refs/nyl/dev/lease', 'lease.json'))).toMatchObject({ state: 'released' });
    const migrate = JSON.parse(remoteFile(remote, 'refs/nyl/dev/observed', 'units/migrate.json'));
    expect(migrate.condition).toMatchObject({ state: 'uncertain', run: dead });
    expect(readFileSync(join(ctl, 'migrate.log'), 'utf8')).toBe('v1 pg://db/dev\n'); // nothing executed

    // The import is recorded: status no longer reports the run, only the uncertain unit.
    const st = await nyl(dir, ['status', ...ENV]);
    expect(st.code).toBe(4);
    expect(st.stdout).not.toContain('NYL-RUN-UNIMPORTED');
    expect(st.stdout).toContain('warning NYL-UNIT-UNCERTAIN (migrate)');
    // A second recover finds nothing to import.
    const again = await nyl(dir, ['recover', ...ENV, '--reason', 'again']);
    expect(again.code).toBe(0);
    expect(again.stdout).toBe('recover dev: nothing to import\n');
    expect(remoteRefs(remote)).toEqual(refs);
  });

  it('--accept refuses a run that has no matching checkpoint of the unit', async () => {
    const { remote, dir, dead } = await killedRun();
    expect((await nyl(dir, ['lease', 'break', ...ENV, '--reason', 'runner was killed'])).code).toBe(0);
    expect((await nyl(dir, ['recover', ...ENV, '--reason', 'import the killed run'])).code).toBe(0);
    const refs = remoteRefs(remote);
    expect(refs.has(`refs/nyl/dev/evidence/${dead}`)).toBe(true); // it holds database's checkpoint only

    const noCheckpoint = await nyl(dir, ['recover', ...ENV, '--unit', 'migrate', '--accept', dead, '--reason', 'x']);
    expect(noCheckpoint.code).toBe(2);
    expect(noCheckpoint.stdout).toBe('recover dev: refused\n\n');
    expect(noCheckpoint.stderr).toBe(
      [
        'error NYL-RECOVER-NO-EVIDENCE (migrate)',
        `  Nyl holds no checkpoint of migrate by run ${dead}`,
        '  fix: check the unit and use --retry instead: `nyl recover -e dev --unit migrate --retry --reason <text>`',
        '',
      ].join('\n'),
    );
    const unknown = '01a1732a-11d1-7ed6-a3cc-174dc69c7856';
    const noRun = await nyl(dir, ['recover', ...ENV, '--unit', 'migrate', '--accept', unknown, '--reason', 'x']);
    expect(noRun.code).toBe(2);
    expect(noRun.stderr).toContain(
      `error NYL-RECOVER-NO-EVIDENCE (migrate)\n  Nyl holds no checkpoint of migrate by run ${unknown}\n`,
    );
    expect(remoteRefs(remote)).toEqual(refs);
    const migrate = JSON.parse(remoteFile(remote, 'refs/nyl/dev/observed', 'units/migrate.json'));
    expect(migrate.condition).toMatchObject({ state: 'uncertain', run: dead });
  });
});

// ---------------------------------------------------------------------------------------------

describe('late checkpoints over smart HTTP', () => {
  it('a runner whose lease was broken checkpoints onto its evidence ref; recover --accept adopts it', async () => {
    const remote = httpRemote();
    const ctl = tempDir('nyl-remote-ctl-');
    const dir = workRepo(remote, storyConfig(ctl));
    const runner = startNyl(dir, ['reconcile', ...ENV]);
    await waitForFile(join(ctl, 'migrate.started'));
    const run = deadRunOf(remote);

    // Break the lease of a runner that is in fact alive, and import it. On its host, nyl says its tool still runs.
    const pgid = readFileSync(join(ctl, 'migrate.pgid'), 'utf8').trim();
    expect((await nyl(dir, ['lease', 'break', ...ENV, '--reason', 'runner was killed'])).stdout).toBe(
      [
        leaseBreakOutput(run, `still running on this host (process groups ${pgid})`),
        `warning NYL-TOOLS-RUNNING (${run})`,
        `  run ${run} ran on this host, and its tools still run in process groups ${pgid}: the next run would start its units on top of them`,
        `  fix: stop them before the next run: \`kill -TERM -- -${pgid}\``,
        '',
      ].join('\n'),
    );
    const rec = await nyl(dir, ['recover', ...ENV, '--reason', 'x']);
    expect(rec.code).toBe(0);
    expect(rec.stdout).toContain('  imported: ["database"]\n');
    expect(rec.stdout).toContain('  recovered: ["migrate"]\n');
    const imported = remoteRefs(remote);
    const evidence = `refs/nyl/dev/evidence/${run}`;
    expect(imported.has(`refs/nyl/dev/runs/${run}`)).toBe(false);
    expect(imported.has(evidence)).toBe(true);

    // Its unit finishes: the run cannot write state any more.
    writeFileSync(join(ctl, 'release'), '');
    const late = await runner.done;
    expect(late.code).toBe(4);
    expect(late.stderr).toContain('error NYL-LEASE-LOST');
    expect(readFileSync(join(ctl, 'migrate.log'), 'utf8')).toBe('v1 pg://db/dev\n');
    const after = remoteRefs(remote);
    expect(after.get('refs/nyl/dev/desired')).toBe(imported.get('refs/nyl/dev/desired'));
    expect(after.get('refs/nyl/dev/observed')).toBe(imported.get('refs/nyl/dev/observed'));
    expect(after.get('refs/nyl/dev/lease')).toBe(imported.get('refs/nyl/dev/lease'));
    expect(after.has(`refs/nyl/dev/runs/${run}`)).toBe(false);
    // The late checkpoint landed on the evidence ref.
    expect(after.get(evidence)).not.toBe(imported.get(evidence));
    const cp = JSON.parse(remoteFile(remote, evidence, 'units/migrate/checkpoint.json'));
    expect(cp).toMatchObject({ name: 'migrate', result: 'succeeded' });
    const stillUncertain = JSON.parse(remoteFile(remote, 'refs/nyl/dev/observed', 'units/migrate.json'));
    expect(stillUncertain.condition).toMatchObject({ state: 'uncertain', run });

    // status and the next reconcile report it; the unit stays uncertain.
    const lateProblem = new RegExp(
      `warning NYL-RUN-LATE-CHECKPOINT \\(migrate\\)\\n {2}run ${run} checkpointed migrate \\(succeeded\\) after it was marked uncertain; .+\\n {2}fix: .*${re(`nyl recover -e dev --unit migrate --accept ${run} --reason <text>`)}`,
    );
    const st = await nyl(dir, ['status', ...ENV]);
    expect(st.code).toBe(4);
    expect(st.stdout).toMatch(lateProblem);
    expect(parseTable(st.stdout).find((r) => r.UNIT === 'migrate')?.STATE).toBe('uncertain');
    const rc = await nyl(dir, ['reconcile', ...ENV]);
    expect(rc.code).toBe(4);
    expect(`${rc.stdout}${rc.stderr}`).toMatch(lateProblem);
    expect(results(rc.stdout)).toEqual({ database: 'current', migrate: 'uncertain' });
    expect(readFileSync(join(ctl, 'migrate.log'), 'utf8')).toBe('v1 pg://db/dev\n');
    expect(remoteRefs(remote)).toEqual(after);

    // recover --accept adopts the late checkpoint; the evidence ref goes.
    const acc = await nyl(dir, ['recover', ...ENV, '--unit', 'migrate', '--accept', run, '--reason', 'x']);
    expect(acc.stderr).toBe('');
    expect(acc.code).toBe(0);
    expect(acc.stdout).toMatch(
      /^recover dev: done\n {2}observed: [0-9a-f]{40}\n {2}condition: \{.+\}\n {2}evidence: \[.+\]\n$/,
    );
    const listed = JSON.parse(/evidence: (.+)\n$/.exec(acc.stdout)?.[1] as string);
    expect(listed).toEqual([expect.objectContaining({ run, accept: true, result: 'succeeded' })]);
    const final = remoteRefs(remote);
    expect(final.has(evidence)).toBe(false);
    const adopted = JSON.parse(remoteFile(remote, 'refs/nyl/dev/observed', 'units/migrate.json'));
    expect(adopted.receipt).toMatchObject({ run, executionKey: cp.executionKey, uid: cp.uid });
    expect(adopted.condition).toBeUndefined();
    const ok = await nyl(dir, ['status', ...ENV]);
    expect(ok.code).toBe(0);
    expect(results(ok.stdout)).toEqual({ database: 'current', migrate: 'current' });
    const quiet = await nyl(dir, ['reconcile', ...ENV]);
    expect(quiet.code).toBe(0);
    expect(results(quiet.stdout)).toEqual({ database: 'current', migrate: 'current' });
    expect(readFileSync(join(ctl, 'migrate.log'), 'utf8')).toBe('v1 pg://db/dev\n');
  });
});
