// Lease wait under `--wait-lease`: how long after the holder releases the lease the waiter holds
// it, and how many requests the waiter sends to the remote while it waits, over file:// and over
// smart HTTP (git's own `git http-backend`, the test suite's server).
//
//   node scripts/bench-lease-wait.mjs [--samples 10] [--scenarios random,repeat] [--transports file,http]
//                                     [--min 1.5] [--max 8] [--repeat 4] [--cli dist/cli.js] [--vs OTHER/cli.js]
//                                     [--json]
//
// Each sample: a holder reconciles a unit that waits for a gate file; a waiter (its own clone, one
// commit ahead) starts once the holder took the lease, with --wait-lease; the gate opens after
// the hold. `random`: holds of --min to --max seconds, and nothing in the environment's past says
// when one ends; `repeat`: every run of the unit (the waiter's too) takes --repeat seconds, give
// or take a fifth. The bench watches the remote's lease ref itself (a file in the bare
// repository, read without git), so it sees the release and the waiter's take when they land.
// Requests are the waiter's alone, between its first read and the read that answers the release
// (both left out): over HTTP it uses its own URL (a symlink to the same bare repository) and
// every request the server saw on it counts; over file:// its remote runs a counting upload-pack.
// A read is one upload-pack conversation (a fetch or an ls-remote): over HTTP, a `GET info/refs`
// and the POSTs that follow it. With --vs, each sample's hold is measured for both CLIs in turn
// (A B A B ...), so both see the same holds on the same machine load.
import { spawn, spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync, symlinkSync, watch, writeFileSync } from 'node:fs';
import os from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { Worker } from 'node:worker_threads';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const WORKER = join(ROOT, 'test', 'helpers', 'git-http-worker.cjs');
const ENV_NAME = 'bench';
const LEASE_REF = `refs/nyl/${ENV_NAME}/lease`;

function git(args, cwd, env) {
  const r = spawnSync('git', args, { cwd, env, encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`git ${args.join(' ')} (in ${cwd}): ${r.stderr}`);
  return r.stdout.trim();
}

/** One Command unit that waits for $GATE; `version` changes its spec, so every commit has work. */
function config(version) {
  return [
    `kind: Environment\nname: ${ENV_NAME}\n`,
    `kind: Command\nname: gate\nspec:\n  run: 'touch "$GATE.started"; while [ ! -f "$GATE" ]; do sleep 0.01; done # v${version}'\n`,
  ].join('---\n');
}

/** A small deterministic generator: the same holds on every run of the bench. */
function random(seed) {
  let s = seed >>> 0;
  return () => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    return s / 2 ** 32;
  };
}

async function startServer(root) {
  const log = new SharedArrayBuffer(8 + 4 * 1024 * 1024);
  const baseEnv = { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? root };
  const worker = new Worker(WORKER, { workerData: { root, requireAuth: null, log, baseEnv } });
  const port = await new Promise((res, rej) => {
    worker.once('error', rej);
    worker.on('message', (m) => m.type === 'listening' && res(m.port));
  });
  const counters = new Int32Array(log, 0, 2);
  const bytes = new Uint8Array(log);
  return {
    url: `http://127.0.0.1:${port}`,
    requests: () =>
      new TextDecoder()
        .decode(bytes.slice(8, 8 + Atomics.load(counters, 0)))
        .split('\n')
        .filter(Boolean)
        .map((l) => JSON.parse(l)),
    close: () =>
      new Promise((res) => {
        worker.once('exit', res);
        worker.postMessage('close');
      }),
  };
}

/**
 * Every change of the remote's lease ref, timed when it lands (inotify, and a 20 ms fallback
 * read), with `snapshot()` (what the server had seen by then) taken at that moment.
 */
