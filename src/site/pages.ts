import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import type { SiteData } from '../core/ops/site/gather.js';
import type { OpReport } from '../core/ops/workspace/report.js';
import { Exit, NylError, problem } from '../core/util/errors.js';
import { environmentPages } from './environment.js';
import { seg } from './html.js';
import { overviewPage } from './overview.js';
import { runPage } from './run.js';
import { SITE_CSS } from './style.js';

/**
 * The static site from the gathered data: every page by its path in the folder (relative links
 * only, one stylesheet, no script). Written as is: each page masked as a whole as well.
 */
export function sitePages(data: SiteData): Map<string, string> {
  const out = new Map<string, string>([
    ['site.css', SITE_CSS],
    ['index.html', overviewPage(data)],
  ]);
  for (const e of data.environments) {
    const dir = `env/${seg(e.name)}`;
    for (const [name, html] of environmentPages(e, data)) out.set(`${dir}/${name}`, html);
    for (const r of e.runs) out.set(`${dir}/run/${seg(r.line.run)}.html`, runPage(e, r, data));
  }
  return out;
}

/** Writes the pages under `dir`; the report says what was written. */
export function writeSite(data: SiteData, dir: string, left: { logs: boolean; outputs: boolean }): OpReport {
  const pages = sitePages(data);
  let bytes = 0;
  let largest = 0;
  for (const [path, text] of pages) {
    const full = join(dir, path);
    const size = Buffer.byteLength(text);
    writeFile(full, text, dir);
    bytes += size;
    largest = Math.max(largest, size);
  }
  const html = [...pages.keys()].filter((p) => p.endsWith('.html')).length;
  const runs = data.environments.reduce((n, e) => n + e.runs.length, 0);
  return {
    operation: 'site',
    environment: data.environments.length === 1 ? (data.environments[0]?.name ?? '') : '',
    outcome: `${html} pages written`,
    facts: [
      ['folder', resolve(dir)],
      ['pages', html],
      ['bytes', bytes],
      ['largestPage', largest],
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
