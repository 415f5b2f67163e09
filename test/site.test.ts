/**
 * `nyl site`: a static site built from the refs alone. Real state made with the built CLI (runs
 * that succeed, fail, go uncertain, are cancelled, SIGKILLed and taken over, superseded; a held
 * unit, a drifted one, one awaiting approval; three environments with promotion gates: see
 * helpers/site-state.ts), then the folder read as files: what needs a person comes first, each
 * page has its units and states, every relative link resolves, a secret appears nowhere, no page
 * is over 1 MB.
 */
import { existsSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import type { SiteData, SiteEnvironment, SiteRun } from '../src/core/ops/site/gather.js';
import { RUNS_PER_PAGE } from '../src/site/environment.js';
import { ATTENTION_SHOWN } from '../src/site/overview.js';
import { sitePages, writeSite } from '../src/site/pages.js';
import { nyl, tempDir } from './helpers/repo.js';
import { scaledEnvironment } from './helpers/site-scale.js';
import { ENV, LOCAL, type SiteRunLine, sharedSiteState, VALUE } from './helpers/site-state.js';

/** Every file of the folder, by its path relative to it. */
function filesOf(dir: string): string[] {
  return readdirSync(dir).flatMap((n) => {
    const p = join(dir, n);
    return statSync(p).isDirectory() ? filesOf(p).map((f) => join(n, f)) : [n];
  });
}

const read = (dir: string, f: string) => readFileSync(join(dir, f), 'utf8');

const ids = new Map<string, Set<string>>();
/** The element ids of a page, read once. */
function idsOf(file: string): Set<string> {
  let found = ids.get(file);
  if (!found) {
    found = new Set([...readFileSync(file, 'utf8').matchAll(/ id="([^"]*)"/g)].map((m) => m[1] as string));
    ids.set(file, found);
  }
  return found;
}

/** Each `href` that is not a link out of the site: its target file exists, and so does its #fragment. */
function brokenLinks(dir: string): string[] {
  const broken: string[] = [];
  for (const f of filesOf(dir).filter((x) => x.endsWith('.html'))) {
    const html = read(dir, f);
    for (const m of html.matchAll(/href="([^"]*)"/g)) {
      const href = (m[1] as string).replace(/&amp;/g, '&');
      if (/^https?:\/\//.test(href)) continue;
      if (href.startsWith('/') || /^[a-z]+:/i.test(href)) {
        broken.push(`${f}: ${href} is not relative`);
        continue;
      }
      const [path, fragment] = href.split('#') as [string, string | undefined];
      const target = resolve(dir, dirname(f), path || f.split('/').pop() || '');
      if (!target.startsWith(resolve(dir)) || !existsSync(target)) broken.push(`${f}: ${href}`);
      else if (fragment && !idsOf(target).has(fragment)) broken.push(`${f}: ${href} (#)`);
    }
  }
  return broken;
}

/** A row of a table by its id, as HTML. */
const rowOf = (html: string, id: string) => new RegExp(`<tr id="${id}">.*?</tr>`, 's').exec(html)?.[0] ?? '';

describe('nyl site', () => {
  let dir: string;
  let out: string;
  let devRuns: SiteRunLine[];

  beforeAll(async () => {
    ({ dir, out, devRuns } = await sharedSiteState());
  }, 240_000);

  it('the overview lists what needs a person first: failed, uncertain, awaiting approval, drifted, held', () => {
    const html = read(out, 'index.html');
    const needs = html.indexOf('Needs a person');
    const firstEnv = html.indexOf('<section class="env"');
    expect(needs).toBeGreaterThan(0);
    expect(firstEnv).toBeGreaterThan(needs);
    const list = html.slice(needs, firstEnv);
    const order = [
      ['failed', 'dev', 'bad'],
      ['uncertain', 'dev', 'slow'],
      ['awaiting-approval', 'prod', 'drifty'],
      ['drifted', 'dev', 'drifty'],
      ['held', 'dev', 'keep'],
    ];
    const at = order.map(([state, env, unit]) => {
      const row = new RegExp(
        `<tr><td><span class="st st-${state}">[^<]+</span></td><td><a href="env/${env}/index.html">${env}</a></td><td><a href="env/${env}/index.html#u-${unit}">unit ${unit}</a>`,
      ).exec(list);
      expect(row, `${state} ${env} ${unit}`).not.toBeNull();
      return row?.index ?? -1;
    });
    expect([...at].sort((a, b) => a - b)).toEqual(at);
    expect(list).not.toContain('unit web');
    expect(list).toContain('repaired with nyl exec while held');
    // Environments in promotion order; each gate says what it waits on; the lease is free.
    expect(html.indexOf('Environment dev')).toBeLessThan(html.indexOf('Environment staging'));
    expect(html.indexOf('Environment staging')).toBeLessThan(html.indexOf('Environment prod'));
    expect(html).toMatch(
      /promotion gate<\/dt><dd>dev: <strong>waiting<\/strong> \(dev has bad \(failed\), slow \(uncertain\)\)/,
    );
    expect(html).toMatch(/promotion gate<\/dt><dd>staging: <strong>waiting<\/strong>/);
    expect(html).toContain('<dt>production</dt><dd>yes</dd>');
    expect(html).toContain('<dt>lease</dt><dd>free</dd>');
    expect(html).toContain('<html lang="en">');
    expect(html).toContain('<link rel="stylesheet" href="site.css">');
    expect(html).not.toContain('<script');
  });

  it('each environment page has its units with state, receipt, drift, condition and hold in their columns; url, outputs; runs newest first', () => {
    const dev = read(out, 'env/dev/index.html');
    const cells = (id: string) => [...rowOf(dev, id).matchAll(/<td>(.*?)<\/td>/gs)].map((m) => m[1] as string);
    expect(dev).toContain(
      '<tr><th scope="col">Unit</th><th scope="col">Kind</th><th scope="col">State</th><th scope="col">Receipt</th><th scope="col">Last run</th><th scope="col">Drift (last verify)</th><th scope="col">Condition</th><th scope="col">Hold</th><th scope="col">Detail</th></tr>',
    );
    const [, , webState, webReceipt] = cells('u-web');
    expect(webState).toContain('st-current');
    expect(webReceipt).toMatch(/^current <time datetime="[^"]+" title="[^"]+">under a minute ago<\/time>$/);
    const bad = cells('u-bad');
    expect(bad[2]).toContain('st-failed');
    // A run in a table: its short id (a prefix `nyl runs show` takes), the whole id as its title.
    const failedRun = devRuns[0]?.run as string;
    expect(bad[6]).toContain(
      `st-failed">failed</span> in <a href="run/${failedRun}.html" title="${failedRun}">${failedRun.slice(0, 13)}</a>: exited with 3: failing-now`,
    );
    expect(cells('u-slow')[6]).toContain('timed out after 1.0s');
    const drifty = cells('u-drifty');
    expect(drifty[2]).toContain('st-drifted');
    expect(drifty[5]).toMatch(/st-drifted.*: drifty is bad$/);
    expect(drifty[8]).toBe('');
    const keep = cells('u-keep');
    expect(keep[2]).toContain('st-held');
    expect(keep[7]).toMatch(/^by Test Operator &lt;operator@example\.com&gt; <time[^>]*>[^<]+<\/time>: maintenance$/);
    expect(dev).toContain('<a href="https://web.example/app">https://web.example/app</a>');
    expect(dev).toMatch(/<h2>Outputs<\/h2>.*<td>web<\/td><td>host<\/td><td><code>web\.example<\/code>/s);
    const runsAt = devRuns.map((r) => dev.indexOf(`href="run/${r.run}.html"`, dev.indexOf('<h2>Runs</h2>')));
    expect(runsAt.every((i) => i > 0)).toBe(true);
    expect([...runsAt].sort((a, b) => a - b)).toEqual(runsAt);
    const prod = read(out, 'env/prod/index.html');
    expect(rowOf(prod, 'u-drifty')).toContain('st-awaiting-approval');
    expect(rowOf(prod, 'u-drifty')).toContain('awaiting approval: repaired with nyl exec while held');
    expect(rowOf(read(out, 'env/staging/index.html'), 'u-bad')).toContain('st-pending');
  });

  it('each run has a page with its record, states and units: failed, cancelled, lost and taken over, superseded', () => {
    expect(devRuns.map((r) => r.state)).toEqual([
      'failed',
      'superseded',
      'succeeded',
      'lost',
      'cancelled',
      'succeeded',
    ]);
    for (const r of devRuns) {
      const html = read(out, `env/dev/run/${r.run}.html`);
      expect(html).toContain(`<h1>Run ${r.run}</h1>`);
      expect(html).toContain(`st-${r.state}`);
    }
    const [failed, superseded, takeover, lost, cancelled] = devRuns as SiteRunLine[];
    const html = read(out, `env/dev/run/${failed?.run}.html`);
    expect(html).toMatch(
      /<a href="\.\.\/index\.html#u-bad">bad<\/a><\/td><td>Command<\/td><td><span class="st st-failed">failed<\/span><\/td><td>[^<]+<\/td><td>3<\/td>/,
    );
    expect(html).toContain('<a href="../index.html#u-slow">slow</a>');
    expect(html).toMatch(/<details class="log"><summary>bad \(failed\): log<\/summary><pre>failing-now/);
    // The SIGKILLed run: lost, imported by the run that took over, its unit's output at the last heartbeat.
    const killed = read(out, `env/dev/run/${lost?.run}.html`);
    expect(killed).toContain(`imported by ${takeover?.run}`);
    expect(killed).toMatch(/<summary>sleeper \(uncertain\): [^<]*<\/summary><pre>halfway-there/);
    expect(read(out, `env/dev/run/${takeover?.run}.html`)).toContain(`imported ${cancelled?.run}, ${lost?.run}`);
    expect(read(out, `env/dev/run/${cancelled?.run}.html`)).toContain('st-cancelled');
    expect(read(out, `env/dev/run/${superseded?.run}.html`)).toContain('NYL-SOURCE-OLDER');
  });

  it('every relative link resolves to a file (and anchor) in the folder; nothing links to an absolute path', () => {
    expect(brokenLinks(out)).toEqual([]);
    expect(filesOf(out)).toContain('site.css');
  });

  it('a secret set in the environment appears in no file; no page is over 1 MB', () => {
    for (const f of filesOf(out)) {
      const text = read(out, f);
      expect(text.includes(VALUE), f).toBe(false);
      expect(statSync(join(out, f)).size, f).toBeLessThan(1_000_000);
    }
    // The unit did print it: the log says so, masked.
    expect(filesOf(out).some((f) => read(out, f).includes('token is ***'))).toBe(true);
  });

  it('--no-logs leaves the log sections out, --no-outputs the outputs; -e builds one environment; a rebuild replaces the folder whole', async () => {
    const bare = join(tempDir('nyl-site-'), 'site');
    // A site with everything first: the rebuild below must leave nothing of it.
    expect((await nyl(dir, ['site', '--out', bare, ...LOCAL], ENV)).code).toBe(0);
    expect(existsSync(join(bare, 'env/staging/index.html'))).toBe(true);
    const r = await nyl(dir, ['site', '--out', bare, '--no-logs', '--no-outputs', '-e', 'dev', ...LOCAL], ENV);
    expect(r.code, r.stdout + r.stderr).toBe(0);
    expect(r.stdout).toContain('logs: left out (--no-logs)');
    for (const f of filesOf(bare)) {
      const text = read(bare, f);
      expect(text, f).not.toContain('<h2>Logs</h2>');
      expect(text, f).not.toContain('<details class="log"');
      expect(text, f).not.toContain('<h2>Outputs</h2>');
    }
    expect(existsSync(join(bare, 'env/staging'))).toBe(false);
    expect(brokenLinks(bare)).toEqual([]);
  });

  it('a folder nyl site did not write is refused, not replaced', async () => {
    const theirs = tempDir('nyl-site-theirs-');
    writeFileSync(join(theirs, 'notes.txt'), 'keep me\n');
    const r = await nyl(dir, ['site', '--out', theirs, ...LOCAL], ENV);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain(
      `error NYL-USAGE\n  ${theirs} holds files nyl site did not write\n  fix: pass --out naming a new or empty folder`,
    );
    expect(readdirSync(theirs)).toEqual(['notes.txt']);
  });

  it('bad input: no --out is NYL-USAGE; an unknown environment is refused as status refuses it', async () => {
    const none = await nyl(dir, ['site', ...LOCAL]);
    expect(none.code).toBe(1);
    expect(none.stderr).toContain('error NYL-USAGE\n  site needs --out DIR');
    const unknown = await nyl(dir, ['site', '--out', join(tempDir(), 's'), '-e', 'nope', ...LOCAL]);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toContain('error NYL-ENV-UNKNOWN (nope)');
    const help = await nyl(dir, ['site', '--help']);
    expect(help.stdout).toContain('usage: nyl site --out DIR');
  });
});

/** Made-up data: many runs and long logs, to see the pages stay small and link to each other. */
function bigEnvironment(runs: number, logBytes: number): SiteEnvironment {
  const run = (i: number): SiteRun => {
    const id = `run-${String(runs - i).padStart(5, '0')}`;
    const line = {
      run: id,
      operation: 'reconcile',
      state: 'succeeded',
      place: 'history' as const,
      startedAt: '2025-01-01T00:00:00Z',
      who: 'ci@runner',
      source: 'a'.repeat(40),
      counts: { executed: 2 },
      detail: '',
    };
    const log = (unit: string) => ({ unit, result: 'executed', kind: 'log' as const, text: 'x'.repeat(logBytes) });
    return {
      line,
      facts: {},
      states: [],
      units: [{ unit: 'a', result: 'executed' }],
      logs: i === 0 ? [log('a'), log('b'), log('c')] : [],
    };
  };
  return {
    name: 'prod',
    after: [],
    production: true,
    status: { operation: 'status', environment: 'prod', source: 'a'.repeat(40), rows: [], problems: [], exit: 0 },
    facets: [],
    runs: Array.from({ length: runs }, (_, i) => run(i)),
  };
}

describe('site pages (no CLI)', () => {
  it(`paginates runs ${RUNS_PER_PAGE} per page, and keeps a run page with long logs under 1 MB`, async () => {
    const data: SiteData = {
      generatedAt: '2025-01-01T00:00:00Z',
      environments: [bigEnvironment(120, 600_000)],
      attention: [],
    };
    const pages = sitePages(data);
    expect([...pages.keys()].filter((p) => /^env\/prod\/(index|runs-\d+)\.html$/.test(p)).sort()).toEqual([
      'env/prod/index.html',
      'env/prod/runs-2.html',
      'env/prod/runs-3.html',
    ]);
    for (const [p, text] of pages) expect(Buffer.byteLength(text), p).toBeLessThan(1_000_000);
    const newest = pages.get('env/prod/run/run-00120.html') as string;
    expect(newest).toContain('left out to keep the page under 1 MB');
    expect(pages.get('env/prod/runs-3.html')).toContain('href="run/run-00001.html"');
    const { mkdirSync, writeFileSync } = await import('node:fs');
    const folder = tempDir('nyl-site-big-');
    for (const [p, text] of pages) {
      mkdirSync(dirname(join(folder, p)), { recursive: true });
      writeFileSync(join(folder, p), text);
    }
    expect(brokenLinks(folder)).toEqual([]);
  });
});

describe('site at scale (no CLI)', () => {
  it('50 environments × 1,000 units × 100 runs each (5,000 runs): no page over 1 MB, what needs a person capped on the overview', async () => {
    const envs = Array.from({ length: 50 }, (_, i) => `env-${String(i).padStart(2, '0')}`);
    let made = 0;
    async function* environments() {
      for (const name of envs) {
        made++;
        yield scaledEnvironment(name, 1000, 100);
      }
    }
    const folder = join(tempDir('nyl-site-scale-'), 'site');
    const { report, overview } = await writeSite(
      { generatedAt: '2025-01-01T00:00:00Z', environments: environments() },
      folder,
      { logs: true, outputs: true },
    );
    expect(made).toBe(50);
    // What the overview kept of each environment: no logs, only the runs it links to.
    expect(overview.environments.every((e) => e.runs.length <= 1 && e.runs.every((r) => !r.logs))).toBe(true);
    const facts = Object.fromEntries(report.facts);
    // The overview, each environment's two pages of runs, and each run.
    expect(facts.pages).toBe(1 + 50 * 2 + 50 * 3 + 50 * 100);
    expect(facts.largestPage).toBeLessThan(1_000_000);
    expect(facts.needsAPerson).toBe(50_000);
    const index = read(folder, 'index.html');
    expect(index).toContain(`50000 things wait on a person (the first ${ATTENTION_SHOWN} here)`);
    expect(index).toMatch(
      /<p>49800 more: 800 in <a href="env\/env-00\/index\.html">env-00<\/a>, 1000 in <a href="env\/env-01\/index\.html">env-01<\/a>/,
    );
    // The run that ran every unit: all 1,000 rows, and the logs that fit, the rest named with the command that prints them.
    const big = read(folder, 'env/env-07/run/r-100.html');
    expect(big.match(/<tr><td><a href="\.\.\/(index|units-\d)\.html#u-module\.svc_/g)).toHaveLength(1000);
    expect(big).toContain('<a href="../units-4.html#u-module.svc_0999">module.svc_0999</a>');
    expect(big).toContain(
      '<details class="log"><summary>module.svc_0000 (failed): log</summary><pre>module.svc_0000 &lt;plan&gt; &amp; &quot;apply&quot;',
    );
    expect(big).toContain(
      'left out to keep the page under 1 MB; `nyl runs logs -e env-07 r-100 --unit module.svc_0999` prints it.',
    );
    expect(big).toContain('18000 more: `nyl runs show -e env-07 r-100` lists them all.');
    // An environment page: all 1,000 units, each with its first drifted resources; problems and outputs counted past their caps.
    const env = read(folder, 'env/env-49/index.html');
    expect(env.match(/<tr id="u-module\.svc_/g)).toHaveLength(250);
    expect(env).toContain('1000 units: 1000 failed (1–250 here)');
    const last = read(folder, 'env/env-49/units-4.html');
    expect(last.match(/<tr id="u-module\.svc_/g)).toHaveLength(250);
    expect(last).toContain('update module.svc_0999.aws_instance.node[9], and 10 more (nyl status lists them)');
    expect(env).toContain('950 more: `nyl status -e env-49` shows them all.');
    expect(env).toContain('2500 more: `nyl state show -e env-49` shows them all.');
    expect(brokenLinks(folder).slice(0, 5)).toEqual([]);
  }, 300_000);
});
