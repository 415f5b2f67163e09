// Benchmarks the built CLI (dist/cli.js) on generated environments: wall time and process counts
// of a first reconcile, a no-op reconcile, status and plan, for N Command units in 4 waves; then,
// for the smallest N, the same read paths on a copy whose state refs got 1,000 more transitions of
// history, alternating with the original (they must not get slower: nyl reads tips, never history).
//
//   node scripts/bench.mjs [--sizes 100,1000] [--quick] [--repeat 5] [--history 1000] [--keep]
//
// Prints a table and writes .bench/results.json. Exits 1 when a check fails (a command exited
// non-zero, a no-op reconcile executed or wrote something, the history was not added).
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { benchRemote } from './bench-remote.mjs';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const BUILT = join(ROOT, 'dist', 'cli.js');
const OUT = join(ROOT, '.bench', 'results.json');
const ENV_NAME = 'bench';
const WAVES = 4;
const MAX_BUFFER = 256 * 1024 * 1024;

const HELP = `usage: node scripts/bench.mjs [options]

  --sizes LIST    unit counts to measure, comma-separated (default 100,1000)
  --quick         measure 100 units only
  --repeat N      samples of no-op reconcile, status and plan (default 5; the first reconcile runs once)
  --history N     transitions added to the state refs' history of the smallest size (default 1000, 0 skips)
  --keep          keep the temporary repositories and print where they are
  --no-remote     skip the remote part (smart HTTP and file:// round trips, takeover after a kill)
`;

const { values: opt } = parseArgs({
  options: {
    sizes: { type: 'string' },
    quick: { type: 'boolean' },
    repeat: { type: 'string' },
    history: { type: 'string' },
    keep: { type: 'boolean' },
    'no-remote': { type: 'boolean' },
    help: { type: 'boolean', short: 'h' },
  },
  strict: true,
});
if (opt.help) {
  process.stdout.write(HELP);
  process.exit(0);
}

function positiveInt(name, text, allowZero = false) {
  const n = Number(text);
  if (!Number.isInteger(n) || n < (allowZero ? 0 : 1)) {
    process.stderr.write(`--${name} ${text}: expected a ${allowZero ? 'non-negative' : 'positive'} integer\n`);
    process.exit(2);
  }
  return n;
}

const sizes = opt.quick
  ? [100]
  : (opt.sizes ?? '100,1000')
      .split(',')
      .filter(Boolean)
      .map((s) => positiveInt('sizes', s));
const repeat = positiveInt('repeat', opt.repeat ?? '5');
const historyDepth = positiveInt('history', opt.history ?? '1000', true);

// Children run with the operator's environment minus anything git- or nyl-specific, and without
// system/global git configuration, so the numbers do not depend on who runs the benchmark.
const childEnv = Object.fromEntries(
  Object.entries(process.env).filter(([k]) => !k.startsWith('GIT_') && !k.startsWith('NYL_')),
);
Object.assign(childEnv, { NYL_PROGRESS: '0', GIT_CONFIG_NOSYSTEM: '1', GIT_CONFIG_GLOBAL: os.devNull });

const temps = new Set();
function cleanup() {
  if (opt.keep) return;
  for (const d of temps) rmSync(d, { recursive: true, force: true });
  temps.clear();
}
for (const sig of ['SIGINT', 'SIGTERM']) {
  process.on(sig, () => {
    cleanup();
    process.exit(130);
  });
}

const failures = [];
function check(ok, what) {
  if (!ok) {
    failures.push(what);
    process.stderr.write(`CHECK FAILED: ${what}\n`);
  }
  return ok;
}

function git(cwd, args, input) {
  const r = spawnSync('git', args, { cwd, env: childEnv, input, encoding: 'utf8', maxBuffer: MAX_BUFFER });
  if (r.error) throw r.error;
  if (r.status !== 0) throw new Error(`git ${args.join(' ')} failed (exit ${r.status}): ${r.stderr}`);
  return r.stdout.trim();
}

/** One CLI invocation, timed from spawn to exit (node start-up included, as an operator sees it). */
function nyl(cwd, command) {
  const args = [CLI, command, '-e', ENV_NAME, '--local', '--json'];
  const t0 = performance.now();
  const r = spawnSync(process.execPath, args, { cwd, env: childEnv, encoding: 'utf8', maxBuffer: MAX_BUFFER });
  const ms = performance.now() - t0;
  if (r.error) throw r.error;
  let report;
  try {
    report = JSON.parse(r.stdout);
  } catch {
    throw new Error(`nyl ${command} printed no JSON (exit ${r.status}):\n${r.stderr.slice(0, 4000)}`);
  }
  return { ms, status: r.status, report };
}

