// Shared pieces of `npm run bench`: processes timed from outside, git plumbing, generated
// environments, robust statistics (median, noise from the spread, verdicts) and paired A/B sampling.
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

export const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');
export const ENV_NAME = 'bench';
export const MAX_BUFFER = 512 * 1024 * 1024;

// Children run with the operator's environment minus anything git- or nyl-specific, and without
// system/global git configuration, so the numbers do not depend on who runs the benchmark.
export const childEnv = Object.fromEntries(
  Object.entries(process.env).filter(([k]) => !k.startsWith('GIT_') && !k.startsWith('NYL_')),
);
Object.assign(childEnv, {
  NYL_PROGRESS: '0',
  GIT_CONFIG_NOSYSTEM: '1',
  GIT_CONFIG_GLOBAL: os.devNull,
  GIT_TERMINAL_PROMPT: '0',
});

// ---- temporary directories ---------------------------------------------------------------------

const temps = new Set();
let keepTemps = false;
export function keepTemporaries(keep) {
  keepTemps = keep;
}
export function tempDir(prefix) {
  const d = mkdtempSync(join(os.tmpdir(), `nyl-bench-${prefix}-`));
  temps.add(d);
  return d;
}
export function dropTemp(d) {
  if (keepTemps) return;
  rmSync(d, { recursive: true, force: true });
  temps.delete(d);
}
export function cleanupTemps() {
  if (keepTemps) {
    if (temps.size) process.stderr.write(`kept: ${[...temps].join(' ')}\n`);
    return;
  }
  for (const d of temps) rmSync(d, { recursive: true, force: true });
  temps.clear();
}

// ---- processes ---------------------------------------------------------------------------------

/** One process, timed from spawn to exit (start-up included, as an operator sees it). */
export function timed(cmd, args, { cwd, env = childEnv, input } = {}) {
  const t0 = performance.now();
  const r = spawnSync(cmd, args, { cwd, env, input, encoding: 'utf8', maxBuffer: MAX_BUFFER });
  const ms = performance.now() - t0;
  if (r.error) throw r.error;
  return { ms, status: r.status, signal: r.signal, stdout: r.stdout, stderr: r.stderr };
}

export function git(cwd, args, { input, env = childEnv } = {}) {
  const r = spawnSync('git', args, { cwd, env, input, encoding: 'utf8', maxBuffer: MAX_BUFFER });
  if (r.error) throw r.error;
  if (r.status !== 0) throw new Error(`git ${args.join(' ')} failed (exit ${r.status}): ${r.stderr.slice(0, 2000)}`);
  return r.stdout.trim();
}

/** `node CLI ARGS --json`: the parsed report, or a clear error naming the command. */
export function nylJson(cli, cwd, args, { env = childEnv, allowNoJson = false } = {}) {
  const r = timed(process.execPath, [cli, ...args, '--json'], { cwd, env });
  let report;
  try {
    report = JSON.parse(r.stdout);
  } catch {
    if (!allowNoJson)
      throw new Error(`nyl ${args.join(' ')} printed no JSON (exit ${r.status}):\n${r.stderr.slice(0, 3000)}`);
  }
  return { ...r, report };
}

/**
 * Environment variables that make every git process (nyl's, and the ones git starts itself)
 * append trace2 events to a file; `read()` counts them.
 */
export function traced(env, dir) {
  const file = join(dir, `trace2-${process.hrtime.bigint()}.json`);
  writeFileSync(file, '');
  return {
    env: { ...env, GIT_TRACE2_EVENT: file },
    read() {
      const counts = { gitProcesses: 0, byCommand: {}, objectsSent: 0 };
      for (const line of readFileSync(file, 'utf8').split('\n')) {
        if (!line) continue;
        let e;
        try {
          e = JSON.parse(line);
        } catch {
          continue;
        }
        if (e.event === 'start') {
          counts.gitProcesses++;
          const name = commandName(e.argv ?? []);
          counts.byCommand[name] = (counts.byCommand[name] ?? 0) + 1;
        }
        // file:// runs upload-pack (and its pack-objects) on this machine: what it sent is traced.
        if (e.event === 'data' && e.key === 'write_pack_file/wrote') counts.objectsSent += Number(e.value) || 0;
      }
      rmSync(file, { force: true });
      return counts;
    },
  };
}

function commandName(argv) {
  const [exe, ...rest] = argv;
  const base = String(exe ?? '')
    .split('/')
    .pop();
  if (base !== 'git') return base;
  for (let i = 0; i < rest.length; i++) {
    if (rest[i] === '-c' || rest[i] === '-C') i++;
    else if (!rest[i].startsWith('-')) return rest[i];
  }
  return 'git';
}

// ---- git repositories --------------------------------------------------------------------------

/** `git count-objects -v` as numbers: loose `count`, `packs`, `in-pack`, sizes in KiB. */
export function countObjects(dir) {
  const out = {};
  for (const line of git(dir, ['count-objects', '-v']).split('\n')) {
    const [k, v] = line.split(': ');
    out[k] = Number(v);
  }
  return { loose: out.count, packs: out.packs, inPack: out['in-pack'], looseKiB: out.size, packKiB: out['size-pack'] };
}

/** Objects reachable from every ref (the state refs included). */
export function reachableObjects(dir) {
  const r = spawnSync('git', ['rev-list', '--objects', '--all'], { cwd: dir, env: childEnv, maxBuffer: MAX_BUFFER });
  if (r.status !== 0) throw new Error(`git rev-list --objects --all failed: ${r.stderr}`);
  let n = 0;
  for (const b of r.stdout) if (b === 10) n++;
  return n;
}

export function stateRefs(cwd, prefix = `refs/nyl/${ENV_NAME}/`) {
  return git(cwd, ['for-each-ref', '--format=%(objectname) %(refname)', prefix]);
}

