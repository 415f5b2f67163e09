// Row 5, lease wait: measured by scripts/bench-lease-wait.mjs (written apart) when it exists.
// Called as `node scripts/bench-lease-wait.mjs --cli PATH --json --samples N`; its JSON (the last
// `{…}` block of stdout) gives, per transport, `samples[].latencyMs` (release → the waiter holds the
// lease), `medianLatencyMs`, `pollsPerSecond` (conversations with the remote while waiting) and,
// over HTTP, `httpRequestsPerSecond`. A flat `{ medianMs, samplesMs, requestsPerSecond }` is
// accepted too.
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { childEnv, log, ROOT, timed } from './bench-lib.mjs';

export const LEASE_WAIT_SCRIPT = join(ROOT, 'scripts', 'bench-lease-wait.mjs');

function lastJson(text) {
  const starts = [0];
  for (let i = text.indexOf('\n{'); i >= 0; i = text.indexOf('\n{', i + 1)) starts.push(i + 1);
  for (const s of starts.reverse()) {
    if (text[s] !== '{') continue;
    try {
      return JSON.parse(text.slice(s));
    } catch {
      // not where the last object starts: try an earlier line
    }
  }
  return undefined;
}

const num = (x) => (Number.isFinite(Number(x)) ? Number(x) : undefined);

/** Per transport: latency samples (ms), polls/s, HTTP requests/s. */
function normalize(out) {
  if (out?.transports && typeof out.transports === 'object')
    return Object.entries(out.transports).map(([transport, t]) => ({
      transport,
      samplesMs: Array.isArray(t.samples) ? t.samples.map((s) => num(s.latencyMs)).filter((x) => x !== undefined) : [],
      medianMs: num(t.medianLatencyMs),
      pollsPerSecond: num(t.pollsPerSecond),
      httpRequestsPerSecond: num(t.httpRequestsPerSecond),
    }));
  if (num(out?.medianMs) !== undefined)
    return [
      {
        transport: out.transport ?? 'remote',
        samplesMs: Array.isArray(out.samplesMs) ? out.samplesMs.map(num).filter((x) => x !== undefined) : [],
        medianMs: num(out.medianMs),
        pollsPerSecond: num(out.requestsPerSecond),
      },
    ];
  return [];
}

export function benchLeaseWait(ctx, { samples }) {
  if (!existsSync(LEASE_WAIT_SCRIPT)) return { skipped: 'scripts/bench-lease-wait.mjs does not exist (yet)' };
  log(`lease wait: scripts/bench-lease-wait.mjs --samples ${samples}`);
  const args = [LEASE_WAIT_SCRIPT, '--cli', ctx.cli, '--json', '--samples', String(samples)];
  const r = timed(process.execPath, args, { cwd: ROOT, env: childEnv });
  const transports = normalize(lastJson(r.stdout ?? '')).map((t) => ({
    ...t,
    samplesMs: t.samplesMs.length ? t.samplesMs : t.medianMs !== undefined ? [t.medianMs] : [],
  }));
  if (r.status !== 0 || !transports.length || transports.some((t) => !t.samplesMs.length)) {
    const tail = (r.stderr || r.stdout || '').trim().split('\n').slice(-3).join(' / ');
    const why = `scripts/bench-lease-wait.mjs exited ${r.status}${transports.length ? '' : ' without the expected JSON'}: ${tail}`;
    ctx.check(false, why);
    return { skipped: why };
  }
  return { transports, ms: r.ms };
}
