import { existsSync, mkdirSync, readdirSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
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

/** The repository's page on GitHub when the process runs in a workflow (its commits, pull requests). */
export function workflowRepoUrl(env: NodeJS.ProcessEnv = process.env): { repoUrl?: string } {
  const server = env.GITHUB_SERVER_URL || 'https://github.com';
  return env.GITHUB_REPOSITORY ? { repoUrl: `${server}/${env.GITHUB_REPOSITORY}` } : {};
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

/** The file that says a folder is a site nyl wrote (so a rebuild may replace it whole). */
export const SITE_MARK = '.nyl-site';

/**
 * Writes the site into a fresh folder beside `dir` as the environments arrive, then puts it in
 * place of `dir` whole: a rebuild (with `--no-logs`, or fewer environments) leaves nothing of the
 * last one, and a build that fails leaves `dir` as it was. A folder nyl did not write is refused,
 * never replaced. The report says what was written, the data what the overview showed.
 */
export async function writeSite(
  site: SiteStream,
  dir: string,
  left: { logs: boolean; outputs: boolean },
): Promise<{ report: OpReport; overview: SiteData }> {
  const target = resolve(dir);
  refuseForeignFolder(target);
  const fresh = `${target}.nyl-tmp-${process.pid}`;
  rmSync(fresh, { recursive: true, force: true });
  try {
    const written = await writePages(site, fresh);
    replaceFolder(fresh, target);
    return { ...written, report: siteReport(written.overview, written.out, target, written.runs, left) };
  } finally {
    rmSync(fresh, { recursive: true, force: true });
  }
}

async function writePages(site: SiteStream, dir: string) {
  const out = new Written(dir);
  out.write(SITE_MARK, `written by nyl site at ${site.generatedAt}; the whole folder is replaced by the next build\n`);
  const kept: SiteEnvironment[] = [];
  const attention: SiteAttention[] = [];
  let repoUrl = site.repoUrl;
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
  out.write('site.css', SITE_CSS);
  out.write('index.html', overviewPage(overview));
  return { out, overview, runs };
}

/** A folder that holds files and no mark of nyl site: someone else's, never replaced. */
function refuseForeignFolder(target: string): void {
  if (!existsSync(target)) return;
  const isDir = statSync(target).isDirectory();
  if (isDir && (readdirSync(target).length === 0 || existsSync(join(target, SITE_MARK)))) return;
  throw new NylError(
    problem('NYL-USAGE', `${target} ${isDir ? 'holds files nyl site did not write' : 'is not a folder'}`, {
      exit: Exit.failed,
      fix: 'pass --out naming a new or empty folder, or one an earlier nyl site wrote (it is replaced whole)',
    }),
  );
}

/** `fresh` in place of `target`: the old site moved aside first, then removed. */
function replaceFolder(fresh: string, target: string): void {
  const old = `${target}.nyl-old-${process.pid}`;
  try {
    mkdirSync(dirname(target), { recursive: true });
    if (existsSync(target)) renameSync(target, old);
    renameSync(fresh, target);
  } catch (e) {
    throw new NylError(
      problem('NYL-USAGE', `the folder ${target} cannot be replaced: ${(e as Error).message}`, {
        exit: Exit.failed,
        fix: 'pass --out DIR naming a folder this user can create and write',
      }),
    );
  }
  rmSync(old, { recursive: true, force: true });
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
    // What could not be read (history commits, unit documents): warnings, as `nyl runs` and `status` give them.
    problems: data.environments.flatMap((e) => e.status.problems.filter((p) => p.code === 'NYL-STATE-UNREADABLE')),
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