function watchLease(bare, snapshot) {
  const file = join(bare, LEASE_REF);
  const changes = [];
  const read = () => {
    try {
      return readFileSync(file, 'utf8').trim();
    } catch {
      return undefined;
    }
  };
  let last = read();
  const look = () => {
    const now = read();
    if (!now || now === last) return;
    last = now;
    changes.push({ at: performance.now(), epoch: Date.now(), sha: now, seen: snapshot() });
  };
  const watcher = watch(dirname(file), look);
  const timer = setInterval(look, 20);
  return {
    changes,
    close: () => {
      watcher.close();
      clearInterval(timer);
    },
  };
}

/**
 * The waiter's requests while it waited: its upload-pack conversations (each starts with a GET of
 * info/refs) between its first read and the read that follows the release, both left out (any
 * reconcile makes the first; the second is the answer to the release, not waiting).
 */
function waitingRequests(reqs) {
  const conversations = [];
  for (const q of reqs) {
    if (q.method === 'GET' || !conversations.length) conversations.push([]);
    conversations[conversations.length - 1].push(q);
  }
  const reads = conversations.filter((c) => c[0].service === 'git-upload-pack').slice(1, -1);
  return { polls: reads.length, requests: reads.flat().length };
}

function startNyl(cli, args, cwd, env) {
  const child = spawn(process.execPath, [cli, ...args], { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d) => (stdout += d));
  child.stderr.on('data', (d) => (stderr += d));
  const done = new Promise((res) => child.on('close', (code) => res({ code, stdout, stderr })));
  return { started: performance.now(), done };
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
async function until(pred, ms, what) {
  const end = performance.now() + ms;
  while (!pred()) {
    if (performance.now() > end) throw new Error(`timed out waiting for ${what}`);
    await sleep(10);
  }
}

function median(xs) {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
}
function quantile(xs, q) {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(q * s.length))];
}

