import type { SiteEnvironment } from '../core/ops/site/gather.js';

/** Units per page: index.html has the first, units-2.html… the rest (a row can take ~1.5 kB). */
export const UNITS_PER_PAGE = 250;

export const unitsPageName = (n: number) => (n === 1 ? 'index.html' : `units-${n}.html`);

/** Each environment's page of each unit, computed once. */
const pageOfUnit = new WeakMap<SiteEnvironment, Map<string, string>>();

/** The environment page (in env/ENV/) that has the unit's row. */
export function unitPage(e: SiteEnvironment, unit: string): string {
  let pages = pageOfUnit.get(e);
  if (!pages) {
    pages = new Map(e.status.rows.map((r, i) => [r.unit, unitsPageName(Math.floor(i / UNITS_PER_PAGE) + 1)]));
    pageOfUnit.set(e, pages);
  }
  return pages.get(unit) ?? 'index.html';
}
