// `npm run bench`: the performance targets of issue 15 (and issue 13's history rows), each row
// measured against its floor in the same run (paired A/B samples, medians, noise from the spread),
// then the cost of each command on a runner (round trips, bytes, processes). docs/performance.md
// explains every row, its floor and its target.
//
//   node scripts/bench.mjs [--quick] [--check] [--repeat N] [--only LIST] [--history N] …
//
// Prints the table on stdout (progress on stderr) and writes .bench/results.json. Exits 1 when a
// sanity check fails (a command failed, a read-only command wrote); with --check also when a row
// misses its target by more than the machine's noise.
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { cpSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { dirname, join, relative, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { benchPostStep } from './bench-action.mjs';
import { benchDeployments, SCENARIOS as DEPLOYMENT_SCENARIOS } from './bench-deployments.mjs';
import {
  baselineCli,
  benchFirstReconcile,
  benchPeakRss,
  firstReconcile,
  firstReconcileTools,
  ISSUE_BASELINE,
} from './bench-first.mjs';
import { benchHistory } from './bench-history.mjs';
import { benchLeaseWait } from './bench-lease-row.mjs';
import {
  cleanupTemps,
  dropTemp,
  ENV_NAME,
  fmtBytes,
  git,
  judge,
  keepTemporaries,
  log,
  median,
  paired,
  ROOT,
  round,
  table,
  tempDir,
  timed,
} from './bench-lib.mjs';
import { benchLocalSizes } from './bench-local.mjs';
import { startRemoteServer } from './bench-net.mjs';
import { benchObjects, GC_AUTO_PACKS } from './bench-objects.mjs';
import {
  benchRemoteReads,
  benchTakeover,
  freshClone,
  publish,
  pushFloor,
  remoteTools,
  urlOf,
} from './bench-remote.mjs';
import { benchSite, SITE_TARGETS } from './bench-site.mjs';
import { benchTerraform } from './bench-tf.mjs';

const BUILT = join(ROOT, 'dist', 'cli.js');
const DEFAULT_OUT = join(ROOT, '.bench', 'results.json');
const ALL_ROWS = ['1', '2', '3', '4', '5', '6', '7', '8', '9', '10', '11', '12'];

const HELP = `usage: node scripts/bench.mjs [options]    (npm run bench -- [options])

Measures the targets of docs/performance.md, each as a ratio to its floor measured in the same run.

  --check          exit 1 when a row misses its target by more than the machine's noise
  --quick          a fast subset for development: smaller sizes and fewer samples (see the page)
  --repeat N       pairs of each timed comparison (default 5, --quick 3)
  --only LIST      rows to measure, comma-separated (default all: ${ALL_ROWS.join(',')}); e.g. --only 1,6
                   (10: terraform processes of plan and reconcile --plan; 11: GitHub API calls of deployments: true;
                   12: nyl site against nyl runs of every environment)
  --history N      transitions of the long history of rows 2 and 8 (default 10000, --quick 1000; 0 skips them)
  --rss-samples N  first reconciles of 5,000 units for row 7 (default 1; each takes a while)
  --no-remote      skip what needs a remote (rows 1, 2, 8, 9 and the takeover story)
  --baseline REV   the build row 4 is judged against, side by side (default the issue's, ${ISSUE_BASELINE.rev.slice(0, 7)}; none: judge ms/unit alone)
  --sizes LIST     also print the local scaling table of earlier versions at these unit counts (e.g. 100,1000)
  --keep           keep the temporary repositories and print where they are
  --out FILE       where to write every sample as JSON (default .bench/results.json)
  -h, --help       this text
`;

function fail(msg) {
  process.stderr.write(`bench: ${msg}\n`);
  process.exit(2);
}

let opt;
try {
  ({ values: opt } = parseArgs({
    options: {
      check: { type: 'boolean' },
      quick: { type: 'boolean' },
      repeat: { type: 'string' },
      only: { type: 'string' },
      history: { type: 'string' },
      'rss-samples': { type: 'string' },
      'no-remote': { type: 'boolean' },
      sizes: { type: 'string' },
      baseline: { type: 'string' },
      keep: { type: 'boolean' },
      out: { type: 'string' },
      help: { type: 'boolean', short: 'h' },
    },
    strict: true,
  }));
} catch (e) {
  fail(`${e.message}\n${HELP}`);
}
if (opt.help) {
  process.stdout.write(HELP);
  process.exit(0);
}

function int(name, text, min) {
  const n = Number(text);
  if (!Number.isInteger(n) || n < min) fail(`--${name} ${text}: expected an integer ≥ ${min}`);
  return n;
}

const quick = !!opt.quick;
const repeat = int('repeat', opt.repeat ?? (quick ? '3' : '5'), 1);
const historyDepth = int('history', opt.history ?? (quick ? '1000' : '10000'), 0);
const rssSamples = int('rss-samples', opt['rss-samples'] ?? '1', 1);
const only = new Set((opt.only ?? ALL_ROWS.join(',')).split(',').filter(Boolean));
for (const r of only)
  if (!ALL_ROWS.includes(r)) fail(`--only ${opt.only}: unknown row ${r} (rows: ${ALL_ROWS.join(', ')})`);
const sizes = opt.sizes ? opt.sizes.split(',').map((s) => int('sizes', s, 1)) : [];
const remote = !opt['no-remote'];
if (opt.keep) keepTemporaries(true);
const OUT = opt.out ? resolve(opt.out) : DEFAULT_OUT;
const baselineRev = opt.baseline ?? ISSUE_BASELINE.rev;

const SIZES = {
  readUnits: 1000, // row 1
  firstUnits: 1000, // row 4
  firstSamples: quick ? 1 : 3,
  rssUnits: 5000, // row 7
  historyUnits: 100, // rows 2 and 8
  historySmall: 10,
  historyPairs: Math.min(repeat, 3), // a fresh clone after 10,000 transitions fetches for seconds today
  objectUnits: 30, // row 3
  transitions: quick ? 10 : 40,
  postSamples: repeat * 2,
  leaseSamples: quick ? 2 : 3, // each waits out a hold of 1.5–8 s (random) or 2 × ~4 s (repeat), per transport
  leaseScenarios: quick ? ['random'] : ['random', 'repeat'],
  tfUnits: 20, // row 10
  tfChanged: 2,
  tfRounds: quick ? Math.min(repeat, 2) : repeat, // each: a commit changing 2 units, plan, reconcile --plan
  siteEnvs: quick ? 3 : 5, // row 12: environments × units × runs of history each
  siteUnits: quick ? 10 : 50,
  siteRuns: quick ? 60 : 500,
};

for (const sig of ['SIGINT', 'SIGTERM'])
  process.on(sig, () => {
    cleanupTemps();
    process.exit(130);
  });

const failures = [];
function check(ok, what) {
  if (!ok) {
    failures.push(what);
    process.stderr.write(`CHECK FAILED: ${what}\n`);
  }
  return ok;
}

// ---- the CLI under test ------------------------------------------------------------------------

if (!existsSync(BUILT)) {
  log('dist/cli.js is missing: building it');
  const r = spawnSync(process.execPath, [join(ROOT, 'scripts', 'build.mjs')], { cwd: ROOT, stdio: 'inherit' });
  if (r.status !== 0) process.exit(r.status ?? 1);
}
// The bundles are self-contained: measure a copy, so a rebuild of dist/ during the run cannot mix versions.
const cliDir = tempDir('cli');
cpSync(dirname(BUILT), cliDir, { recursive: true });
const CLI = join(cliDir, 'cli.js');
const tools = firstReconcileTools();
const ctx = {
  cli: CLI,
  cliDir,
  tools,
  remoteTools: remoteTools(tools.dir),
  tmp: tools.dir,
  repeat,
  envName: ENV_NAME,
  check,
  drop: dropTemp,
  root: undefined,
  server: undefined,
};

const tryGit = (args) => {
  try {
    return git(ROOT, args);
  } catch {
    return undefined;
  }
};
const results = {
  meta: {
    date: new Date().toISOString(),
    node: process.version,
    git: git(ROOT, ['--version']).replace(/^git version /, ''),
    platform: `${os.platform()} ${os.release()} ${os.arch()}`,
    cpu: os.cpus()[0]?.model ?? 'unknown',
    cpus: os.cpus().length,
    loadavg: os.loadavg(),
    cliSha256: createHash('sha256').update(readFileSync(CLI)).digest('hex'),
    distModified: tryGit(['status', '--porcelain', '--', 'dist']) !== '',
    nylCommit: tryGit(['rev-parse', 'HEAD']),
    options: { quick, check: !!opt.check, repeat, history: historyDepth, rssSamples, only: [...only], remote, sizes },
    sizes: SIZES,
    timing: 'wall time from spawn to exit of each process, ms; ratios pair by pair (A/B alternating)',
  },
  floors: {},
  sectionsMs: {},
  rows: [],
  details: {},
};
const D = results.details;

// ---- measure -----------------------------------------------------------------------------------

const started = performance.now();
const want = (r) => only.has(r);
/** One part of the run: a failure is recorded and the next part still runs. */
async function section(name, fn) {
  const t0 = performance.now();
  try {
    await fn();
  } catch (e) {
    failures.push(`${name}: ${e?.message ?? e}`);
    process.stderr.write(`${name}: ${e?.stack ?? e}\n`);
  } finally {
    results.sectionsMs[name] = round(performance.now() - t0);
    log(`${name}: ${round(results.sectionsMs[name] / 1000)} s`);
  }
}
async function server() {
  if (!ctx.server) {
    ctx.root = tempDir('remotes');
    ctx.server = await startRemoteServer(ctx.root);
  }
}

try {
  await section('floors', () => {
    // Node start-up and the bundle loaded: the fixed part of every command.
    const p = paired(
      repeat,
      () => timed(process.execPath, [CLI, '--version']).ms,
      () => timed(process.execPath, ['-e', '0']).ms,
    );
    results.floors.nodeStartMs = median(p.b);
    results.floors.nylVersionMs = median(p.a);
  });
  if (want('6'))
    await section('row 6', async () => (D.post = await benchPostStep(ctx, { samples: SIZES.postSamples })));

  let readsSource;
  if (want('4') || want('3'))
    await section('row 4', () => {
      const base = want('4') && baselineRev !== 'none' ? baselineCli(baselineRev) : { why: '--baseline none' };
      D.baseline = { rev: baselineRev, why: base.why };
      D.first = benchFirstReconcile(ctx, { units: SIZES.firstUnits, samples: SIZES.firstSamples, baseline: base.cli });
      readsSource = D.first.runs[0].dir;
      for (const r of D.first.runs) {
        if (r.dir !== readsSource) dropTemp(r.dir);
        delete r.dir;
      }
      results.floors.bashPerUnitMs = median(D.first.floorPerUnitMs);
    });
  if (remote && want('1'))
    await section('row 1', async () => {
      await server();
      if (!readsSource) {
        log(`remote: a first reconcile of ${SIZES.readUnits} units to read (not timed)`);
        readsSource = firstReconcile(ctx, SIZES.readUnits, 'first reconcile').dir;
      }
      D.remoteReads = benchRemoteReads(ctx, { src: readsSource, units: SIZES.readUnits, transports: ['http', 'file'] });
      results.floors.fetchMs = Object.fromEntries(
        Object.entries(D.remoteReads.transports).map(([t, x]) => [
          t,
          median(Object.values(x.commands).flatMap((c) => c.floorMs)),
        ]),
      );
      // The floor of a write, for reference: one atomic push of two refs.
      results.floors.pushMs = {};
      for (const transport of ['http', 'file']) {
        const name = `push-floor-${transport}`;
        const bare = publish(readsSource, ctx.root, name);
        const clone = freshClone(bare, urlOf(ctx.server, bare, transport, name), name);
        results.floors.pushMs[transport] = median(pushFloor(clone, repeat));
        dropTemp(clone);
      }
    });
  if (readsSource) dropTemp(readsSource);
  if (remote && want('9'))
    await section('row 9', async () => {
      await server();
      log(`remote: a first reconcile of ${SIZES.readUnits} units with files: to read (not timed)`);
      const src = firstReconcile(ctx, SIZES.readUnits, 'first reconcile (files)', { files: true }).dir;
      try {
        D.remoteReadsFiles = benchRemoteReads(ctx, {
          src,
          units: SIZES.readUnits,
          transports: ['file'],
          label: 'reads-files',
        });
      } finally {
        dropTemp(src);
      }
    });

  if (remote && historyDepth > 0 && (want('2') || want('8')))
    await section('rows 2 and 8', async () => {
      await server();
      const src = firstReconcile(ctx, SIZES.historyUnits, 'first reconcile (history source)');
      try {
        D.history = benchHistory(ctx, {
          src: src.dir,
          small: SIZES.historySmall,
          big: historyDepth,
          pairs: SIZES.historyPairs,
        });
      } finally {
        dropTemp(src.dir);
      }
    });
  if (want('3'))
    await section('row 3', () => {
      D.objects = benchObjects(ctx, { units: SIZES.objectUnits, transitions: SIZES.transitions });
    });
  if (want('10'))
    await section('row 10', () => {
      D.terraform = benchTerraform(ctx, { units: SIZES.tfUnits, changed: SIZES.tfChanged, rounds: SIZES.tfRounds });
      if (D.terraform.rounds) results.floors.terraformPlanMs = median(D.terraform.rounds.map((r) => r.floorMs / 2));
    });
  if (want('11'))
    await section('row 11', async () => {
      D.deployments = await benchDeployments(ctx);
    });
  if (want('12'))
    await section('row 12', () => {
      D.site = benchSite(ctx, { envs: SIZES.siteEnvs, units: SIZES.siteUnits, runs: SIZES.siteRuns, pairs: repeat });
    });
  if (want('5'))
    await section('row 5', () => {
      D.leaseWait = benchLeaseWait(ctx, { samples: SIZES.leaseSamples, scenarios: SIZES.leaseScenarios });
    });
  if (remote && !quick && !opt.only)
    await section('takeover', async () => {
      await server();
      D.takeover = await benchTakeover(ctx, { transports: ['http', 'file'] });
    });
  if (want('7') && !quick)
    await section('row 7', () => {
      D.rss = benchPeakRss(ctx, { units: SIZES.rssUnits, samples: rssSamples });
    });
  if (sizes.length)
    await section('--sizes', () => {
      D.local = benchLocalSizes(ctx, { sizes });
    });
} finally {
  await ctx.server?.close();
  cleanupTemps();
}
results.totalMs = round(performance.now() - started);

// ---- rows --------------------------------------------------------------------------------------

const f2 = (x) => (x === undefined || Number.isNaN(x) ? '–' : x.toFixed(2));
const FORMATS = {
  ratio: (x) => `×${f2(x)}`,
  msPerUnit: (x) => `${f2(x)} ms/unit`,
  ms: (x) => `${Math.round(x)} ms`,
  mb: (x) => `${round(x)} MB`,
  count: (x) => `${round(x, 1)}`,
  kb: (x) => `${Math.round(x)} KB`,
};
const NOISE = {
  ratio: f2,
  msPerUnit: f2,
  ms: (x) => String(Math.round(x)),
  mb: (x) => String(round(x)),
  count: (x) => String(round(x)),
  kb: (x) => String(Math.round(x)),
};

function addRow(id, what, samples, target, { op = '<=', format = 'ratio', detail = '', force } = {}) {
  if (!samples?.length) return skipRow(id, what, 'no samples (an earlier step failed)', { target, op, format });
  // '=': an exact count (too few is as wrong as too many); every sample must be the target.
  const j = judge(samples, target, op === '=' ? '<=' : op);
  if (op === '=')
    Object.assign(j, { op }, samples.some((x) => x !== target) && { verdict: 'FAIL', withinNoise: false });
  if (force) Object.assign(j, { verdict: force, withinNoise: false });
  results.rows.push({ id, what, format, samples, ...j, detail });
}
function skipRow(id, what, reason, { target, op = '<=', format = 'ratio' } = {}) {
  results.rows.push({ id, what, format, target, op, verdict: 'SKIP', reason });
}
const skipReason = (r) =>
  !remote && ['1', '2', '8'].includes(r)
    ? '--no-remote'
    : historyDepth === 0 && ['2', '8'].includes(r)
      ? '--history 0'
      : quick && r === '7'
        ? '--quick (a 5,000-unit first reconcile takes minutes)'
        : 'not measured (an earlier step failed)';
const ms = (xs) => `${Math.round(median(xs))} ms`;
const costText = (c) =>
  c
    ? [
        `${c.roundTrips} round trip(s)`,
        c.httpRequests !== undefined
          ? `${c.httpRequests} HTTP requests, ${fmtBytes(c.bytesDown)} down, ${fmtBytes(c.bytesUp)} up`
          : undefined,
        `${c.objectsReceived} objects received`,
        `git processes ${c.nylGitProcesses} started by nyl, ${c.gitProcesses} in all`,
        `${c.toolProcesses} tool processes`,
      ]
        .filter(Boolean)
        .join(', ')
    : '';

// 1. no-op reads against a remote.
if (want('1')) {
  const x = D.remoteReads;
  for (const transport of ['http', 'file'])
    for (const command of ['reconcile', 'status', 'plan']) {
      const what = `no-op ${command}, ${SIZES.readUnits} units, ${transport === 'http' ? 'smart HTTP' : 'file://'} ÷ (node + git fetch)`;
      const c = x?.transports[transport]?.commands[command];
      if (!c) skipRow(`1`, what, skipReason('1'), { target: 2.5 });
      else
        addRow('1', what, c.ratios, 2.5, {
          detail: `${ms(c.ms)} against ${ms(c.floorMs)}; ${costText(c.cost)}`,
        });
    }
  // Not a target: the same status with the derived cache off, as the first command after a change.
  for (const transport of ['http', 'file']) {
    const u = x?.transports[transport]?.uncached;
    const what = `(info) no-op status, cache off, ${transport === 'http' ? 'smart HTTP' : 'file://'} ÷ (node + git fetch)`;
    if (u) addRow('1', what, u.ratios, 2.5, { detail: `${ms(u.ms)} against ${ms(u.floorMs)}`, force: 'INFO' });
  }
}

// 9. the same no-op reads of units keyed by their files (each lists its own script in spec.files).
if (want('9')) {
  for (const command of ['reconcile', 'status', 'plan']) {
    const what = `no-op ${command}, ${SIZES.readUnits} Command units with files:, file:// ÷ (node + git fetch)`;
    const c = D.remoteReadsFiles?.transports.file?.commands[command];
    if (!c) skipRow('9', what, !remote ? '--no-remote' : 'not measured (an earlier step failed)', { target: 2.5 });
    else addRow('9', what, c.ratios, 2.5, { detail: `${ms(c.ms)} against ${ms(c.floorMs)}; ${costText(c.cost)}` });
  }
}

// 2. bytes a fresh clone fetches for status, long history against short.
if (want('2')) {
  const h = D.history;
  const what = `bytes a fresh clone fetches for status, after ${historyDepth} ÷ after ${SIZES.historySmall} transitions`;
  if (!h) skipRow('2', what, skipReason('2'), { target: 1.5 });
  else
    addRow('2', what, h.status.bytesRatios, 1.5, {
      detail: `${fmtBytes(median(h.status.big.map((s) => s.bytesDown)))} after ${historyDepth}, ${fmtBytes(median(h.status.small.map((s) => s.bytesDown)))} after ${SIZES.historySmall} (${SIZES.historyUnits} units, smart HTTP)`,
    });
}

// 3. objects.
if (want('3')) {
  const o = D.objects;
  const f = D.first;
  if (!o) for (const id of ['3']) skipRow(id, 'objects written per transition', skipReason('3'), { target: 1.2 });
  else {
    addRow(
      '3',
      `objects written per transition ÷ objects it leaves reachable (${o.units} units)`,
      o.writtenPerReachable,
      1.2,
      {
        detail: `${median(o.writtenPerTransition)} written (${median(o.loosePerTransition)} as loose files), ${median(o.reachablePerTransition)} reachable; ${o.gcTransitions} transition(s) ran a gc`,
      },
    );
    addRow('3', 'loose files written per transition', o.loosePerTransition, 0, { format: 'count' });
    // nyl's own loose files only: the bench's `git commit` of each transition writes loose objects too.
    const growth = o.per.slice(o.half.transitions).reduce((n, p) => n + Math.max(0, p.loose), 0);
    addRow(
      '3',
      `loose files nyl added in transitions ${o.half.transitions + 1}–${o.end.transitions} (bounded: none)`,
      [growth],
      0,
      {
        format: 'count',
        detail: `loose files in the repository (the bench's commits included) ${o.half.loose} after ${o.half.transitions}, ${o.end.loose} after ${o.end.transitions} transitions; ${o.end.reachable} objects reachable`,
      },
    );
    addRow('3', `packs after ${o.end.transitions} transitions (≤ gc.autoPackLimit)`, [o.end.packs], GC_AUTO_PACKS, {
      format: 'count',
      detail: `${o.end.packs} packs, ${o.end.inPack} objects in packs, ${o.end.loose} loose`,
    });
  }
  if (f)
    addRow(
      '3',
      `loose files after a ${f.units}-unit first reconcile`,
      f.runs.map((r) => r.looseWritten),
      0,
      {
        format: 'count',
        detail: `${median(f.runs.map((r) => r.objectsWritten))} objects written, ${median(f.runs.map((r) => r.packsWritten))} packs`,
      },
    );
  else if (want('4'))
    skipRow('3', 'loose files after a first reconcile', skipReason('4'), { target: 0, format: 'count' });
}

// 4. first reconcile per unit: side by side with the issue's code when this clone has it (the
// issue's ~7 → ≤ 3 ms/unit as a ratio, which carries across machines), and the absolute figure.
if (want('4')) {
  const f = D.first;
  const what = `first reconcile, ${SIZES.firstUnits} units (run: "true"), ms per unit`;
  const sideBySide = `first reconcile, ${SIZES.firstUnits} units: time ÷ the issue's code's (${D.baseline?.rev.slice(0, 7) ?? '–'}), side by side`;
  const share = ISSUE_BASELINE.targetMs / ISSUE_BASELINE.thenMs;
  const floorText =
    f &&
    `floor (node spawning bash -c true, 4 at a time) ${f2(median(f.floorPerUnitMs))} ms/unit: ×${f2(median(f.ratios))} the floor`;
  const runText =
    f &&
    `peak RSS ${round(median(f.runs.map((r) => r.rssMiB)) * 1.048576)} MB; ${f.runs[0].gitProcesses} git processes, ${f.runs[0].toolProcesses} tool processes`;
  if (!f) skipRow('4', what, skipReason('4'), { target: 3, format: 'msPerUnit' });
  else if (f.baselineRatios) {
    const here = median(f.baselinePerUnitMs) * share;
    addRow('4', sideBySide, f.baselineRatios, share, {
      detail: `the issue's code took ${f2(median(f.baselinePerUnitMs))} ms/unit here (~${ISSUE_BASELINE.thenMs} on the issue's machine): its target of ${ISSUE_BASELINE.targetMs} ms/unit is ${f2(here)} ms/unit on this machine`,
    });
    addRow('4', what, f.perUnitMs, ISSUE_BASELINE.targetMs, {
      format: 'msPerUnit',
      force: 'INFO',
      detail: `${floorText}; ${runText}; judged by the line above (the target is ${f2(here)} ms/unit on this machine)`,
    });
  } else {
    if (D.baseline?.why) log(`row 4: not side by side: ${D.baseline.why}`);
    addRow('4', what, f.perUnitMs, ISSUE_BASELINE.targetMs, {
      format: 'msPerUnit',
      detail: `${floorText}; ${runText}; not side by side with the issue's code (${D.baseline?.why ?? 'not measured'})`,
    });
  }
}

// 5. lease wait, per scenario (random holds; the same deploy again) and transport.
if (want('5')) {
  const l = D.leaseWait;
  const transportName = (t) => (t === 'http' ? 'smart HTTP' : t === 'file' ? 'file://' : t);
  const what = (t) =>
    `lease wait, release → waiter holds it${t ? ` (${[t.scenario, transportName(t.transport)].filter(Boolean).join(', ')})` : ''}, at ≤ 0.5 polls/s`;
  if (!l || l.skipped) skipRow('5', what(), l?.skipped ?? skipReason('5'), { target: 1000, format: 'ms' });
  else
    for (const t of l.rows) {
      const tooFast = t.pollsPerSecond !== undefined && t.pollsPerSecond > 0.5;
      addRow('5', what(t), t.samplesMs, 1000, {
        format: 'ms',
        force: tooFast ? 'FAIL' : undefined,
        detail: `${t.pollsPerSecond !== undefined ? `${f2(t.pollsPerSecond)} polls/s while waiting` : 'poll rate not reported'}${t.httpRequestsPerSecond !== undefined ? ` (${f2(t.httpRequestsPerSecond)} HTTP requests/s)` : ''}${tooFast ? '; over 0.5 polls/s: FAIL' : ''}`,
      });
    }
}

// 6. the action's post step.
if (want('6')) {
  const p = D.post;
  const what = 'action post step cold start ÷ hello-world @actions/core bundle';
  if (!p) skipRow('6', what, skipReason('6'), { target: 1.2 });
  else addRow('6', what, p.ratios, 1.2, { detail: `${ms(p.ms)} against ${ms(p.floorMs)}` });
}

// 7. peak RSS.
if (want('7')) {
  const r = D.rss;
  const what = `peak RSS of a ${SIZES.rssUnits}-unit first reconcile`;
  if (!r) skipRow('7', what, skipReason('7'), { target: 200, op: '<', format: 'mb' });
  else
    addRow(
      '7',
      what,
      r.rssMiB.map((x) => x * 1.048576),
      200,
      {
        op: '<',
        format: 'mb',
        detail: `nyl --version alone ${round(r.idleMiB * 1.048576)} MB; the run took ${ms(r.runs.map((x) => x.ms))} (${f2(median(r.runs.map((x) => x.perUnitMs)))} ms/unit)`,
      },
    );
}

// 8. history: runs --limit 20, and status unchanged by history.
if (want('8')) {
  const h = D.history;
  const runsWhat = `nyl runs --limit 20 in a fresh clone, after ${historyDepth} ÷ after ${SIZES.historySmall} transitions`;
  const statusWhat = `status in a fresh clone, after ${historyDepth} ÷ after ${SIZES.historySmall} transitions`;
  if (!h) {
    skipRow('8', runsWhat, skipReason('8'), { target: 1.5 });
    skipRow('8', statusWhat, skipReason('8'), { target: 1.1 });
  } else {
    if (h.runs.skipped) skipRow('8', runsWhat, h.runs.skipped, { target: 1.5 });
    else
      addRow('8', runsWhat, h.runs.timeRatios, 1.5, {
        detail: `${ms(h.runs.big.map((s) => s.ms))} against ${ms(h.runs.small.map((s) => s.ms))}; ${fmtBytes(median(h.runs.big.map((s) => s.bytesDown)))} fetched after ${historyDepth}`,
      });
    addRow('8', statusWhat, h.status.timeRatios, 1.1, {
      detail: `${ms(h.status.big.map((s) => s.ms))} against ${ms(h.status.small.map((s) => s.ms))} (${SIZES.historyUnits} units, smart HTTP, fetch included)`,
    });
  }
}

// 10. Terraform processes of `nyl plan` and `nyl reconcile --plan TOKEN`, 2 of 20 units changed.
if (want('10')) {
  const t = D.terraform;
  const n = SIZES.tfChanged;
  const scene = `${n} of ${SIZES.tfUnits} Terraform units changed`;
  if (!t || t.skipped) {
    const reason = t?.skipped ?? skipReason('10');
    skipRow('10', `terraform processes of nyl plan and reconcile --plan, ${scene}`, reason, {
      target: n,
      op: '=',
      format: 'count',
    });
  } else {
    const rs = t.rounds;
    const sub = (c, s) => c.total[s] ?? 0;
    const totals = (c) =>
      Object.entries(c.total)
        .map(([s, x]) => `${s} ${x}`)
        .join(', ') || 'none';
    const perRound = (pick) => rs.map((r) => `${r.changed.join('+')}: ${totals(r[pick].counts)}`).join('; ');
    const timing = (pick) =>
      `${ms(rs.map((r) => r[pick].ms))} against ${ms(rs.map((r) => r.floorMs))} (terraform plan of an unchanged module, run directly, × ${n})`;
    const planDev = rs.flatMap((r) => r.plan.deviations);
    const recDev = rs.flatMap((r) => r.reconcile.deviations);
    addRow(
      '10',
      `nyl plan, ${scene}: terraform plan processes (= changed units)`,
      rs.map((r) => sub(r.plan.counts, 'plan')),
      n,
      {
        op: '=',
        format: 'count',
        force: planDev.length ? 'FAIL' : undefined,
        detail: `per round ${perRound('plan')}${planDev.length ? `; not as expected (init, plan, show once per changed unit, no apply): ${planDev.join('; ')}` : ''}`,
      },
    );
    addRow(
      '10',
      `terraform processes for the ${SIZES.tfUnits - n} unchanged units, in nyl plan and reconcile --plan`,
      rs.map((r) => r.plan.others + r.reconcile.others),
      0,
      {
        format: 'count',
        detail: `${rs.length} round(s), ${rs.length * (SIZES.tfUnits - n)} unchanged units each time`,
      },
    );
    const perUnit = (s) => rs.flatMap((r) => r.changed.map((u) => r.reconcile.counts.byUnit[u]?.[s] ?? 0));
    addRow('10', `nyl reconcile --plan <token>: terraform plan processes per changed unit`, perUnit('plan'), 1, {
      op: '=',
      format: 'count',
      detail: `per round ${perRound('reconcile')}${recDev.length ? `; not as expected: ${recDev.join('; ')}` : ''}`,
    });
    // An apply given no saved plan plans again inside: not one plan per unit, whatever the counts.
    const unsaved = rs.reduce((x, r) => x + r.reconcile.counts.applyWithoutPlanFile, 0);
    addRow('10', `nyl reconcile --plan <token>: terraform apply processes per changed unit`, perUnit('apply'), 1, {
      op: '=',
      format: 'count',
      force: unsaved ? 'FAIL' : undefined,
      detail: `${unsaved ? `${unsaved} apply process(es) given no saved plan (they plan again): FAIL` : 'each applies a saved plan file (its last argument)'}; the token of nyl plan: ${rs[0].token}`,
    });
    addRow(
      '10',
      `(info) nyl plan ÷ ${n} × terraform plan of an unchanged module`,
      rs.map((r) => r.plan.ms / r.floorMs),
      undefined,
      {
        force: 'INFO',
        detail: `${timing('plan')}; the commands nyl runs per unit here (init, plan -out, show -json), run directly for ${n} modules in turn: ${ms(rs.map((r) => r.sessionMs))}`,
      },
    );
    addRow(
      '10',
      `(info) nyl reconcile --plan ÷ ${n} × terraform plan of an unchanged module`,
      rs.map((r) => r.reconcile.ms / r.floorMs),
      undefined,
      {
        force: 'INFO',
        detail: `${timing('reconcile')}; terraform ${t.terraform}; the first reconcile of ${t.units} units (set-up) took ${ms([t.setup.ms])}`,
      },
    );
  }
}

// 11. GitHub API calls of the reconcile action with `deployments: true` (issue 27), per scenario.
if (want('11')) {
  const g = D.deployments;
  const callsText = (xs) => xs.join(', ') || 'none';
  for (const s of DEPLOYMENT_SCENARIOS) {
    const what = `reconcile action, deployments: true, ${s.what}: Deployments API calls`;
    const r = g?.scenarios?.[s.key];
    if (!r) {
      skipRow('11', what, skipReason('11'), { target: s.expected.length, op: '=', format: 'count' });
      continue;
    }
    const wrongOrder = r.deploymentCalls.join() !== s.expected.join();
    const wrongShown = r.deployed !== r.expectedDeployed;
    addRow('11', what, [r.deploymentCalls.length], s.expected.length, {
      op: '=',
      format: 'count',
      force: wrongOrder || wrongShown || r.postDeploymentCalls.length ? 'FAIL' : undefined,
      detail: [
        `run ${r.runId} attempt ${r.attempt} (${r.result}): ${callsText(r.deploymentCalls)}${wrongOrder ? ` — expected ${callsText(s.expected)}: FAIL` : ''}`,
        `outside Deployments: ${callsText(r.otherCalls)}${r.otherCalls.includes('jobs') ? " (jobs = the Actions API's jobs of the run attempt, which any reconcile with a token asks)" : ''}`,
        `post step: ${callsText(r.postCalls)}`,
        r.created.length
          ? `deployment ${r.created.map((d) => `${d.id} ${d.statuses.join('→')}, ${d.run ? 'created as the run took the lease' : 'created at the end (no lease taken)'}`).join('; ')}`
          : 'no deployment created',
        `GitHub shows ${r.deployed?.slice(0, 7) ?? 'nothing'}${wrongShown ? `, nyl recorded ${r.expectedDeployed?.slice(0, 7)}: FAIL` : ', the commit nyl recorded'}`,
        `main step ${Math.round(r.main.ms)} ms`,
      ].join('; '),
    });
  }
}

// 12. nyl site against nyl runs of every environment (issue 28): time, object reads, processes, pages.
if (want('12')) {
  const x = D.site;
  const scene = `${SIZES.siteEnvs} environments × ${SIZES.siteUnits} units × ${SIZES.siteRuns + 1} runs each`;
  const what = {
    time: `nyl site --local, ${scene} ÷ nyl runs --limit <all> of each environment in turn`,
    reads: 'objects nyl site reads ÷ what nyl runs of every environment reads (each object once)',
    procs: '(info) git processes of nyl site ÷ nyl runs of every environment',
    page: 'largest page of the site (one page per run)',
  };
  if (!x) {
    skipRow('12', what.time, skipReason('12'), { target: SITE_TARGETS.time });
    skipRow('12', what.reads, skipReason('12'), { target: SITE_TARGETS.reads });
    skipRow('12', what.page, skipReason('12'), { target: SITE_TARGETS.pageKB, op: '<', format: 'kb' });
  } else {
    const c = x.counts;
    const perRun = (n) => f2(n / (x.envs * x.runs));
    const cmds = (b) =>
      Object.entries(b ?? {})
        .map(([k, v]) => `${k} ${v}`)
        .join(', ');
    addRow('12', what.time, x.ratios, SITE_TARGETS.time, {
      detail: `${ms(x.siteMs)} against ${ms(x.runsMs)} (${x.envs} processes); ${x.site.runs} runs, ${x.site.pages} pages, ${fmtBytes(x.site.bytes)} written; the set-up (${x.envs} first reconciles, the history) took ${ms([x.setupMs])}`,
    });
    addRow('12', what.reads, [c.site.reads / c.runs.reads], SITE_TARGETS.reads, {
      detail: `nyl site ${c.site.reads} reads (${c.site.distinct} distinct), ${perRun(c.site.reads)} per run; nyl runs ${c.runs.reads} (${c.runs.distinct} distinct), ${perRun(c.runs.reads)} per run: the site adds each run's logs and source commit and each environment's status`,
    });
    addRow('12', what.procs, [c.site.gitProcesses / c.runs.gitProcesses], undefined, {
      force: 'INFO',
      detail: `nyl site ${c.site.gitProcesses} (${cmds(c.site.processes.byCommand)}); nyl runs ${c.runs.gitProcesses} in all, ${c.runs.each.map((e) => e.gitProcesses).join(' + ')}`,
    });
    addRow('12', what.page, [x.site.largestPage / 1000], SITE_TARGETS.pageKB, {
      op: '<',
      format: 'kb',
      detail: `${x.site.runPages} run pages for ${x.site.runs} runs, ${x.site.pages} pages in all`,
    });
  }
}

// ---- report ------------------------------------------------------------------------------------

const out = [];
const m = results.meta;
out.push(
  `nyl benchmark${quick ? ' (--quick)' : ''} — node ${m.node}, git ${m.git}, ${m.cpus} × ${m.cpu}, load ${m.loadavg.map((x) => x.toFixed(1)).join(' ')}`,
  `dist/cli.js sha256 ${m.cliSha256.slice(0, 12)}${m.distModified ? ' (dist/ differs from the committed one)' : ''}; ${repeat} pairs per timed comparison`,
  '',
);
const fl = results.floors;
const floorParts = [
  fl.nodeStartMs !== undefined && `node start-up ${Math.round(fl.nodeStartMs)} ms`,
  fl.nylVersionMs !== undefined && `nyl --version ${Math.round(fl.nylVersionMs)} ms`,
  fl.fetchMs &&
    `node + git fetch of the refs: ${Object.entries(fl.fetchMs)
      .map(([t, v]) => `${t} ${Math.round(v)} ms`)
      .join(', ')}`,
  fl.pushMs &&
    `git push --atomic of two refs: ${Object.entries(fl.pushMs)
      .map(([t, v]) => `${t} ${Math.round(v)} ms`)
      .join(', ')}`,
  fl.bashPerUnitMs !== undefined && `bash -c true ${f2(fl.bashPerUnitMs)} ms/unit`,
  fl.terraformPlanMs !== undefined && `terraform plan of an unchanged module ${Math.round(fl.terraformPlanMs)} ms`,
].filter(Boolean);
out.push(`floors (medians): ${floorParts.join('; ')}`, '');

const fmtRow = (r, x) => (x === undefined ? '–' : FORMATS[r.format](x));
const targetText = (r) =>
  r.target === undefined ? '—' : `${r.op === '<' ? '<' : r.op === '=' ? '=' : '≤'} ${FORMATS[r.format](r.target)}`;
out.push(
  table(
    ['row', 'what', 'measured', 'noise', 'target', 'verdict'],
    results.rows.map((r) => [
      r.id,
      r.what,
      r.verdict === 'SKIP' ? '–' : fmtRow(r, r.value),
      r.verdict === 'SKIP' ? '' : `±${NOISE[r.format](r.noise)}`,
      targetText(r),
      `${r.verdict}${r.withinNoise ? ' (within noise)' : ''}`,
    ]),
  ),
);
out.push('', 'details:');
for (const r of results.rows)
  out.push(`  ${r.id} ${r.what}: ${r.verdict === 'SKIP' ? `SKIP: ${r.reason}` : r.detail || fmtRow(r, r.value)}`);

// The cost of each command on a runner.
const costs = [];
const addCost = (label, transport, c) => c && costs.push([label, transport, c]);
if (D.remoteReads)
  for (const [t, x] of Object.entries(D.remoteReads.transports)) {
    addCost('node + git fetch (the floor)', t, x.floorCost);
    addCost(`status, first in a fresh clone (${D.remoteReads.units} units)`, t, x.firstStatus);
    for (const [c, v] of Object.entries(x.commands)) addCost(`no-op ${c} (${D.remoteReads.units} units)`, t, v.cost);
  }
if (D.takeover)
  for (const [t, x] of Object.entries(D.takeover.transports)) {
    addCost(`first reconcile (${D.takeover.units} units, 3 waves)`, t, x.first);
    addCost(`no-op reconcile (${D.takeover.units} units)`, t, x.noop);
    addCost('lease break (runner killed in wave 2)', t, x.leaseBreak);
    addCost('reconcile (takeover)', t, x.takeover);
  }
if (costs.length) {
  const dash = (v) => (v === undefined ? '–' : v);
  out.push(
    '',
    'cost per command on a runner (one counted run each, trace2 on: "git all" counts the processes git itself starts too, upload-pack included over file://)',
    table(
      [
        'command',
        'remote',
        'round trips',
        'HTTP req',
        'down',
        'up',
        'objects in',
        'git (nyl)',
        'git (all)',
        'tools',
        'ms',
      ],
      costs.map(([label, t, c]) => [
        label,
        t,
        dash(c.roundTrips),
        dash(c.httpRequests),
        c.bytesDown === undefined ? '–' : fmtBytes(c.bytesDown),
        c.bytesUp === undefined ? '–' : fmtBytes(c.bytesUp),
        dash(c.objectsReceived),
        dash(c.nylGitProcesses),
        dash(c.gitProcesses),
        dash(c.toolProcesses),
        Math.round(c.ms),
      ]),
    ),
  );
}
if (D.history) {
  const h = D.history;
  const line = (depth, xs) =>
    `  status in a fresh clone after ${depth} transitions: ${fmtBytes(median(xs.map((s) => s.bytesDown)))} down, ${median(xs.map((s) => s.httpRequests))} HTTP requests, ${median(xs.map((s) => s.roundTrips))} round trip(s)`;
  out.push(
    '',
    `history (${h.big}: ${Object.entries(h.remotes[h.big].commits)
      .map(([r, c]) => `${r} ${c}`)
      .join(', ')} commits; built in ${Math.round(h.remotes[h.big].ms)} ms)`,
  );
  out.push(line(h.small, h.status.small), line(h.big, h.status.big));
}
if (D.local) {
  const rows = [];
  for (const s of D.local)
    for (const [k, label] of [
      ['first', 'reconcile (first)'],
      ['noop', 'reconcile (no-op)'],
      ['status', 'status'],
      ['plan', 'plan'],
    ])
      rows.push([
        s.units,
        label,
        s[k].runs,
        s[k].medianMs,
        s[k].minMs,
        s[k].maxMs,
        s[k].gitProcesses,
        s[k].toolProcesses,
      ]);
  out.push(
    '',
    'local scaling (--sizes; --local, wall ms)',
    table(['units', 'command', 'runs', 'median ms', 'min ms', 'max ms', 'git procs', 'tool procs'], rows),
  );
}

const missed = results.rows.filter((r) => r.verdict === 'FAIL');
results.failures = failures;
results.missed = missed.map((r) => `${r.id} ${r.what}`);
mkdirSync(dirname(OUT), { recursive: true });
writeFileSync(OUT, `${JSON.stringify(results, null, 2)}\n`);
out.push(
  '',
  `${results.rows.filter((r) => r.verdict === 'PASS').length} PASS, ${missed.length} FAIL, ${results.rows.filter((r) => r.verdict === 'SKIP').length} SKIP; total ${round(results.totalMs / 1000)} s; results written to ${relative(process.cwd(), OUT) || OUT}`,
);
out.push(
  `time per part: ${Object.entries(results.sectionsMs)
    .map(([k, v]) => `${k} ${Math.round(v / 1000)} s`)
    .join(', ')}`,
);
if (failures.length) out.push('', `${failures.length} sanity check(s) failed:`, ...failures.map((f) => `  - ${f}`));
if (opt.check && missed.length) out.push(`--check: ${missed.length} target(s) missed beyond noise`);
process.stdout.write(`${out.join('\n')}\n`);
process.exit(failures.length || (opt.check && missed.length) ? 1 : 0);
