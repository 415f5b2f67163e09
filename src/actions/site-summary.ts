import type { SiteData } from '../core/ops/site/gather.js';
import type { Problem } from '../core/util/errors.js';
import { masker } from '../core/util/mask.js';
import { code, inline } from './markdown.js';

/** The first items of "Needs a person" the summary names; the site lists them all. */
const LIST_MAX = 10;

export interface SiteWritten {
  folder: string;
  pages: number;
  logs: boolean;
  outputs: boolean;
}

/**
 * The job summary of the site action: how many pages, which environments, how many things wait on
 * a person (the first few named), and where the folder is. Not yet masked: the caller masks it.
 */
export function siteSummary(data: SiteData, w: SiteWritten, runUrl?: string): string {
  const envs = data.environments.map((e) => code(e.name));
  const runs = data.environments.reduce((n, e) => n + e.runs.length, 0);
  const n = data.attention.length;
  const facts = [
    `- **pages**: ${w.pages}`,
    `- **environments**: ${envs.length}${envs.length ? ` (${envs.join(', ')})` : ''}`,
    `- **runs**: ${runs}`,
    `- **needs a person**: ${n}`,
    `- **folder**: ${code(w.folder)}`,
    `- **logs**: ${w.logs ? 'included' : 'left out (logs: false)'}`,
    `- **outputs**: ${w.outputs ? 'included' : 'left out (outputs: false)'}`,
    ...(runUrl ? [`- **workflow run**: ${runUrl}`] : []),
  ];
  const waiting = data.attention.slice(0, LIST_MAX).map((a) => {
    const what = a.unit ? `unit ${code(a.unit)}` : a.run ? `run ${code(a.run)}` : '';
    // Masked before it is cut: half a secret never reaches the summary.
    const masked = masker.mask(a.detail);
    const detail = masked ? `: ${inline(masked.length > 200 ? `${masked.slice(0, 199)}…` : masked)}` : '';
    return `- **${inline(a.environment)}** ${what} ${inline(a.state)}${detail}`;
  });
  if (n > LIST_MAX) waiting.push(`- … and ${n - LIST_MAX} more: see the overview page`);
  return `${[
    `## nyl site: ${w.pages} pages written`,
    ['### Site', '', ...facts].join('\n'),
    waiting.length ? ['### Needs a person', '', ...waiting].join('\n') : '',
  ]
    .filter(Boolean)
    .join('\n\n')}\n`;
}

/** The job summary of a site that could not be written: each problem with its fix. */
export function siteFailureSummary(problems: Problem[], runUrl?: string): string {
  const lines = problems.map(
    (p) =>
      `- **${inline(p.code)}**${p.subject ? ` (${inline(p.subject)})` : ''}: ${inline(p.message)}${p.fix ? `<br>fix: ${inline(p.fix)}` : ''}`,
  );
  return `${[
    '## nyl site: failed',
    ['### Needs a person', '', ...lines].join('\n'),
    ...(runUrl ? [`### Facts\n\n- **workflow run**: ${runUrl}`] : []),
  ].join('\n\n')}\n`;
}
