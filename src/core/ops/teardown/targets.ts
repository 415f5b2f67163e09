import type { DesiredUnit } from '../../resolve/desired.js';
import type { EnvState } from '../../state/read.js';
import { readDesiredDocs } from '../../state/read.js';
import { evaluateAll } from '../evaluate/evaluate.js';
import type { TakenOver } from '../recovery/takeover.js';
import { refuseUnreadable } from '../workspace/unreadable.js';
import { type OpContext, whereOf } from '../workspace/workspace.js';

/**
 * What a teardown destroys: every unit with recorded state, with the document it was last
 * resolved to (the desired ref's; the configuration's for a unit that has none there).
 */
export async function teardownTargets(ctx: OpContext, loaded: TakenOver): Promise<Map<string, DesiredUnit>> {
  const { sel, state } = loaded;
  const names = [...state.observed.keys()];
  const { docs, unreadable } = await readDesiredDocs(ctx.repo, state, names);
  refuseUnreadable({ ...state, unreadable }, whereOf(ctx, sel.environment));
  const current = evaluateAll(sel, state);
  for (const n of names) {
    const d = current.get(n)?.desired;
    if (!docs.has(n) && d) docs.set(n, d);
  }
  return docs;
}

/** The units whose tools a teardown runs: a held unit, or a Command without destroy, runs nothing. */
export function destroying(docs: Map<string, DesiredUnit>, state: EnvState): DesiredUnit[] {
  return [...docs.values()].filter(
    (d) => !state.observed.get(d.name)?.hold && (d.kind !== 'Command' || d.spec.destroy !== undefined),
  );
}

/** Reverse dependency order: a unit goes only after every unit that needs it has gone. */
export function reverseWaves(docs: Map<string, DesiredUnit>): string[][] {
  const level = new Map<string, number>();
  const depth = (n: string, seen = new Set<string>()): number => {
    const known = level.get(n);
    if (known !== undefined) return known;
    if (seen.has(n)) return 0;
    seen.add(n);
    const deps = (docs.get(n)?.needs ?? []).filter((d) => docs.has(d));
    const d = deps.length ? Math.max(...deps.map((x) => depth(x, seen))) + 1 : 0;
    level.set(n, d);
    return d;
  };
  const waves: string[][] = [];
  for (const n of [...docs.keys()].sort()) {
    const d = depth(n);
    waves[d] = [...(waves[d] ?? []), n];
  }
  return waves.filter(Boolean).reverse();
}