function stateRefs(cwd) {
  return git(cwd, ['for-each-ref', '--format=%(objectname) %(refname)', `refs/nyl/${ENV_NAME}/`]);
}

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
};
const round = (x) => Math.round(x * 10) / 10;

function summarize(samples) {
  const ms = samples.map((s) => s.ms);
  const git = [...new Set(samples.map((s) => s.report.stats?.gitProcesses))];
  const tool = [...new Set(samples.map((s) => s.report.stats?.toolProcesses))];
  return {
    runs: samples.length,
    medianMs: round(median(ms)),
    minMs: round(Math.min(...ms)),
    maxMs: round(Math.max(...ms)),
    samplesMs: ms.map(round),
    gitProcesses: git.length === 1 ? git[0] : git,
    toolProcesses: tool.length === 1 ? tool[0] : tool,
  };
}

/** N units in WAVES waves; unit j of wave k > 0 needs unit j (mod size) of wave k - 1. */
function generateConfig(n) {
  const width = Math.max(4, String(n).length);
  const name = (i) => `u${String(i + 1).padStart(width, '0')}`;
  const waves = Math.min(WAVES, n);
  const per = Math.ceil(n / waves);
  const docs = [`kind: Environment\nname: ${ENV_NAME}\n`];
  for (let i = 0; i < n; i++) {
    const wave = Math.floor(i / per);
    const lines = ['kind: Command', `name: ${name(i)}`];
    if (wave > 0) {
      const prevStart = (wave - 1) * per;
      lines.push(`needs: [${name(prevStart + ((i - wave * per) % per))}]`);
    }
    lines.push('spec:', '  run: "true"');
    docs.push(`${lines.join('\n')}\n`);
  }
  return docs.join('---\n');
}

function setupRepo(dir, n) {
  git(dir, ['init', '-q', '-b', 'main']);
  git(dir, ['config', 'user.name', 'nyl bench']);
  git(dir, ['config', 'user.email', 'bench@localhost']);
  writeFileSync(join(dir, 'nyl.yaml'), generateConfig(n));
  git(dir, ['add', 'nyl.yaml']);
  git(dir, ['commit', '-q', '-m', `bench: ${n} units`]);
}

/** The first rows that did not go as expected, for the failure message. */
const describe = (rows, field = 'result') =>
  rows.length
    ? `: ${rows
        .slice(0, 3)
        .map((r) => `${r.unit} ${r[field]}${r.detail ? ` (${r.detail.split('\n')[0].slice(0, 120)})` : ''}`)
        .join('; ')}${rows.length > 3 ? '; …' : ''}`
    : '';

/** One sample of a read-only command: it must exit 0, report every unit current and write nothing. */
function sampleReadOnly(dir, n, command, label, field) {
  const before = stateRefs(dir);
  const s = nyl(dir, command);
  const after = stateRefs(dir);
  const rows = s.report.rows ?? [];
  check(s.status === 0 && s.report.exit === 0, `N=${n} ${label}: exit ${s.status} (report exit ${s.report.exit})`);
  check(rows.length === n, `N=${n} ${label}: ${rows.length} rows, expected ${n}`);
  const other = rows.filter((r) => r[field] !== 'current');
  check(!other.length, `N=${n} ${label}: ${other.length} unit(s) not ${field} "current"${describe(other, field)}`);
  check(before === after, `N=${n} ${label}: refs/nyl/${ENV_NAME}/* changed`);
  if (command === 'reconcile') check(s.report.run === undefined, `N=${n} ${label}: started run ${s.report.run}`);
  return s;
}

/**
 * No-op reconcile, status and plan in each target repository, `repeat` rounds interleaved (commands
 * and repositories) so that noise of the machine hits every figure alike. One result per target.
 */
