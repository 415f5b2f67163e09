// Commands against a remote, over smart HTTP (git http-backend behind a byte-counting proxy,
// scripts/bench-net.mjs) and over file://:
//  - no-op reconcile / status / plan of a large environment, each paired with its floor: node
//    start-up plus the one `git fetch` of the environment's refs that nyl makes;
//  - the cost of each command on a runner: round trips, HTTP requests, bytes, git processes;
//  - a takeover after a runner is killed (lease break, and the reconcile that imports).
import { spawn } from 'node:child_process';
import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  childEnv,
  commitAll,
  ENV_NAME,
  git,
  log,
  nylJson,
  paired,
  setIdentity,
  stateRefs,
  tempDir,
  timed,
  traced,
} from './bench-lib.mjs';

/** The fetch nyl makes at the start of every command (src/core/state/remote-backend.ts). */
export const STATE_FETCH = [
  '-c',
  'http.lowSpeedLimit=1000',
  '-c',
  'http.lowSpeedTime=20',
  'fetch',
  '--quiet',
  '--no-tags',
  '--prune',
  '--no-write-fetch-head',
  '--no-auto-gc',
  'origin',
  `+refs/nyl/${ENV_NAME}/*:refs/nyl-remotes/origin/nyl/${ENV_NAME}/*`,
];

// The floor of a command against a remote: start node, run that fetch, exit.
const FETCH_FLOOR = `import { spawnSync } from 'node:child_process';
const r = spawnSync('git', process.argv.slice(2), { stdio: 'ignore' });
process.exit(r.status ?? 1);
`;

export function remoteTools(dir) {
  const floor = join(dir, 'fetch-floor.mjs');
  writeFileSync(floor, FETCH_FLOOR);
  return { fetchFloor: floor };
}

/** node + the state fetch, in `clone`. */
export function fetchFloor(tools, clone, env = childEnv) {
  const r = timed(process.execPath, [tools.fetchFloor, ...STATE_FETCH], { cwd: clone, env });
  if (r.status !== 0) throw new Error(`floor fetch in ${clone}: exit ${r.status}`);
  return r;
}

/** A bare repository `<name>.git` under the server root holding `src`'s main and state refs. */
export function publish(src, root, name) {
  const bare = join(root, `${name}.git`);
  git(root, ['init', '-q', '--bare', '-b', 'main', bare]);
  git(bare, ['config', 'http.receivepack', 'true']);
  git(src, ['push', '-q', bare, 'main', `refs/nyl/${ENV_NAME}/*:refs/nyl/${ENV_NAME}/*`]);
  return bare;
}

export function urlOf(server, bare, transport, name) {
  return transport === 'http' ? `${server.url}/${name}.git` : `file://${bare}`;
}

/** A clone of main only, as a runner's checkout makes it (depth 1), with origin at `url`. */
export function freshClone(bare, url, prefix) {
  const dir = tempDir(prefix);
  git(dir, ['clone', '-q', '--depth', '1', '--no-tags', `file://${bare}`, '.']);
  git(dir, ['remote', 'set-url', 'origin', url]);
  setIdentity(dir);
  return dir;
}

/**
 * One run of `args` with everything counted (not timed): nyl's own stats, every git process by
 * trace2 (git's own children included), what the HTTP server saw, objects received.
 */
export function countedRun(ctx, dir, args, { transport, floor = false } = {}) {
  const t = traced(childEnv, ctx.tmp);
  const m = ctx.server.mark();
  const before = objectsIn(dir);
  const r = floor ? fetchFloor(ctx.remoteTools, dir, t.env) : nylJson(ctx.cli, dir, args, { env: t.env });
  const tr = t.read();
  const s = ctx.server.since(m);
  const http = transport === 'http';
  return {
    exit: r.status,
    ms: r.ms,
    roundTrips: floor ? 1 : r.report?.stats?.remoteRoundTrips,
    nylGitProcesses: floor ? 1 : r.report?.stats?.gitProcesses,
    gitProcesses: tr.gitProcesses,
    gitByCommand: tr.byCommand,
    toolProcesses: floor ? 0 : r.report?.stats?.toolProcesses,
    httpRequests: http ? s.httpRequests : undefined,
    pushes: http ? s.receivePacks : undefined,
    bytesDown: http ? s.bytesDown : undefined,
    bytesUp: http ? s.bytesUp : undefined,
    objectsReceived: objectsIn(dir) - before,
  };
}

