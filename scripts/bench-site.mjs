// Row 12 (issue 28): `nyl site` against reading the same refs with `nyl runs`, one environment at a
// time. Real state in a local repository: E environments in a promotion line, each reconciled for
// real (U Command units), then R synthetic runs stacked under each environment's history tip by
// row 8's `addHistory`. Then, paired: the site of every environment (A) against `nyl runs --limit
// <all>` for each environment in turn (B); and one counted run of each, through a `git` wrapper
// that logs every name asked of `git cat-file --batch` (nyl's one object reader): the site must
// read each object once, not walk the history once per run.
import { accessSync, chmodSync, constants, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { delimiter, join } from 'node:path';
import { addHistory } from './bench-history.mjs';
import {
  childEnv,
  commitAll,
  ENV_NAME,
  generateConfig,
  git,
  log,
  nylJson,
  paired,
  setIdentity,
  tempDir,
  traced,
} from './bench-lib.mjs';

/**
 * Targets (docs/performance.md, row 12). Time: the site's ÷ the runs' (one process reading what E
 * of them read, plus logs, and writing a page per run: ×0.6–1 at these sizes, towards ×2 for one
 * deep history, where a page written costs about what its run's reading does). Objects read ÷
 * theirs: < 2 while each object is read once (a run's logs are at most one per unit tree the walk
 * reads; a history walk per run would be ×R/2). The largest page, KB.
 */
export const SITE_TARGETS = { time: 3, reads: 2, pageKB: 1000 };

const NAMES = ['dev', 'qa', 'staging', 'prod-eu', 'prod-us'];
/** E environment names, in promotion order. */
export const siteEnvironments = (n) =>
  Array.from({ length: n }, (_, i) => NAMES[i] ?? `env-${String(i + 1).padStart(2, '0')}`);

/** E environments in a promotion line (each after the one before) and U Command units in every one. */
export function siteConfig(envs, units) {
  const environments = envs.map(
    (name, i) => `kind: Environment\nname: ${name}\n${i ? `promotion:\n  after: [${envs[i - 1]}]\n` : ''}`,
  );
  // generateConfig's documents after its own Environment: the units of rows 1 to 4.
  const unitDocs = generateConfig(units).split('---\n').slice(1);
  return [...environments, ...unitDocs].join('---\n');
}

/**
 * `runs` synthetic runs under the tips of `env`'s state refs in `dir`. addHistory writes under
 * refs/nyl/bench/*: the refs go there for the call and come back (their records name the
 * environment `bench`, which neither reader looks at; sizes and shapes are a real run's).
 */
function historyOf(dir, env, runs) {
  const refsOf = (e) =>
    git(dir, ['for-each-ref', '--format=%(objectname) %(refname)', `refs/nyl/${e}/`])
      .split('\n')
      .filter(Boolean)
      .map((l) => l.split(' '));
  const move = (from, to) =>
    git(dir, ['update-ref', '--stdin'], {
      input: refsOf(from)
        .flatMap(([oid, ref]) => {
          const name = ref.slice(`refs/nyl/${from}/`.length);
          return [`update refs/nyl/${to}/${name} ${oid}`, `delete ${ref} ${oid}`];
        })
        .join('\n')
        .concat('\n'),
    });
  if (refsOf(ENV_NAME).length) throw new Error(`site: refs/nyl/${ENV_NAME}/ is in use`);
  move(env, ENV_NAME);
  // glibc gives memory back after every commit git fast-import frees (one brk each): 500 runs took
  // 15 s of system time here, 0.1 s without the trim. For the set-up's git processes only.
  const trim = childEnv.MALLOC_TRIM_THRESHOLD_;
  childEnv.MALLOC_TRIM_THRESHOLD_ = String(256 * 1024 * 1024);
  try {
    return addHistory(dir, runs);
  } finally {
    if (trim === undefined) delete childEnv.MALLOC_TRIM_THRESHOLD_;
    else childEnv.MALLOC_TRIM_THRESHOLD_ = trim;
    move(ENV_NAME, env);
  }
}

/** The repository of row 12: configuration committed, each environment reconciled, then its history. */
export function siteState(ctx, { envs, units, runs }) {
  const t0 = performance.now();
  const dir = tempDir('site');
  git(dir, ['init', '-q', '-b', 'main']);
  setIdentity(dir);
  const names = siteEnvironments(envs);
  writeFileSync(join(dir, 'nyl.yaml'), siteConfig(names, units));
  commitAll(dir, `bench: ${envs} environments × ${units} units`);
  for (const env of names) {
    const r = nylJson(ctx.cli, dir, ['reconcile', '-e', env, '--local']);
    const executed = (r.report.rows ?? []).filter((x) => x.result === 'executed').length;
    if (r.status !== 0 || executed !== units)
      throw new Error(`site: reconcile -e ${env}: exit ${r.status}, ${executed} of ${units} executed`);
    historyOf(dir, env, runs);
  }
  // As a clone that has fetched them would hold them: packed (fast-import leaves a pack per call).
  git(dir, ['gc', '-q', '--prune=now']);
  return { dir, names, ms: performance.now() - t0 };
}

// ---- object reads ------------------------------------------------------------------------------

/** The git that PATH finds, as nyl would start it. */
function realGit() {
  for (const d of (childEnv.PATH ?? '').split(delimiter)) {
    const p = join(d || '.', 'git');
    try {
      accessSync(p, constants.X_OK);
      return p;
    } catch {}
  }
  throw new Error('site: no git on PATH');
}

/**
 * An environment whose `git` (first on PATH) runs the real one and, for `git cat-file --batch`,
 * copies every line nyl writes to it (one object name each) to a log; every git process is traced.
 */
function countingEnv(dir) {
  const bin = join(dir, 'bin');
  mkdirSync(bin, { recursive: true });
  const names = join(dir, `reads-${process.hrtime.bigint()}.txt`);
  writeFileSync(names, '');
  const q = (s) => `'${String(s).replaceAll("'", `'\\''`)}'`;
  const real = realGit();
  writeFileSync(
    join(bin, 'git'),
    [
      '#!/bin/sh',
      'if [ "$1" = cat-file ] && [ "$2" = --batch ]; then',
      `  tee -a ${q(names)} | ${q(real)} "$@"`,
      '  exit $?',
      'fi',
      `exec ${q(real)} "$@"`,
      '',
    ].join('\n'),
  );
  chmodSync(join(bin, 'git'), 0o755);
  const t = traced({ ...childEnv, PATH: `${bin}${delimiter}${childEnv.PATH ?? ''}` }, dir);
  return {
    env: t.env,
    read() {
      const reads = objectReads(readFileSync(names, 'utf8'));
      rmSync(names, { force: true });
      return { ...reads, processes: t.read() };
    },
  };
}

/** What a log of object names says: reads, distinct names, and reads of a name read before. */
export function objectReads(text) {
  const names = text.split('\n').filter(Boolean);
  const distinct = new Set(names).size;
  return { reads: names.length, distinct, repeated: names.length - distinct };
}

// ---- the row -----------------------------------------------------------------------------------

/** Run pages in the site's folder, for each environment. */
function runPages(out, names) {
  let n = 0;
  for (const env of names) {
    try {
      n += readdirSync(join(out, 'env', env, 'run')).filter((f) => f.endsWith('.html')).length;
    } catch {}
  }
  return n;
}

/**
 * Row 12: `pairs` pairs of the site of every environment against `nyl runs` of each in turn, then
 * one counted run of each (git processes, object reads). `runs` synthetic runs per environment,
 * and the real first reconcile of each.
 */
export function benchSite(ctx, { envs, units, runs, pairs }) {
  log(`site: ${envs} environments × ${units} units, ${runs} runs of history each (set-up, not timed)`);
  const state = siteState(ctx, { envs, units, runs });
  const { dir, names } = state;
  const work = tempDir('site-out');
  const out = join(work, 'site');
  // Each environment's runs: the synthetic ones and its real first reconcile. Its history ref
  // holds one commit more (addHistory keeps the real commit under the synthetic ones and puts its
  // tree again on top: the same run twice, listed once): --limit asks for every commit.
  const perEnv = runs + 1;
  const limit = git(dir, ['rev-list', '--count', `refs/nyl/${names[0]}/history`]);
  const site = (env = childEnv) => {
    rmSync(out, { recursive: true, force: true });
    const r = nylJson(ctx.cli, dir, ['site', '--out', out, '--local'], { env });
    ctx.check(r.status === 0, `site: nyl site exit ${r.status} (${r.stderr.slice(0, 300)})`);
    return r;
  };
  const list = (name, env = childEnv) => {
    const r = nylJson(ctx.cli, dir, ['runs', '-e', name, '--local', '--limit', limit], { env });
    const listed = r.report?.facts?.runs?.length;
    ctx.check(
      r.status === 0 && listed === perEnv,
      `site: runs -e ${name}: exit ${r.status}, ${listed} runs listed (expected ${perEnv}) ${r.stderr.slice(0, 300)}`,
    );
    return r;
  };
  log(`site: nyl site ÷ nyl runs --limit ${limit} of each of ${envs} environments × ${pairs} pairs`);
  const p = paired(
    pairs,
    () => site().ms,
    () => names.reduce((ms, name) => ms + list(name).ms, 0),
  );
  // One counted run of each (not timed: the wrapper and trace2 cost time).
  const c = countingEnv(work);
  const s = site(c.env);
  const siteCount = { gitProcesses: s.report?.stats?.gitProcesses, ...c.read() };
  const runsCount = names.map((name) => {
    const e = countingEnv(work);
    const r = list(name, e.env);
    return { environment: name, gitProcesses: r.report?.stats?.gitProcesses, ...e.read() };
  });
  const facts = s.report?.facts ?? {};
  const pages = runPages(out, names);
  ctx.check(
    facts.runs === envs * perEnv && pages === facts.runs,
    `site: ${facts.runs} runs in its report and ${pages} run pages (expected ${envs * perEnv}, one page per run)`,
  );
  ctx.check(facts.largestPage < 1_000_000, `site: its largest page has ${facts.largestPage} bytes (over 1 MB)`);
  ctx.drop(work);
  ctx.drop(dir);
  const sum = (k) => runsCount.reduce((n, x) => n + (x[k] ?? 0), 0);
  return {
    envs,
    units,
    runs: perEnv,
    environments: names,
    setupMs: state.ms,
    siteMs: p.a,
    runsMs: p.b,
    ratios: p.ratios,
    site: {
      pages: facts.pages,
      runPages: pages,
      runs: facts.runs,
      bytes: facts.bytes,
      largestPage: facts.largestPage,
    },
    counts: {
      site: siteCount,
      runs: {
        gitProcesses: sum('gitProcesses'),
        reads: sum('reads'),
        distinct: sum('distinct'),
        repeated: sum('repeated'),
        each: runsCount,
      },
    },
  };
}