function measureReadPaths(targets, n) {
  const kinds = [
    ['noop', 'reconcile', 'reconcile (no-op)', 'result'],
    ['status', 'status', 'status', 'state'],
    ['plan', 'plan', 'plan', 'result'],
  ];
  const observed = targets.map((t) => git(t.dir, ['rev-parse', `refs/nyl/${ENV_NAME}/observed`]));
  const samples = targets.map(() => Object.fromEntries(kinds.map(([k]) => [k, []])));
  for (let i = 0; i < repeat; i++)
    for (const [k, command, label, field] of kinds)
      targets.forEach((t, j) => {
        samples[j][k].push(sampleReadOnly(t.dir, n, command, `${label}${t.suffix ?? ''}`, field));
      });
  return targets.map((t, j) => {
    const after = git(t.dir, ['rev-parse', `refs/nyl/${ENV_NAME}/observed`]);
    check(
      observed[j] === after,
      `N=${n}${t.suffix ?? ''}: refs/nyl/${ENV_NAME}/observed moved from ${observed[j]} to ${after}`,
    );
    return Object.fromEntries(kinds.map(([k]) => [k, summarize(samples[j][k])]));
  });
}

/**
 * Stacks `depth` commits on each state ref in one `git fast-import`: every new commit keeps the
 * tip's tree (so the state nyl reads is unchanged) and the final tip descends from all of them.
 */
function addHistory(dir, depth) {
  const names = ['observed', 'desired', 'lease'];
  const refs = names.map((r) => `refs/nyl/${ENV_NAME}/${r}`);
  const tips = refs.map((r) => git(dir, ['rev-parse', `${r}^{commit}`]));
  const trees = refs.map((r) => git(dir, ['rev-parse', `${r}^{tree}`]));
  const counts = refs.map((r) => Number(git(dir, ['rev-list', '--count', r])));
  const t0 = performance.now();
  const base = Math.floor(Date.now() / 1000) - depth * 60;
  const parts = [];
  let mark = 0;
  refs.forEach((ref, k) => {
    for (let i = 1; i <= depth; i++) {
      mark++;
      const msg =
        names[k] === 'lease'
          ? `nyl: renew lease ${ENV_NAME} for bench-run-${i}\n`
          : `nyl: reconcile ${ENV_NAME} (bench transition ${i} of ${depth})\n\nrun: bench-run-${i}\n`;
      parts.push(
        `commit ${ref}\nmark :${mark}\ncommitter nyl bench <bench@localhost> ${base + i * 60} +0000\n`,
        `data ${Buffer.byteLength(msg)}\n${msg}\n`,
        i === 1 ? `from ${tips[k]}\n\n` : `from :${mark - 1}\n\n`,
      );
    }
  });
  git(dir, ['fast-import', '--quiet'], parts.join(''));
  const ms = performance.now() - t0;
  refs.forEach((r, k) => {
    check(git(dir, ['rev-parse', `${r}^{tree}`]) === trees[k], `history: tip tree of ${r} changed`);
    const c = Number(git(dir, ['rev-list', '--count', r]));
    check(c === counts[k] + depth, `history: ${r} has ${c} commits, expected ${counts[k] + depth}`);
  });
  return {
    depth,
    ms: round(ms),
    commits: Object.fromEntries(refs.map((r) => [r, Number(git(dir, ['rev-list', '--count', r]))])),
  };
}

function benchSize(n) {
  const dir = mkdtempSync(join(os.tmpdir(), `nyl-bench-${n}-`));
  temps.add(dir);
  process.stderr.write(`N=${n}: repository ${dir}\n`);
  setupRepo(dir, n);
  const result = { units: n, waves: Math.min(WAVES, n), repo: opt.keep ? dir : undefined };

  process.stderr.write(`N=${n}: first reconcile\n`);
  const first = nyl(dir, 'reconcile');
  const rows = first.report.rows ?? [];
  check(first.status === 0 && first.report.exit === 0, `N=${n} first reconcile: exit ${first.status}`);
  const notExecuted = rows.filter((r) => r.result !== 'executed');
  check(
    rows.length === n && !notExecuted.length,
    `N=${n} first reconcile: expected ${n} executed units, got ${rows.length - notExecuted.length}${describe(notExecuted)}`,
  );
  result.first = summarize([first]);

  process.stderr.write(`N=${n}: no-op reconcile, status, plan ×${repeat}\n`);
  Object.assign(result, measureReadPaths([{ dir }], n)[0]);
  return { dir, result };
}

function baseline() {
  const samples = [];
  for (let i = 0; i < repeat; i++) {
    const t0 = performance.now();
    const r = spawnSync(process.execPath, [CLI, '--version'], { env: childEnv, encoding: 'utf8' });
    samples.push(performance.now() - t0);
    check(r.status === 0, `nyl --version: exit ${r.status}`);
  }
  return { runs: samples.length, medianMs: round(median(samples)), samplesMs: samples.map(round) };
}