function objectsIn(dir) {
  const out = Object.fromEntries(
    git(dir, ['count-objects', '-v'])
      .split('\n')
      .map((l) => l.split(': ')),
  );
  return Number(out.count) + Number(out['in-pack']);
}

const READS = [
  ['reconcile', 'result'],
  ['status', 'result'],
  ['plan', 'result'],
];

/**
 * Row 1: no-op reconcile, status and plan of the environment in `src` (already reconciled, N
 * units) against a remote, over each transport, paired with the fetch floor.
 */
export function benchRemoteReads(ctx, { src, units, transports, label = 'reads' }) {
  const out = { units, transports: {} };
  for (const transport of transports) {
    const name = `${label}-${units}-${transport}`;
    const bare = publish(src, ctx.root, name);
    const tips = stateRefs(bare);
    const clone = freshClone(bare, urlOf(ctx.server, bare, transport, name), `${label}-${transport}`);
    // The clone's first command fetches every state object: measured apart, then the pairs are
    // what every later command pays (a warm clone, as in a job that runs nyl twice).
    const firstFetch = countedRun(ctx, clone, ['status', '-e', ENV_NAME], { transport });
    const t = { firstStatus: firstFetch, commands: {} };
    for (const [command, field] of READS) {
      log(`remote ${transport}: ${command} (no-op, ${units} units) × ${ctx.repeat}, paired with node + git fetch`);
      const p = paired(
        ctx.repeat,
        () => {
          const r = nylJson(ctx.cli, clone, [command, '-e', ENV_NAME]);
          const rows = r.report.rows ?? [];
          const notCurrent = rows.filter((x) => x[field] !== 'current').length;
          ctx.check(
            r.status === 0 && rows.length === units && !notCurrent && r.report.run === undefined,
            `remote ${transport} ${command}: exit ${r.status}, ${rows.length} rows, ${notCurrent} not current${r.report.run ? `, started run ${r.report.run}` : ''}`,
          );
          return r.ms;
        },
        () => fetchFloor(ctx.remoteTools, clone).ms,
      );
      t.commands[command] = {
        ms: p.a,
        floorMs: p.b,
        ratios: p.ratios,
        cost: countedRun(ctx, clone, [command, '-e', ENV_NAME], { transport }),
      };
    }
    // The same status without the derived cache (git/derived-cache.ts): what the first command
    // after every change of the state pays, the cache being keyed by the objects it was read from.
    log(
      `remote ${transport}: status (no-op, ${units} units, NYL_CACHE=0) × ${ctx.repeat}, paired with node + git fetch`,
    );
    const cold = paired(
      ctx.repeat,
      () => nylJson(ctx.cli, clone, ['status', '-e', ENV_NAME], { env: { ...childEnv, NYL_CACHE: '0' } }).ms,
      () => fetchFloor(ctx.remoteTools, clone).ms,
    );
    t.uncached = { ms: cold.a, floorMs: cold.b, ratios: cold.ratios };
    t.floorCost = countedRun(ctx, clone, [], { transport, floor: true });
    ctx.check(stateRefs(bare) === tips, `remote ${transport}: a read-only command changed the remote's state refs`);
    out.transports[transport] = t;
    ctx.drop(clone);
  }
  return out;
}

// ---- takeover ----------------------------------------------------------------------------------

/** `units` Command units in 3 waves; the middle wave's first unit sleeps when `slow` exists. */
function takeoverConfig(units, version = 'v1') {
  const per = Math.ceil(units / 3);
  const docs = [`kind: Environment\nname: ${ENV_NAME}\n`];
  for (let i = 0; i < units; i++) {
    const wave = Math.floor(i / per);
    const needs = wave > 0 ? `needs: [u${(wave - 1) * per}]\n` : '';
    const runs = i === per ? `"[ -f slow ] && sleep 30; true # ${version}"` : `"true # ${version}"`;
    docs.push(`kind: Command\nname: u${i}\n${needs}spec:\n  run: ${runs}\n`);
  }
  return docs.join('---\n');
}

/**
 * A small environment reconciled over each transport, then a runner killed during wave 2: the
 * cost (round trips, requests, bytes, processes) and time of each command of that story.
 */