export function commitAll(dir, message) {
  git(dir, ['add', '-A']);
  git(dir, ['-c', 'user.name=nyl bench', '-c', 'user.email=bench@localhost', 'commit', '-q', '-m', message]);
}

export function setIdentity(dir) {
  git(dir, ['config', 'user.name', 'nyl bench']);
  git(dir, ['config', 'user.email', 'bench@localhost']);
}

/** A repository whose `nyl.yaml` holds N units (see generateConfig), committed on main. */
export function initRepo(dir, n, opts) {
  git(dir, ['init', '-q', '-b', 'main']);
  setIdentity(dir);
  writeFileSync(join(dir, 'nyl.yaml'), generateConfig(n, opts));
  if (opts?.files) {
    mkdirSync(join(dir, 'scripts'), { recursive: true });
    for (let i = 0; i < n; i++) writeFileSync(join(dir, scriptOf(n, i)), `true # unit ${i + 1}\n`);
  }
  commitAll(dir, `bench: ${n} units`);
}

/** The script of unit i of n, with `files`: one file each, in one folder. */
const scriptOf = (n, i) => `scripts/u${String(i + 1).padStart(Math.max(4, String(n).length), '0')}.sh`;

/**
 * N Command units running `true` in `waves` waves; unit j of wave k > 0 needs unit j (mod size) of
 * wave k - 1. `tags` (unit index → text) changes those units' command text: a new desired document.
 * `files`: each unit lists its own script under `spec.files` (its key covers that file's id).
 */
export function generateConfig(n, { waves = 4, tags = {}, files = false } = {}) {
  const width = Math.max(4, String(n).length);
  const name = (i) => `u${String(i + 1).padStart(width, '0')}`;
  const w = Math.min(waves, n);
  const per = Math.ceil(n / w);
  const docs = [`kind: Environment\nname: ${ENV_NAME}\n`];
  for (let i = 0; i < n; i++) {
    const wave = Math.floor(i / per);
    const lines = ['kind: Command', `name: ${name(i)}`];
    if (wave > 0) lines.push(`needs: [${name((wave - 1) * per + ((i - wave * per) % per))}]`);
    lines.push('spec:', tags[i] ? `  run: "true # ${tags[i]}"` : '  run: "true"');
    if (files) lines.push(`  files: [${scriptOf(n, i)}]`);
    docs.push(`${lines.join('\n')}\n`);
  }
  return docs.join('---\n');
}

// ---- statistics --------------------------------------------------------------------------------

export const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
};

/**
 * Machine noise of a median, from the samples' own spread: twice the standard error of the median
 * estimated robustly (1.4826 × MAD ≈ σ; SE(median) ≈ 1.2533 σ / √n). Zero for identical samples
 * (counts, bytes), so deterministic figures are judged exactly.
 */
export function noiseOf(xs) {
  if (xs.length < 2) return 0;
  const m = median(xs);
  const mad = median(xs.map((x) => Math.abs(x - m)));
  return (2 * 1.2533 * 1.4826 * mad) / Math.sqrt(xs.length);
}

/**
 * A verdict on samples against a target (`<=` or `<`): PASS when the median meets it; still PASS,
 * flagged `withinNoise`, when it misses by less than the noise; FAIL beyond that.
 */
export function judge(samples, target, op = '<=') {
  const value = median(samples);
  const noise = noiseOf(samples);
  const meets = (x) => (op === '<' ? x < target : x <= target);
  const verdict = meets(value) ? 'PASS' : meets(value - noise) ? 'PASS' : 'FAIL';
  return { value, noise, target, op, verdict, withinNoise: !meets(value) && verdict === 'PASS' };
}

export const round = (x, digits = 1) => {
  const f = 10 ** digits;
  return Math.round(x * f) / f;
};

/**
 * Interleaved sampling of several commands: one warm-up of each, then `n` rounds in alternating
 * order (A B C, C B A, A B C, …) so that drift of the machine hits every side alike. Returns each
 * command's samples, round by round.
 */
export function interleaved(n, fns, { warmup = 1 } = {}) {
  for (let i = 0; i < warmup; i++) for (const f of fns) f(true);
  const out = fns.map(() => []);
  for (let i = 0; i < n; i++) {
    const order = fns.map((_, k) => k);
    if (i % 2 === 1) order.reverse();
    for (const k of order) out[k].push(fns[k](false));
  }
  return out;
}

/** Paired A/B sampling (AB, BA, AB, …: interleaved); the ratio is taken pair by pair. */
export function paired(n, a, b, opts) {
  const [as, bs] = interleaved(n, [a, b], opts);
  return { a: as, b: bs, ratios: as.map((x, i) => x / bs[i]) };
}

// ---- output ------------------------------------------------------------------------------------

export function table(head, rows) {
  const cells = [head, ...rows].map((r) => r.map((c) => String(c ?? '')));
  const w = head.map((_, i) => Math.max(...cells.map((r) => r[i].length)));
  const num = head.map((_, i) => rows.length > 0 && rows.every((r) => /^[×≤<±~\d.,/–\s]+$/.test(String(r[i] ?? ''))));
  return cells
    .map((r) =>
      r
        .map((c, i) => (num[i] ? c.padStart(w[i]) : c.padEnd(w[i])))
        .join('  ')
        .trimEnd(),
    )
    .join('\n');
}

export function fmtBytes(b) {
  if (b === undefined || b === null || Number.isNaN(b)) return '–';
  if (b < 1024) return `${Math.round(b)} B`;
  if (b < 1024 * 1024) return `${round(b / 1024)} KiB`;
  return `${round(b / 1024 / 1024, 2)} MiB`;
}

export const log = (msg) => process.stderr.write(`${msg}\n`);
