// Row 5, lease wait: measured by scripts/bench-lease-wait.mjs (its own script, owned apart) when it
// exists. Called as `node scripts/bench-lease-wait.mjs --cli PATH --json --samples N [--scenarios
// LIST]`; its JSON gives, per scenario (`random`: holds nothing in the past predicts; `repeat`: the
// same deploy again) and transport, `samples[].latencyMs` (release → the waiter holds the lease),
// `medianLatencyMs`, `pollsPerSecond` (conversations with the remote while waiting) and, over HTTP,
// `httpRequestsPerSecond`. A flat `{ transports: {…} }` without scenarios is read too.
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { childEnv, log, ROOT, timed } from './bench-lib.mjs';

export const LEASE_WAIT_SCRIPT = join(ROOT, 'scripts', 'bench-lease-wait.mjs');

export function lastJson(text) {
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

const num = (x) => (typeof x === 'number' && Number.isFinite(x) ? x : undefined);

function transportFigures(t) {
  const samplesMs = Array.isArray(t?.samples)
    ? t.samples.map((x) => num(x?.latencyMs)).filter((x) => x !== undefined)
    : [];
  const medianMs = num(t?.medianLatencyMs);
  return {
    samplesMs: samplesMs.length ? samplesMs : medianMs !== undefined ? [medianMs] : [],
    pollsPerSecond: num(t?.pollsPerSecond),
    httpRequestsPerSecond: num(t?.httpRequestsPerSecond),
  };
}

const isObject = (x) => x !== null && typeof x === 'object' && !Array.isArray(x);

/** The script's JSON as rows: `{ scenario, transport, samplesMs, pollsPerSecond, httpRequestsPerSecond }`. */
export function leaseWaitRows(out) {
  const groups = isObject(out?.scenarios)
    ? Object.entries(out.scenarios)
    : isObject(out?.transports)
      ? [[undefined, out.transports]]
      : [];
  return groups.flatMap(([scenario, byTransport]) =>
    isObject(byTransport)
      ? Object.entries(byTransport).map(([transport, t]) => ({ scenario, transport, ...transportFigures(t) }))
      : [],
  );
}

export function benchLeaseWait(ctx, { samples, scenarios }) {
  if (!existsSync(LEASE_WAIT_SCRIPT)) return { skipped: 'scripts/bench-lease-wait.mjs does not exist (yet)' };
  log(`lease wait: scripts/bench-lease-wait.mjs --samples ${samples} --scenarios ${scenarios.join(',')}`);
  const args = [LEASE_WAIT_SCRIPT, '--cli', ctx.cli, '--json', '--samples', String(samples)];
  args.push('--scenarios', scenarios.join(','));
  const r = timed(process.execPath, args, { cwd: ROOT, env: childEnv });
  const rows = leaseWaitRows(lastJson(r.stdout ?? ''));
  if (r.status !== 0 || !rows.length || rows.some((t) => !t.samplesMs.length)) {
    const tail = (r.stderr || r.stdout || '').trim().split('\n').slice(-3).join(' / ');
    const why = `scripts/bench-lease-wait.mjs exited ${r.status}${rows.length ? '' : ' without the expected JSON'}: ${tail}`;
    ctx.check(false, why);
    return { skipped: why };
  }
  return { rows, ms: r.ms };
}
