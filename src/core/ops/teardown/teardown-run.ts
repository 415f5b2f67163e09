import type { DesiredUnit } from '../../resolve/desired.js';
import { runWave } from '../runs/wave.js';
import type { UnitRow } from '../workspace/report.js';
import { destroyUnit } from './destroy.js';
import type { Teardown } from './model.js';
import { reverseWaves } from './targets.js';

/** The units of a wave that go; a held one, or one still needed by a unit that stays, does not. */
function goes(t: Teardown, wave: string[]): DesiredUnit[] {
  const go: DesiredUnit[] = [];
  for (const n of wave) {
    const d = t.docs.get(n) as DesiredUnit;
    const hold = t.state.observed.get(n)?.hold;
    const needers = [...t.docs.values()].filter((x) => x.needs.includes(n) && t.stopped.has(x.name)).map((x) => x.name);
    if (hold)
      t.rows.set(n, { unit: n, kind: d.kind, result: 'held', detail: `held by ${hold.by}: resume it to tear it down` });
    else if (needers.length)
      t.rows.set(n, { unit: n, kind: d.kind, result: 'blocked', detail: `still needed by ${needers.join(', ')}` });
    else go.push(d);
    if (hold || needers.length) t.stopped.add(n);
  }
  return go;
}

/** The destroys, wave by wave in reverse dependency order, with the wave machinery a reconcile runs on. */
export async function destroyWaves(t: Teardown): Promise<void> {
  const waves = reverseWaves(t.docs);
  for (const [index, wave] of waves.entries()) {
    const go = goes(t, wave);
    if (!go.length) continue;
    await runWave(
      t.ctx,
      t.writer,
      { index, docs: go, parallelism: t.parallelism },
      {
        run: (d, track) => destroyUnit(t, d, track),
        skip: (d) => {
          t.rows.set(d.name, {
            unit: d.name,
            kind: d.kind,
            result: 'skipped',
            detail: 'not started: the run was cancelled',
          });
          t.stopped.add(d.name);
        },
      },
    );
  }
}

/** The teardown's rows in the order it went. */
export function teardownRows(t: Teardown): UnitRow[] {
  return reverseWaves(t.docs)
    .flat()
    .map((n) => t.rows.get(n) as UnitRow)
    .filter(Boolean);
}
