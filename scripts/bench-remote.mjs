// Remote part of `npm run bench`: a reconcile against a bare remote served over smart HTTP by git's
// own `git http-backend` (the test suite's server, test/helpers/git-http-worker.cjs) and over
// file://, counting round trips (nyl's own count and the HTTP requests the server saw) and wall
// time; then the takeover after a runner is killed: lease break, and the reconcile that imports.
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';

const WORKER = fileURLToPath(new URL('../test/helpers/git-http-worker.cjs', import.meta.url));
const LOG_BYTES = 4 * 1024 * 1024;

/** Starts the smart-HTTP server on 127.0.0.1; `requests()` reads what it recorded. */
async function startServer(root) {
  const log = new SharedArrayBuffer(8 + LOG_BYTES);
  const baseEnv = { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? root };
  const worker = new Worker(WORKER, { workerData: { root, requireAuth: null, log, baseEnv } });
  const port = await new Promise((res, rej) => {
    worker.once('error', rej);
    worker.on('message', (m) => m.type === 'listening' && res(m.port));
  });
  const counters = new Int32Array(log, 0, 2);
  const bytes = new Uint8Array(log);
  const requests = () => {
    const text = new TextDecoder().decode(bytes.slice(8, 8 + Atomics.load(counters, 0)));
    return text
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l));
  };
  const close = () =>
    new Promise((res) => {
      worker.once('exit', res);
      worker.postMessage('close');
    });
  return { url: `http://127.0.0.1:${port}`, requests, close };
}

function run(cmd, args, cwd, env) {
  const t0 = performance.now();
  const r = spawnSync(cmd, args, { cwd, env, encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 });
  return { ms: performance.now() - t0, status: r.status, stdout: r.stdout, stderr: r.stderr };
}

/** `units` Command units in 3 waves; the middle wave's first unit sleeps when `slow` exists. */
function config(units, version = 'v1') {
  const per = Math.ceil(units / 3);
  const docs = ['kind: Environment\nname: bench\n'];
  for (let i = 0; i < units; i++) {
    const wave = Math.floor(i / per);
    const needs = wave > 0 ? `needs: [u${(wave - 1) * per}]\n` : '';
    const runs = i === per ? `"[ -f slow ] && sleep 30; true # ${version}"` : `"true # ${version}"`;
    docs.push(`kind: Command\nname: u${i}\n${needs}spec:\n  run: ${runs}\n`);
  }
  return docs.join('---\n');
}

export async function benchRemote({ cli, env, check, repeat, units = 30 }) {
  const root = mkdtempSync(join(os.tmpdir(), 'nyl-bench-remote-'));
  const server = await startServer(root);
  const out = { units, waves: 3, transports: {} };
  try {
    for (const transport of ['http', 'file']) {
      const bare = join(root, `${transport}.git`);
      run('git', ['init', '-q', '--bare', bare], root, env);
      run('git', ['-C', bare, 'config', 'http.receivepack', 'true'], root, env);
      const work = join(root, `${transport}-work`);
      run('git', ['init', '-q', '-b', 'main', work], root, env);
      const url = transport === 'http' ? `${server.url}/${transport}.git` : `file://${bare}`;
      run('git', ['remote', 'add', 'origin', url], work, env);
      writeFileSync(join(work, 'nyl.yaml'), config(units));
      run('git', ['add', '-A'], work, env);
      run('git', ['-c', 'user.name=bench', '-c', 'user.email=bench@localhost', 'commit', '-qm', 'bench'], work, env);
      const nyl = (...args) => {
        const before = server.requests().length;
        const r = run(process.execPath, [cli, ...args, '-e', 'bench', '--json'], work, env);
        const report = JSON.parse(r.stdout || '{}');
        const reqs = server.requests().slice(before);
        return {
          ms: r.ms,
          status: r.status,
          report,
          roundTrips: report.stats?.remoteRoundTrips,
          gitProcesses: report.stats?.gitProcesses,
          httpRequests: reqs.length,
          receivePacks: reqs.filter((q) => q.method === 'POST' && q.path.endsWith('git-receive-pack')).length,
        };
      };
      const first = nyl('reconcile');
      check(first.status === 0, `${transport}: first reconcile exit ${first.status}`);
      check(
        first.roundTrips <= 3 + 2,
        `${transport}: first reconcile of 3 waves made ${first.roundTrips} round trips (> W + 2)`,
      );
      const noops = Array.from({ length: repeat }, () => nyl('reconcile'));
      for (const n of noops) {
        check(n.roundTrips === 1, `${transport}: no-op reconcile made ${n.roundTrips} round trips`);
        check(n.receivePacks === 0, `${transport}: no-op reconcile pushed`);
      }
      // Takeover: kill the runner while wave 2 runs, break its lease, time the importing reconcile.
      writeFileSync(join(work, 'slow'), '');
      run('git', ['add', 'slow'], work, env);
      run('git', ['-c', 'user.name=bench', '-c', 'user.email=bench@localhost', 'commit', '-qm', 'slow'], work, env);
      writeFileSync(join(work, 'nyl.yaml'), config(units, 'v2'));
      run('git', ['-c', 'user.name=bench', '-c', 'user.email=bench@localhost', 'commit', '-qam', 'v2'], work, env);
      const victim = spawn(process.execPath, [cli, 'reconcile', '-e', 'bench'], {
        cwd: work,
        env,
        stdio: 'ignore',
        detached: true,
      });
      await waitFor(
        () => run('git', ['ls-remote', 'origin', 'refs/nyl/bench/runs/*'], work, env).stdout.includes('runs/'),
        20_000,
      );
      await new Promise((r) => setTimeout(r, 500)); // wave 1 done, wave 2 running
      process.kill(-victim.pid, 'SIGKILL');
      rmSync(join(work, 'slow'));
      const brk = nyl('lease', 'break', '--reason', 'bench: runner killed');
      const takeover = nyl('reconcile');
      check(brk.status === 0, `${transport}: lease break exit ${brk.status}`);
      check([0, 4].includes(takeover.status), `${transport}: takeover reconcile exit ${takeover.status}`);
      const summary = (xs) => {
        const ms = xs.map((x) => x.ms).sort((a, b) => a - b);
        return {
          medianMs: Math.round(ms[ms.length >> 1] * 10) / 10,
          roundTrips: xs[0].roundTrips,
          httpRequests: xs[0].httpRequests,
          gitProcesses: xs[0].gitProcesses,
        };
      };
      out.transports[transport] = {
        first: summary([first]),
        noop: summary(noops),
        leaseBreak: summary([brk]),
        takeover: {
          ...summary([takeover]),
          imported: takeover.report.rows?.filter((r) => r.result === 'imported').length,
        },
      };
    }
  } finally {
    await server.close();
    rmSync(root, { recursive: true, force: true });
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
