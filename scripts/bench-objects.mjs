// Objects written by transitions, in a local repository (`--local`): an environment is reconciled,
// then one unit changes per commit and each reconcile lands one transition. Per transition: the
// objects written (loose files, objects in new packs) against the objects that stay reachable; and
// after many transitions, whether the repository stays bounded (loose files, packs).
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  commitAll,
  countObjects,
  ENV_NAME,
  generateConfig,
  initRepo,
  log,
  nylJson,
  reachableObjects,
  tempDir,
} from './bench-lib.mjs';

/** gc --auto's own thresholds (git's defaults for gc.auto and gc.autoPackLimit). */
export const GC_AUTO_LOOSE = 6700;
export const GC_AUTO_PACKS = 50;

export function benchObjects(ctx, { units, transitions }) {
  const dir = tempDir(`objects-${units}`);
  initRepo(dir, units);
  const first = nylJson(ctx.cli, dir, ['reconcile', '-e', ENV_NAME, '--local']);
  ctx.check(first.status === 0, `objects: first reconcile exit ${first.status}`);
  log(`objects: ${transitions} one-unit transitions of a ${units}-unit environment (--local)`);
  const per = [];
  const at = {};
  const tags = {};
  for (let i = 1; i <= transitions; i++) {
    tags[i % units] = `t${i}`;
    writeFileSync(join(dir, 'nyl.yaml'), generateConfig(units, { tags }));
    commitAll(dir, `bench: transition ${i}`);
    // Counted around nyl's reconcile only: the bench's own commit above writes loose objects too.
    const before = countObjects(dir);
    const reach0 = reachableObjects(dir);
    const r = nylJson(ctx.cli, dir, ['reconcile', '-e', ENV_NAME, '--local']);
    const executed = (r.report.rows ?? []).filter((x) => x.result === 'executed').length;
    ctx.check(r.status === 0 && executed === 1, `objects: transition ${i}: exit ${r.status}, ${executed} executed`);
    const after = countObjects(dir);
    const reachable = reachableObjects(dir) - reach0;
    const loose = after.loose - before.loose;
    const packed = after.inPack - before.inPack;
    // A gc during the command repacks what was there before: its written count means nothing.
    const gc = loose < 0 || packed < 0 || after.packs < before.packs;
    per.push({ loose, packed, packs: after.packs - before.packs, reachable, gc });
    if (i === Math.ceil(transitions / 2)) at.half = { transitions: i, ...after };
  }
  at.end = { transitions, ...countObjects(dir), reachable: reachableObjects(dir) };
  ctx.drop(dir);
  const clean = per.filter((p) => !p.gc && p.reachable > 0);
  return {
    units,
    transitions,
    per,
    writtenPerReachable: clean.map((p) => (p.loose + p.packed) / p.reachable),
    loosePerTransition: clean.map((p) => p.loose),
    writtenPerTransition: clean.map((p) => p.loose + p.packed),
    reachablePerTransition: clean.map((p) => p.reachable),
    gcTransitions: per.filter((p) => p.gc).length,
    half: at.half,
    end: at.end,
  };
}