export async function benchTakeover(ctx, { units = 30, transports }) {
  const out = { units, waves: 3, transports: {} };
  for (const transport of transports) {
    const name = `takeover-${transport}`;
    const bare = join(ctx.root, `${name}.git`);
    git(ctx.root, ['init', '-q', '--bare', '-b', 'main', bare]);
    git(bare, ['config', 'http.receivepack', 'true']);
    const work = tempDir(`takeover-${transport}`);
    git(work, ['init', '-q', '-b', 'main']);
    setIdentity(work);
    git(work, ['remote', 'add', 'origin', urlOf(ctx.server, bare, transport, name)]);
    writeFileSync(join(work, 'nyl.yaml'), takeoverConfig(units));
    commitAll(work, 'bench');
    git(work, ['push', '-q', 'origin', 'main']);
    const run = (...args) => countedRun(ctx, work, [...args, '-e', ENV_NAME], { transport });
    const timedRun = (...args) => nylJson(ctx.cli, work, [...args, '-e', ENV_NAME]);
    log(`takeover ${transport}: first reconcile, no-op, kill during wave 2, lease break, takeover`);
    const first = run('reconcile');
    ctx.check(first.exit === 0, `${transport}: first reconcile exit ${first.exit}`);
    ctx.check(
      first.roundTrips <= 3 + 2,
      `${transport}: first reconcile of 3 waves made ${first.roundTrips} round trips (> W + 2)`,
    );
    const noop = run('reconcile');
    ctx.check(noop.roundTrips === 1, `${transport}: no-op reconcile made ${noop.roundTrips} round trips`);
    ctx.check(!noop.pushes, `${transport}: no-op reconcile pushed`);
    writeFileSync(join(work, 'slow'), '');
    commitAll(work, 'slow');
    writeFileSync(join(work, 'nyl.yaml'), takeoverConfig(units, 'v2'));
    commitAll(work, 'v2');
    git(work, ['push', '-q', 'origin', 'main']);
    const victim = spawn(process.execPath, [ctx.cli, 'reconcile', '-e', ENV_NAME], {
      cwd: work,
      env: childEnv,
      stdio: 'ignore',
      detached: true,
    });
    await waitFor(() => git(work, ['ls-remote', 'origin', `refs/nyl/${ENV_NAME}/runs/*`]).includes('runs/'), 20_000);
    await new Promise((r) => setTimeout(r, 500)); // wave 1 done, wave 2 running
    process.kill(-victim.pid, 'SIGKILL');
    rmSync(join(work, 'slow'));
    const brk = run('lease', 'break', '--reason', 'bench: runner killed');
    ctx.check(brk.exit === 0, `${transport}: lease break exit ${brk.exit}`);
    const takeover = run('reconcile');
    ctx.check([0, 4].includes(takeover.exit), `${transport}: takeover reconcile exit ${takeover.exit}`);
    // Times of the two repeatable steps, apart from the counted runs.
    const noopMs = Array.from({ length: ctx.repeat }, () => timedRun('reconcile').ms);
    out.transports[transport] = { first, noop: { ...noop, samplesMs: noopMs }, leaseBreak: brk, takeover };
    ctx.drop(work);
  }
  return out;
}

async function waitFor(pred, ms) {
  const until = Date.now() + ms;
  while (!pred()) {
    if (Date.now() > until) throw new Error('timed out waiting for the run ref');
    await new Promise((r) => setTimeout(r, 100));
  }
}

/**
 * The floor of one write: `git push --atomic` of two refs with `--force-with-lease` on each, as
 * nyl writes, swapping two existing commits between them (nothing new to send). Removed after.
 */
export function pushFloor(clone, samples) {
  const tree = git(clone, ['mktree'], { input: '' });
  const x = git(clone, ['commit-tree', tree, '-m', 'bench: push floor x']);
  const y = git(clone, ['commit-tree', tree, '-m', 'bench: push floor y']);
  const refs = ['refs/bench-floor/a', 'refs/bench-floor/b'];
  let cur = [x, y];
  const push = (next, old) =>
    timed(
      'git',
      [
        'push',
        '--atomic',
        '--porcelain',
        '--no-verify',
        'origin',
        ...refs.map((r, i) => `${next[i]}:${r}`),
        ...refs.map((r, i) => `--force-with-lease=${r}:${old[i] ?? ''}`),
      ],
      { cwd: clone },
    );
  const first = push(cur, [undefined, undefined]);
  if (first.status !== 0) throw new Error(`push floor: ${first.stderr}`);
  const ms = [];
  for (let i = 0; i < samples + 1; i++) {
    const next = [cur[1], cur[0]];
    const r = push(next, cur);
    if (r.status !== 0) throw new Error(`push floor: ${r.stderr}`);
    if (i > 0) ms.push(r.ms); // the first swap warms up
    cur = next;
  }
  git(clone, ['push', '-q', '--atomic', 'origin', ...refs.map((r) => `:${r}`)]);
  return ms;
}
