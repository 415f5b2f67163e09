import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import {
  attentionOf,
  byAttention,
  repoOf,
  type SiteAttention,
  type SiteData,
  type SiteEnvironment,
  type SiteStream,
} from '../core/ops/site/gather.js';
import type { OpReport } from '../core/ops/workspace/report.js';
import { Exit, NylError, problem } from '../core/util/errors.js';
import { environmentPages } from './environment.js';
import { seg } from './html.js';
import { lastReconcile, overviewPage } from './overview.js';
import { runPage } from './run.js';
import { SITE_CSS } from './style.js';

/**
 * The static site: every page by its path in the folder (relative links only, one stylesheet, no
 * script), each masked as a whole as well. Written one environment at a time, so a history of
 * thousands of runs never sits in memory whole: only what the overview needs of each is kept.
 */

/** One environment's pages and its runs' pages, by path. */
function* environmentFiles(e: SiteEnvironment, data: SiteData): Generator<[string, string]> {
  const dir = `env/${seg(e.name)}`;
  for (const [name, html] of environmentPages(e, data)) yield [`${dir}/${name}`, html];
  for (const r of e.runs) yield [`${dir}/run/${seg(r.line.run)}.html`, runPage(e, r, data)];
}

/** Every page of the site from the data whole (small sites, tests). */
export function sitePages(data: SiteData): Map<string, string> {
  const out = new Map<string, string>([
    ['site.css', SITE_CSS],
    ['index.html', overviewPage(data)],
  ]);
  for (const e of data.environments) for (const [path, html] of environmentFiles(e, data)) out.set(path, html);
  return out;
}

/** What the overview needs of an environment once its pages are written: its runs it links to, no logs. */
function forOverview(e: SiteEnvironment, attention: SiteAttention[]): SiteEnvironment {
  const wanted = new Set([lastReconcile(e)?.line.run, e.status.lease?.run, ...attention.map((a) => a.run)]);
  const runs = e.runs.filter((r) => wanted.has(r.line.run)).map(({ logs: _l, ...r }) => r);
  return { ...e, runs, ...(e.outputs ? { outputs: [] } : {}) };
}

/** Pages written so far: how many, how many bytes, the largest. */
class Written {
  pages = 0;
  bytes = 0;
  largest = 0;
  constructor(private readonly dir: string) {}

  write(path: string, text: string): void {
    const size = Buffer.byteLength(text);
    writeFile(join(this.dir, path), text, this.dir);
    if (path.endsWith('.html')) this.pages++;
    this.bytes += size;
    this.largest = Math.max(this.largest, size);
  }
}

/** Writes the site under `dir` as the environments arrive; the report says what was written, the data what the overview showed. */
export async function writeSite(
  site: SiteStream,
  dir: string,
  left: { logs: boolean; outputs: boolean },
): Promise<{ report: OpReport; overview: SiteData }> {
  const out = new Written(dir);
  const kept: SiteEnvironment[] = [];
  const attention: SiteAttention[] = [];
  let repoUrl: string | undefined;
  let runs = 0;
  for await (const e of site.environments) {
    repoUrl ??= repoOf([e]).repoUrl;
    const data = { generatedAt: site.generatedAt, environments: [e], attention: [], ...(repoUrl ? { repoUrl } : {}) };
    for (const [path, html] of environmentFiles(e, data)) out.write(path, html);
    const needs = attentionOf(e);
    attention.push(...needs);
    kept.push(forOverview(e, needs));
    runs += e.runs.length;
  }
  const overview: SiteData = {
    generatedAt: site.generatedAt,
    environments: kept,
    attention: attention.sort(byAttention),
    ...(repoUrl ? { repoUrl } : {}),
  };
  // Last, with the stylesheet: an environment refused on its way (`-e` unknown) leaves no folder.
  out.write('site.css', SITE_CSS);
  out.write('index.html', overviewPage(overview));
  return { report: siteReport(overview, out, dir, runs, left), overview };
}

function siteReport(
  data: SiteData,
  out: Written,
  dir: string,
  runs: number,
  left: { logs: boolean; outputs: boolean },
): OpReport {
  return {
    operation: 'site',
    environment: data.environments.length === 1 ? (data.environments[0]?.name ?? '') : '',
    outcome: `${out.pages} pages written`,
    facts: [
      ['folder', resolve(dir)],
      ['pages', out.pages],
      ['bytes', out.bytes],
      ['largestPage', out.largest],
      ['environments', data.environments.map((e) => e.name)],
      ['runs', runs],
      ['needsAPerson', data.attention.length],
      ['logs', left.logs ? 'included' : 'left out (--no-logs)'],
      ['outputs', left.outputs ? 'included' : 'left out (--no-outputs)'],
    ],
    problems: [],
    exit: Exit.ok,
  };
}

function writeFile(full: string, text: string, dir: string): void {
  try {
    mkdirSync(dirname(full), { recursive: true });
    writeFileSync(full, text);
  } catch (e) {
    throw new NylError(
      problem('NYL-USAGE', `the folder ${dir} cannot be written: ${(e as Error).message}`, {
        exit: Exit.failed,
        fix: 'pass --out DIR naming a folder this user can create and write',
      }),
    );
  }
}
