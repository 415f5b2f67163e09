import { words } from '../core/ops/workspace/attention.js';
import { formatDuration } from '../core/util/duration.js';
import { masker } from '../core/util/mask.js';

/** HTML of the site's pages: every string masked (the one masking step), then escaped. */

const ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };

/** Text or an attribute value: masked, then escaped. */
export function t(value: unknown): string {
  const s = value === undefined || value === null ? '' : String(value);
  return masker.mask(s).replace(/[&<>"']/g, (c) => ESCAPES[c] as string);
}

/** A file name (and link) segment for an environment or run: letters, digits, `.`, `_`, `-`. */
export const seg = (name: string) => name.replace(/[^A-Za-z0-9._-]/g, '_');

/** An anchor id for a unit's row. */
export const unitId = (unit: string) => `u-${seg(unit)}`;

export const link = (href: string, text: string) => `<a href="${t(href)}">${t(text)}</a>`;

/** A run's id in a table: its first 13 characters (a prefix `nyl runs show` takes), the whole id as its title. */
export const shortRun = (run: string) => (run.length > 13 ? run.slice(0, 13) : run);

/** A link to a run's page that shows its short id. */
export const runLink = (href: string, run: string, prefix = '') =>
  `<a href="${t(href)}" title="${t(run)}">${t(prefix + shortRun(run))}</a>`;

/** A link out of the site: only to https pages (GitHub commits, jobs, the environment's url). */
export const outLink = (href: string | undefined, text: string) =>
  href && /^https?:\/\//.test(href) ? link(href, text) : t(text);

/** A result or state in words, marked for its colour (the job summary's words). */
export const state = (s: string) => `<span class="st st-${seg(s)}">${t(words(s))}</span>`;

export const duration = (ms: number | undefined) => (ms === undefined ? '' : formatDuration(ms));

/** A time as UTC to the second. */
export const time = (iso: string | undefined) =>
  iso ? `<time datetime="${t(iso)}">${t(iso.replace(/\.\d+Z$/, 'Z').replace('T', ' '))}</time>` : '';

/** A table that scrolls sideways on a narrow screen; column headers scoped. */
export function table(caption: string, header: string[], rows: string[][], rowIds: string[] = []): string {
  const head = header.map((h) => `<th scope="col">${t(h)}</th>`).join('');
  const body = rows
    .map((r, i) => `<tr${rowIds[i] ? ` id="${t(rowIds[i])}"` : ''}>${r.map((c) => `<td>${c}</td>`).join('')}</tr>`)
    .join('\n');
  return `<div class="scroll"><table><caption>${t(caption)}</caption><thead><tr>${head}</tr></thead><tbody>\n${body}\n</tbody></table></div>`;
}

/** Key/value lines (`<dl>`); values are HTML already. */
export function facts(pairs: [string, string][]): string {
  return `<dl class="facts">${pairs
    .filter(([, v]) => v !== '')
    .map(([k, v]) => `<dt>${t(k)}</dt><dd>${v}</dd>`)
    .join('')}</dl>`;
}

/** Counts as words: `3 current, 1 failed`. */
export const countsText = (c: Record<string, number>) =>
  Object.entries(c)
    .map(([k, v]) => `${v} ${words(k)}`)
    .join(', ');

/** A source commit: its short id, linked to GitHub when the repository is known. */
export const commit = (sha: string | undefined, repoUrl: string | undefined) =>
  sha ? outLink(repoUrl ? `${repoUrl}/commit/${sha}` : undefined, sha.slice(0, 12)) : '';

/** A run's source: its commit, and the pull request that commit merged when its message says so. */
export const source = (line: { source: string; pr?: number }, repoUrl: string | undefined) =>
  line.pr === undefined
    ? commit(line.source, repoUrl)
    : `${commit(line.source, repoUrl)} (${outLink(repoUrl ? `${repoUrl}/pull/${line.pr}` : undefined, `PR #${line.pr}`)})`;

export interface PageParts {
  title: string;
  /** From the page to the site's root: '', '../../', '../../../'. */
  root: string;
  /** Breadcrumbs before the page itself: [href, text]. */
  crumbs: [string, string][];
  body: string;
  generatedAt: string;
}

/** A whole page: lang, title, the one stylesheet, breadcrumbs, main; no script. Masked once more as a whole. */
export function page(p: PageParts): string {
  const crumbs = [...p.crumbs.map(([h, x]) => `<li>${link(h, x)}</li>`), `<li aria-current="page">${t(p.title)}</li>`];
  const html = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="color-scheme" content="light dark">
<title>${t(p.title)} · nyl</title>
<link rel="stylesheet" href="${t(p.root)}site.css">
</head>
<body>
<header><nav aria-label="Breadcrumb"><ol class="crumbs">${crumbs.join('')}</ol></nav></header>
<main>
${p.body}
</main>
<footer><p>Built by <code>nyl site</code> from the state refs at ${time(p.generatedAt)}.</p></footer>
</body>
</html>
`;
  return masker.mask(html);
}