function table(head, rows) {
  const cells = [head, ...rows].map((r) => r.map(String));
  const w = head.map((_, i) => Math.max(...cells.map((r) => r[i].length)));
  const num = head.map((_, i) => rows.every((r) => /^[×\d./–]+$/.test(String(r[i]))));
  return cells
    .map((r) =>
      r
        .map((c, i) => (num[i] ? c.padStart(w[i]) : c.padEnd(w[i])))
        .join('  ')
        .trimEnd(),
    )
    .join('\n');
}

const f1 = (x) => x.toFixed(1);
const fmtProcs = (p) => (Array.isArray(p) ? p.join('/') : p);

// ---- run --------------------------------------------------------------------------------------

if (!existsSync(BUILT)) {
  process.stderr.write('dist/cli.js is missing: building it\n');
  const r = spawnSync(process.execPath, [join(ROOT, 'scripts', 'build.mjs')], { cwd: ROOT, stdio: 'inherit' });
  if (r.status !== 0) process.exit(r.status ?? 1);
}
// The bundle is self-contained: measure a copy, so a rebuild of dist/ during the run cannot mix versions.
const cliDir = mkdtempSync(join(os.tmpdir(), 'nyl-bench-cli-'));
process.on('exit', () => rmSync(cliDir, { recursive: true, force: true }));
const CLI = join(cliDir, 'cli.js');
// The whole bundle: cli.js imports its shared chunks.
cpSync(dirname(BUILT), cliDir, { recursive: true });
const cliSha256 = createHash('sha256').update(readFileSync(CLI)).digest('hex');

const started = performance.now();
const results = {
  meta: {
    date: new Date().toISOString(),
    node: process.version,
    git: git(ROOT, ['--version']).replace(/^git version /, ''),
    platform: `${os.platform()} ${os.release()} ${os.arch()}`,
    cpu: os.cpus()[0]?.model ?? 'unknown',
    cpus: os.cpus().length,
    cliSha256,
    distModified: (() => {
      try {
        return git(ROOT, ['status', '--porcelain', '--', 'dist/cli.js']) !== '';
      } catch {
        return undefined;
      }
    })(),
    nylCommit: (() => {
      try {
        return git(ROOT, ['rev-parse', 'HEAD']);
      } catch {
        return undefined;
      }
    })(),
    sizes,
    repeat,
    waves: WAVES,
    environment: ENV_NAME,
    timing: 'wall time from spawn to exit of `node dist/cli.js <command> -e bench --local --json`, ms',
  },
  baseline: undefined,
  sizes: [],
  history: undefined,
};

try {
  results.baseline = baseline();
  const smallest = Math.min(...sizes);
  for (const n of sizes) {
    const { dir, result } = benchSize(n);
    results.sizes.push(result);
    if (n === smallest && historyDepth > 0 && !results.history) {
      // A copy of the repository gets the history; both are measured in alternation, so the
      // comparison is not skewed by the machine getting busier or quieter in between.
      const hdir = mkdtempSync(join(os.tmpdir(), `nyl-bench-${n}-history-`));
      temps.add(hdir);
      cpSync(dir, hdir, { recursive: true });
      process.stderr.write(`N=${n}: adding ${historyDepth} transitions to the state refs' history of a copy\n`);
      const added = addHistory(hdir, historyDepth);
      process.stderr.write(`N=${n}: no-op reconcile, status, plan ×${repeat} without and with history\n`);
      const [withoutHistory, withHistory] = measureReadPaths(
        [
          { dir, suffix: ' without history' },
          { dir: hdir, suffix: ' with history' },
        ],
        n,
      );
      results.history = { units: n, ...added, repo: opt.keep ? hdir : undefined, withoutHistory, withHistory };
      if (!opt.keep) {
        rmSync(hdir, { recursive: true, force: true });
        temps.delete(hdir);
      }
    }
    if (!opt.keep) {
      rmSync(dir, { recursive: true, force: true });
      temps.delete(dir);
    }
  }
  if (!opt['no-remote']) {
    process.stderr.write('remote: reconcile, no-op and takeover over smart HTTP and file://\n');
    results.remote = await benchRemote({ cli: CLI, env: childEnv, check, repeat });
  }
} catch (e) {
  failures.push(String(e?.message ?? e));
  process.stderr.write(`${e?.stack ?? e}\n`);
} finally {
  cleanup();
}
results.totalMs = round(performance.now() - started);
results.failures = failures;

