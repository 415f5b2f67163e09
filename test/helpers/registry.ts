import { type ChildProcess, spawn } from 'node:child_process';
import {
  accessSync,
  closeSync,
  constants,
  mkdirSync,
  mkdtempSync,
  openSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';

/**
 * A real OCI distribution registry (Debian's `docker-registry`, i.e. distribution/distribution
 * `registry serve`) on 127.0.0.1 over plain HTTP, without auth, with deletes enabled, storing in a
 * temp dir. Clients must turn TLS verification off (`skopeo … --tls-verify=false`).
 *
 * The registry is a separate process whose output goes to a file, not a pipe, so tests may block
 * their event loop with synchronous `execFileSync('skopeo', …)` while it serves.
 */
export interface Registry {
  /** `127.0.0.1:PORT`, for `docker://${host}/app:tag`. */
  host: string;
  /** Kills the registry and removes its storage and config. */
  stop(): Promise<void>;
}

export const REGISTRY_TOOLS = ['skopeo', 'docker-registry'] as const;

export const REGISTRY_TOOLS_MISSING =
  'OCI image tests need `skopeo` and `docker-registry` on PATH (they run a real registry on 127.0.0.1): ' +
  'run `apt-get install -y skopeo docker-registry`';

function onPath(command: string): boolean {
  for (const dir of (process.env.PATH ?? '').split(delimiter)) {
    if (!dir) continue;
    try {
      accessSync(join(dir, command), constants.X_OK);
      return true;
    } catch {
      // not in this directory
    }
  }
  return false;
}

/** True when both `skopeo` and `docker-registry` are executable from PATH. */
export function hasRegistryTools(): boolean {
  return REGISTRY_TOOLS.every(onPath);
}

/** The tools from `REGISTRY_TOOLS` that are not on PATH. */
export function missingRegistryTools(): string[] {
  return REGISTRY_TOOLS.filter((t) => !onPath(t));
}

/** A port that was free a moment ago (the registry binds it next; `startRegistry` retries on a race). */
function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const addr = srv.address();
      const port = typeof addr === 'object' && addr ? addr.port : 0;
      srv.close(() => (port ? resolve(port) : reject(new Error('could not pick a free port'))));
    });
  });
}

function configYaml(root: string, port: number): string {
  // JSON strings are valid YAML double-quoted scalars, so paths need no further escaping.
  return [
    'version: 0.1',
    'log:',
    '  level: error',
    '  accesslog:',
    '    disabled: true',
    'storage:',
    '  filesystem:',
    `    rootdirectory: ${JSON.stringify(root)}`,
    '  delete:',
    '    enabled: true',
    '  maintenance:',
    '    uploadpurging:',
    '      enabled: false',
    'http:',
    `  addr: 127.0.0.1:${port}`,
    '',
  ].join('\n');
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Resolves once the child has exited (immediately if it already has). */
function exited(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => child.once('exit', () => resolve()));
}

async function kill(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const done = exited(child);
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), 5_000);
  await done;
  clearTimeout(timer);
}

const READY_TIMEOUT_MS = 20_000;

/**
 * Starts one registry and waits until `GET /v2/` answers 200. Throws `REGISTRY_TOOLS_MISSING` when
 * the tools are absent, and the registry's log when it exits or never becomes ready.
 */
export async function startRegistry(): Promise<Registry> {
  if (!hasRegistryTools()) throw new Error(`${REGISTRY_TOOLS_MISSING} (missing: ${missingRegistryTools().join(', ')})`);
  const dir = mkdtempSync(join(tmpdir(), 'nyl-registry-'));
  try {
    for (let attempt = 1; ; attempt++) {
      try {
        return await startOnce(dir);
      } catch (err) {
        // Another process may have taken the port between freePort() and the registry's bind.
        if (attempt < 3 && err instanceof Error && /address already in use/i.test(err.message)) continue;
        throw err;
      }
    }
  } catch (err) {
    rmSync(dir, { recursive: true, force: true });
    throw err;
  }
}

async function startOnce(dir: string): Promise<Registry> {
  const port = await freePort();
  const host = `127.0.0.1:${port}`;
  const storage = join(dir, 'storage');
  mkdirSync(storage, { recursive: true });
  const config = join(dir, 'config.yml');
  writeFileSync(config, configYaml(storage, port));
  const logPath = join(dir, 'registry.log');
  const logFd = openSync(logPath, 'w');

  // REGISTRY_* variables override the config file (e.g. REGISTRY_HTTP_ADDR): keep them out.
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) if (!k.startsWith('REGISTRY_')) env[k] = v;
  let child: ChildProcess;
  try {
    child = spawn('docker-registry', ['serve', config], { env, stdio: ['ignore', logFd, logFd] });
  } finally {
    closeSync(logFd);
  }
  let spawnError: Error | undefined;
  child.on('error', (e) => {
    spawnError = e;
  });
  const log = () => {
    try {
      return readFileSync(logPath, 'utf8').trim();
    } catch {
      return '';
    }
  };

  const deadline = Date.now() + READY_TIMEOUT_MS;
  let lastProblem = 'no answer yet';
  while (true) {
    if (spawnError || child.exitCode !== null || child.signalCode !== null) {
      await kill(child);
      throw new Error(
        `docker-registry exited before it was ready (${spawnError?.message ?? `code ${child.exitCode ?? child.signalCode}`}):\n${log()}`,
      );
    }
    try {
      const res = await fetch(`http://${host}/v2/`, { signal: AbortSignal.timeout(2_000) });
      await res.arrayBuffer();
      if (res.status === 200) break;
      lastProblem = `GET /v2/ answered ${res.status}`;
    } catch (e) {
      lastProblem = e instanceof Error ? e.message : String(e);
    }
    if (Date.now() > deadline) {
      await kill(child);
      throw new Error(`docker-registry on ${host} not ready after ${READY_TIMEOUT_MS} ms (${lastProblem}):\n${log()}`);
    }
    await sleep(50);
  }

  let stopped: Promise<void> | undefined;
  return {
    host,
    stop() {
      stopped ??= (async () => {
        await kill(child);
        rmSync(dir, { recursive: true, force: true });
      })();
      return stopped;
    },
  };
}