/** Measures `samples` holds over one transport; returns per-sample figures and their summary. */
async function benchTransport({ clis, env, transport, scenario, samples, minMs, maxMs, repeatMs, server, root, seed }) {
  const dir = mkdtempSync(join(root, `${scenario}-${transport}-`));
  const bare = join(dir, 'lw.git');
  git(['init', '-q', '--bare', bare], dir, env);
  // Refs stay loose files (the bench reads the lease ref's file), and no gc runs mid-sample.
  for (const [k, v] of [
    ['http.receivepack', 'true'],
    ['gc.auto', '0'],
    ['receive.autogc', 'false'],
  ])
    git(['-C', bare, 'config', k, v], dir, env);
  const name = transport === 'http' ? dir.slice(root.length + 1) : '';
  symlinkSync(bare, join(dir, 'waiter.git'));
  const urls =
    transport === 'http'
      ? { holder: `${server.url}/${name}/lw.git`, waiter: `${server.url}/${name}/waiter.git` }
      : { holder: `file://${bare}`, waiter: `file://${bare}` };
  // file://: the waiter's remote runs upload-pack through a script that logs each conversation.
  const pollLog = join(dir, 'waiter-polls.log');
  const counting = join(dir, 'counting-upload-pack');
  writeFileSync(counting, `#!/bin/sh\ndate +%s%3N >> '${pollLog}'\nexec git-upload-pack "$@"\n`);
  chmodSync(counting, 0o755);

  const author = join(dir, 'author');
  git(['init', '-q', '-b', 'main', author], dir, env);
  const commit = (version) => {
    writeFileSync(join(author, 'nyl.yaml'), config(version));
    git(['add', '-A'], author, env);
    git(['-c', 'user.name=bench', '-c', 'user.email=bench@localhost', 'commit', '-qm', `v${version}`], author, env);
    git(['push', '-q', bare, 'HEAD:refs/heads/main'], author, env);
    return git(['rev-parse', 'HEAD'], author, env);
  };
  const first = commit(0);
  const clones = {};
  for (const who of ['holder', 'waiter']) {
    const c = join(dir, who);
    git(['clone', '-q', bare, c], dir, env);
    git(['remote', 'set-url', 'origin', urls[who]], c, env);
    if (who === 'waiter' && transport === 'file') git(['config', 'remote.origin.uploadpack', counting], c, env);
    clones[who] = c;
  }
  const checkout = (who, sha) => {
    git(['fetch', '-q', bare, 'main'], clones[who], env);
    git(['checkout', '-q', '--detach', sha], clones[who], env);
  };
  const rand = random(seed);
  // A repeated deploy takes repeatMs, give or take a fifth, every time it runs.
  const again = () => Math.round(repeatMs * (0.8 + 0.4 * rand()));
  // A first reconcile, so every sample finds recorded state (and the lease ref exists).
  checkout('holder', first);
  const gate0 = join(dir, 'gate-0');
  const warm = startNyl(clis[0], ['reconcile', '-e', ENV_NAME], clones.holder, { ...env, GATE: gate0 });
  await until(() => existsSync(`${gate0}.started`), 30_000, 'the first reconcile');
  if (scenario === 'repeat') await sleep(again());
  writeFileSync(gate0, '');
  const w0 = await warm.done;
  if (w0.code !== 0) throw new Error(`${transport}: first reconcile exited ${w0.code}: ${w0.stderr}`);

  const watcher = watchLease(bare, () => server?.requests().length ?? 0);
  const out = clis.map(() => []);
  let version = 0;
  /** One hold: the holder takes the lease, the waiter waits, the holder releases after `holdMs`. */
  const hold = async (cli, holdMs) => {
    version += 2;
    checkout('holder', commit(version - 1));
    checkout('waiter', commit(version));
    const gate = join(dir, `gate-${version}`);
    // random: the waiter's own run is instant, so no past run says when the next one ends.
    if (scenario === 'random') writeFileSync(`${gate}-w`, '');
    const from = watcher.changes.length;
    const holder = startNyl(cli, ['reconcile', '-e', ENV_NAME], clones.holder, { ...env, GATE: gate });
    await until(() => existsSync(`${gate}.started`) && watcher.changes.length > from, 30_000, 'the holder');
    const heldAt = watcher.changes[from].at;
    const reqFrom = server?.requests().length ?? 0;
    writeFileSync(pollLog, '');
    const waiter = startNyl(cli, ['reconcile', '-e', ENV_NAME, '--wait-lease', '120s', '--json'], clones.waiter, {
      ...env,
      GATE: `${gate}-w`,
    });
    // Waiting starts with the waiter's first read (a loaded machine may take a while to get there).
    const read = () =>
      server
        ? server
            .requests()
            .slice(reqFrom)
            .some((q) => q.path.includes('/waiter.git/'))
        : readFileSync(pollLog, 'utf8').length > 0;
    await until(read, 60_000, 'the waiter');
    const readAt = performance.now();
    const readEpoch = Date.now();
    // random: the hold runs from there; repeat: the unit's time runs from the holder's take.
    const openAt = scenario === 'random' ? readAt + holdMs : Math.max(heldAt + holdMs, readAt + 200);
    await sleep(Math.max(0, openAt - performance.now()));
    writeFileSync(gate, '');
    // The holder's release, then the waiter's take: the next two changes of the lease ref.
    await until(() => watcher.changes.length >= from + 3, 60_000, 'the release and the take');
    if (scenario === 'repeat') {
      await sleep(again());
      writeFileSync(`${gate}-w`, '');
    }
    const [h, w] = await Promise.all([holder.done, waiter.done]);
    if (h.code !== 0) throw new Error(`${transport}: holder exited ${h.code}: ${h.stderr}`);
    if (w.code !== 0) throw new Error(`${transport}: waiter exited ${w.code}: ${w.stderr}`);
    const [, release, take] = watcher.changes.slice(from, from + 3);
    const subject = (sha) => git(['-C', bare, 'log', '-1', '--format=%s', sha], dir, env);
    if (
      !subject(release.sha).startsWith('nyl: release lease') ||
      !subject(take.sha).startsWith(`nyl: lease ${ENV_NAME} for`)
    )
      throw new Error(`${transport}: unexpected lease changes: ${subject(release.sha)} / ${subject(take.sha)}`);
    let waiting;
    if (server) {
      const mine = server
        .requests()
        .slice(reqFrom, take.seen)
        .filter((q) => q.path.includes('/waiter.git/'));
      waiting = waitingRequests(mine);
    } else {
      // file://: one line per upload-pack the waiter ran, the first read and the last left out.
      const at = readFileSync(pollLog, 'utf8').split('\n').filter(Boolean).map(Number);
      waiting = { polls: Math.max(0, at.filter((t) => t <= take.epoch).length - 2) };
    }
    return {
      holdMs: Math.round(release.at - readAt),
      latencyMs: Math.round(take.at - release.at),
      waitedMs: Math.round(take.epoch - readEpoch),
      polls: waiting.polls,
      httpRequests: waiting.requests,
    };
  };
  try {
    for (let i = 1; i <= samples; i++) {
      const holdMs = scenario === 'repeat' ? again() : Math.round(minMs + rand() * (maxMs - minMs));
      // With two CLIs, each sample holds once for each, in turn, the same hold.
      for (const [k, cli] of clis.entries()) out[k].push(await hold(cli, holdMs));
    }
  } finally {
    watcher.close();
  }
  return out.map(summary);
}