// ---- report -----------------------------------------------------------------------------------

const LABELS = { first: 'reconcile (first)', noop: 'reconcile (no-op)', status: 'status', plan: 'plan' };
const rows = [];
for (const s of results.sizes)
  for (const [k, label] of Object.entries(LABELS)) {
    const m = s[k];
    if (!m) continue;
    rows.push([
      s.units,
      label,
      m.runs,
      f1(m.medianMs),
      m.runs > 1 ? f1(m.minMs) : '–',
      m.runs > 1 ? f1(m.maxMs) : '–',
      fmtProcs(m.gitProcesses),
      fmtProcs(m.toolProcesses),
    ]);
  }
const out = [];
out.push(
  `nyl benchmark — node ${results.meta.node}, git ${results.meta.git}, ${results.meta.cpus} × ${results.meta.cpu}`,
  '',
);
if (results.baseline) out.push(`baseline \`node dist/cli.js --version\`: ${results.baseline.medianMs} ms (median)`, '');
out.push(table(['units', 'command', 'runs', 'median ms', 'min ms', 'max ms', 'git procs', 'tool procs'], rows));

if (results.sizes.length > 1) {
  const [a, b] = [results.sizes[0], results.sizes[results.sizes.length - 1]];
  const base = results.baseline?.medianMs ?? 0;
  const scale = [];
  for (const [k, label] of Object.entries(LABELS)) {
    if (!a[k] || !b[k]) continue;
    const excessA = Math.max(a[k].medianMs - base, 1);
    const excessB = Math.max(b[k].medianMs - base, 1);
    scale.push([
      label,
      `×${round(b[k].medianMs / a[k].medianMs)}`,
      `×${round(excessB / excessA)}`,
      `${f1(excessA / a.units)} → ${f1(excessB / b.units)}`,
    ]);
  }
  out.push(
    '',
    `scaling ${a.units} → ${b.units} units (×${round(b.units / a.units)}); "over baseline" subtracts node start-up and loading the CLI`,
    table(['command', 'time', 'time over baseline', 'ms/unit over baseline'], scale),
  );
}

if (results.history) {
  const h = results.history;
  const [a, b] = [h.withoutHistory, h.withHistory];
  const hist = [];
  for (const k of ['noop', 'status', 'plan'])
    hist.push([
      LABELS[k],
      f1(a[k].medianMs),
      f1(b[k].medianMs),
      fmtProcs(a[k].gitProcesses),
      fmtProcs(b[k].gitProcesses),
    ]);
  const commits = Object.entries(h.commits)
    .map(([r, c]) => `${r.split('/').pop()} ${c}`)
    .join(', ');
  out.push(
    '',
    `history independence: ${h.units} units, +${h.depth} transitions on observed, desired and lease (now ${commits} commits; added in ${h.ms} ms)`,
    table(['command', 'without ms', 'with ms', 'git procs without', 'git procs with'], hist),
  );
}

if (results.remote) {
  const r = results.remote;
  const rows = [];
  for (const [t, m] of Object.entries(r.transports))
    for (const [k, label] of [
      ['first', 'reconcile (first)'],
      ['noop', 'reconcile (no-op)'],
      ['leaseBreak', 'lease break'],
      ['takeover', 'reconcile (takeover)'],
    ])
      rows.push([
        t,
        label,
        f1(m[k].medianMs),
        m[k].roundTrips,
        t === 'http' ? m[k].httpRequests : '–',
        m[k].gitProcesses,
      ]);
  out.push(
    '',
    `remote: ${r.units} units in ${r.waves} waves; takeover after SIGKILL of the runner during wave 2 (round trips: nyl's count; HTTP requests: what the server saw)`,
    table(['remote', 'command', 'median ms', 'round trips', 'HTTP requests', 'git procs'], rows),
  );
}

mkdirSync(dirname(OUT), { recursive: true });
writeFileSync(OUT, `${JSON.stringify(results, null, 2)}\n`);
out.push('', `total ${round(results.totalMs / 1000)} s; results written to ${relative(process.cwd(), OUT) || OUT}`);
if (failures.length) out.push('', `${failures.length} check(s) failed:`, ...failures.map((f) => `  - ${f}`));
else out.push('all checks passed: exits 0, no-op reconciles reported every unit current and wrote no ref');
process.stdout.write(`${out.join('\n')}\n`);
process.exit(failures.length ? 1 : 0);
