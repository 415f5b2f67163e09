// `--sizes LIST`: the local scaling table of earlier versions of the benchmark. For each size, a
// first reconcile (`--local`), then no-op reconcile, status and plan in rounds, every one checked
// to report each unit current and to write no ref. Not part of the default run: rows 1 and 4 of
// the targets table measure the same commands against their floors.
import { ENV_NAME, initRepo, log, median, nylJson, round, stateRefs, tempDir } from './bench-lib.mjs';

const READS = [
  ['noop', 'reconcile', 'result'],
  ['status', 'status', 'result'],
  ['plan', 'plan', 'result'],
];

function summary(samples) {
  const ms = samples.map((s) => s.ms);
  const procs = (k) => [...new Set(samples.map((s) => s.report.stats?.[k]))].join('/');
  return {
    runs: ms.length,
    medianMs: round(median(ms)),
    minMs: round(Math.min(...ms)),
    maxMs: round(Math.max(...ms)),
    samplesMs: ms.map((x) => round(x)),
    gitProcesses: procs('gitProcesses'),
    toolProcesses: procs('toolProcesses'),
  };
}

export function benchLocalSizes(ctx, { sizes }) {
  const out = [];
  for (const n of sizes) {
    const dir = tempDir(`local-${n}`);
    initRepo(dir, n);
    log(`local N=${n}: first reconcile, then no-op reconcile, status, plan × ${ctx.repeat}`);
    const first = nylJson(ctx.cli, dir, ['reconcile', '-e', ENV_NAME, '--local']);
    const executed = (first.report.rows ?? []).filter((r) => r.result === 'executed').length;
    ctx.check(
      first.status === 0 && executed === n,
      `local N=${n} first reconcile: exit ${first.status}, ${executed} executed`,
    );
    const samples = Object.fromEntries(READS.map(([k]) => [k, []]));
    for (let i = 0; i < ctx.repeat; i++)
      for (const [k, command, field] of READS) {
        const before = stateRefs(dir);
        const s = nylJson(ctx.cli, dir, [command, '-e', ENV_NAME, '--local']);
        const rows = s.report.rows ?? [];
        const other = rows.filter((r) => r[field] !== 'current').length;
        ctx.check(
          s.status === 0 && rows.length === n && !other,
          `local N=${n} ${command}: exit ${s.status}, ${other} not current`,
        );
        ctx.check(stateRefs(dir) === before, `local N=${n} ${command}: refs/nyl/${ENV_NAME}/* changed`);
        samples[k].push(s);
      }
    out.push({
      units: n,
      first: summary([first]),
      ...Object.fromEntries(READS.map(([k]) => [k, summary(samples[k])])),
    });
    ctx.drop(dir);
  }
  return out;
}
