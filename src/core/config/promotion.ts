import type { Config } from './model.js';

/**
 * An environment's promotion gate: its own `promotion`, or the place it has in its group's
 * `promote` list (after the environment before it).
 */
export function promotionOf(cfg: Config, environment: string): { promotion?: { after: string[]; verified: boolean } } {
  const env = cfg.environments.get(environment);
  const own = env?.doc.promotion;
  if (own) return { promotion: { after: own.after, verified: own.verified === true } };
  for (const g of cfg.groups.values()) {
    const list = g.doc.promote ?? [];
    const i = list.indexOf(environment);
    if (i > 0) return { promotion: { after: [list[i - 1] as string], verified: false } };
  }
  return {};
}

/** Every environment, each after the ones its promotion gate names (then by name). */
export function promotionOrder(cfg: Config): string[] {
  const out: string[] = [];
  const visit = (e: string, seen: Set<string>) => {
    if (out.includes(e) || seen.has(e)) return;
    seen.add(e);
    for (const a of promotionOf(cfg, e).promotion?.after ?? []) if (cfg.environments.has(a)) visit(a, seen);
    out.push(e);
  };
  for (const e of [...cfg.environments.keys()].sort()) visit(e, new Set());
  return out;
}