function summary(out) {
  const latencies = out.map((s) => s.latencyMs);
  const waited = out.reduce((a, s) => a + s.waitedMs, 0) / 1000;
  const polls = out.reduce((a, s) => a + s.polls, 0);
  const http = out[0]?.httpRequests === undefined ? undefined : out.reduce((a, s) => a + s.httpRequests, 0);
  return {
    samples: out,
    medianLatencyMs: median(latencies),
    p90LatencyMs: quantile(latencies, 0.9),
    maxLatencyMs: Math.max(...latencies),
    pollsPerSecond: Math.round((polls / waited) * 100) / 100,
    httpRequestsPerSecond: http === undefined ? undefined : Math.round((http / waited) * 100) / 100,
  };
}

/**
 * For `npm run bench`: the figures of each scenario and transport. `random`: holds of minMs to
 * maxMs, nothing in the environment's past says when one ends; `repeat`: the same deploy again,
 * each run taking repeatMs give or take a fifth (the waiter's receipts tell it when to look).
 */
export async function benchLeaseWait({
  cli = join(ROOT, 'dist', 'cli.js'),
  vs,
  env = process.env,
  samples = 10,
  scenarios = ['random', 'repeat'],
  transports = ['file', 'http'],
  minMs = 1_500,
  maxMs = 8_000,
  repeatMs = 4_000,
  seed = 15,
} = {}) {
  const root = mkdtempSync(join(os.tmpdir(), 'nyl-bench-lease-wait-'));
  const server = transports.includes('http') ? await startServer(root) : undefined;
  const clis = vs ? [cli, vs] : [cli];
  const result = { samples, holdMs: [minMs, maxMs], repeatMs, clis, scenarios: {} };
  try {
    for (const scenario of scenarios) {
      result.scenarios[scenario] = {};
      for (const transport of transports) {
        const [a, b] = await benchTransport({
          clis,
          env,
          transport,
          scenario,
          samples,
          minMs,
          maxMs,
          repeatMs,
          server: transport === 'http' ? server : undefined,
          root,
          seed,
        });
        result.scenarios[scenario][transport] = b ? { ...a, vs: b } : a;
      }
    }
  } finally {
    await server?.close();
    rmSync(root, { recursive: true, force: true });
  }
  return result;
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const { values: opt } = parseArgs({
    options: {
      samples: { type: 'string', default: '10' },
      scenarios: { type: 'string', default: 'random,repeat' },
      transports: { type: 'string', default: 'file,http' },
      min: { type: 'string', default: '1.5' },
      max: { type: 'string', default: '8' },
      repeat: { type: 'string', default: '4' },
      cli: { type: 'string', default: join(ROOT, 'dist', 'cli.js') },
      vs: { type: 'string' },
      json: { type: 'boolean' },
      help: { type: 'boolean', short: 'h' },
    },
    strict: true,
  });
  if (opt.help) {
    process.stdout.write(
      'usage: node scripts/bench-lease-wait.mjs [--samples N] [--scenarios random,repeat] [--transports file,http]\n' +
        '         [--min SECONDS] [--max SECONDS] [--repeat SECONDS] [--cli dist/cli.js] [--vs OTHER/cli.js] [--json]\n',
    );
    process.exit(0);
  }
  const samples = Number(opt.samples);
  const [minMs, maxMs, repeatMs] = [opt.min, opt.max, opt.repeat].map((x) => Number(x) * 1000);
  const list = (text) => text.split(',').filter(Boolean);
  const bad = [
    !(Number.isInteger(samples) && samples > 0) && `--samples ${opt.samples}: expected a positive integer`,
    !(minMs >= 500 && maxMs >= minMs) && `--min ${opt.min} --max ${opt.max}: expected 0.5 <= min <= max (seconds)`,
    !(repeatMs >= 500) && `--repeat ${opt.repeat}: expected at least 0.5 (seconds)`,
    list(opt.scenarios).some((t) => t !== 'random' && t !== 'repeat') &&
      `--scenarios ${opt.scenarios}: expected random and/or repeat`,
    list(opt.transports).some((t) => t !== 'file' && t !== 'http') &&
      `--transports ${opt.transports}: expected file and/or http`,
    ...[opt.cli, opt.vs].map((f) => f !== undefined && !existsSync(f) && `${f}: no such file (build it first)`),
  ].filter(Boolean);
  if (bad.length) {
    process.stderr.write(`${bad.join('\n')}\n`);
    process.exit(2);
  }
  // Children get no system or global git configuration and no nyl settings of the operator's.
  const env = Object.fromEntries(
    Object.entries(process.env).filter(([k]) => !k.startsWith('GIT_') && !k.startsWith('NYL_')),
  );
  Object.assign(env, { NYL_PROGRESS: '0', GIT_CONFIG_NOSYSTEM: '1', GIT_CONFIG_GLOBAL: os.devNull });
  const r = await benchLeaseWait({
    cli: resolve(opt.cli),
    vs: opt.vs === undefined ? undefined : resolve(opt.vs),
    env,
    samples,
    scenarios: list(opt.scenarios),
    transports: list(opt.transports),
    minMs,
    maxMs,
    repeatMs,
  });
  if (opt.json) process.stdout.write(`${JSON.stringify(r, null, 2)}\n`);
  else {
    process.stdout.write(
      `lease wait, release -> waiter holds the lease, ${samples} samples each; random: holds of ${minMs / 1000}-${maxMs / 1000} s; repeat: the same deploy again, ${repeatMs / 1000} s +-20%\n`,
    );
    process.stdout.write('scenario  transport  cli  median ms  p90 ms  max ms  reads/s  HTTP requests/s\n');
    const row = (scenario, t, who, x) =>
      process.stdout.write(
        `${scenario.padEnd(8)}  ${t.padEnd(9)}  ${who}  ${String(x.medianLatencyMs).padStart(9)}  ${String(x.p90LatencyMs).padStart(6)}  ${String(x.maxLatencyMs).padStart(6)}  ${String(x.pollsPerSecond).padStart(7)}  ${String(x.httpRequestsPerSecond ?? '-').padStart(15)}\n`,
      );
    for (const [scenario, byTransport] of Object.entries(r.scenarios))
      for (const [t, x] of Object.entries(byTransport)) {
        row(scenario, t, 'A  ', x);
        if (x.vs) row(scenario, t, 'B  ', x.vs);
      }
    if (opt.vs) process.stdout.write(`A: ${resolve(opt.cli)}\nB: ${resolve(opt.vs)}\n`);
  }
}
