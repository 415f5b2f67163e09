import { countsText, isDestructive, SYMBOL } from '../core/changes/counts.js';
import type { UnitRow } from '../core/ops/workspace/report.js';
import { code, inline } from './markdown.js';

/**
 * Resource changes in Markdown, for the plan comment and the job summary: per Terraform/OpenTofu
 * unit a line with its counts and what it deletes or replaces spelled out, then every change in a
 * collapsed block (destructive first, Terraform's symbols, the names of the attributes that change);
 * a unit without changes says why. Addresses and names only: a plan's values never reach here.
 */

/** Destructive resources named in a unit's line, before "and N more". */
const NAMED = 10;

function headline(r: UnitRow): string {
  const c = r.changes as NonNullable<UnitRow['changes']>;
  const destroys = c.resources.filter(isDestructive);
  const named = destroys.slice(0, NAMED).map((d) => `${code(d.address)} (${d.action}${d.tainted ? ', tainted' : ''})`);
  const more = destroys.length > NAMED ? ` and ${destroys.length - NAMED} more` : '';
  const what = destroys.length ? `: **deletes or replaces ${destroys.length}**: ${named.join(', ')}${more}` : '';
  return `**${inline(r.unit)}** (${r.kind}) ${code(countsText(c.counts))}${what}`;
}

/** One unit's block, at most `cap` resource lines (the rest counted). */
export function unitChangesMd(r: UnitRow, cap = Number.POSITIVE_INFINITY): string[] {
  if (!r.changes) return r.changesNote ? [`**${inline(r.unit)}** (${r.kind}): ${inline(r.changesNote)}`, ''] : [];
  const c = r.changes;
  if (!c.resources.length && !c.outputs.length) return [`${headline(r)}: no changes`, ''];
  const shown = c.resources.slice(0, cap);
  const lines = shown.map(
    (x) =>
      `- ${code(SYMBOL[x.action])} ${code(x.address)}${x.attributes?.length ? ` (${inline(x.attributes.join(', '))})` : ''}`,
  );
  const left = c.resources.length - shown.length;
  if (left) lines.push(`- … ${left} more resource changes not shown here`);
  const outputs = c.outputs.length
    ? ['', `Outputs: ${c.outputs.map((o) => code(`${SYMBOL[o.action]} ${o.name}`)).join(', ')}`]
    : [];
  const n = c.resources.length;
  return [
    headline(r),
    '',
    `<details><summary>${n} resource change${n === 1 ? '' : 's'} of ${inline(r.unit)}</summary>`,
    '',
    ...lines,
    ...outputs,
    '',
    '</details>',
    '',
  ];
}

/** The section for every unit that has changes (or says why not); empty when none does. */
export function changesMd(rows: UnitRow[], cap = Number.POSITIVE_INFINITY): string {
  const blocks = rows.flatMap((r) => unitChangesMd(r, cap));
  return blocks.length ? ['#### Resource changes', '', ...blocks].join('\n').trimEnd() : '';
}

/**
 * The section within a size: every resource line if it fits, else fewer per unit (the rest
 * counted), else `leftOut` alone. Lines, led by a blank one; none when no unit has changes.
 */
export function fittedChangesMd(rows: UnitRow[], fits: (lines: string[]) => boolean, leftOut: string): string[] {
  for (const cap of [Number.POSITIVE_INFINITY, 200, 100, 50, 20, 5, 0]) {
    const md = changesMd(rows, cap);
    const lines = md ? ['', ...md.split('\n')] : [];
    if (fits(lines)) return lines;
  }
  return ['', leftOut];
}
