import { describe, expect, it } from 'vitest';
import { jobSummary, mermaid, SUMMARY_BUDGET } from '../src/actions/summary.js';
import type { RunReport } from '../src/core/ops/report.js';

function report(n: number, detail: string): RunReport {
  return {
    operation: 'reconcile',
    environment: 'prod',
    run: 'r1',
    source: 'abc',
    rows: Array.from({ length: n }, (_, i) => ({
      unit: `u${i}`,
      kind: 'Command',
      result: i % 7 === 0 ? 'uncertain' : 'executed',
      detail: i % 7 === 0 ? detail : '',
    })),
    problems: [],
    exit: 4,
  };
}

describe('job summary', () => {
  it('stays under the 1 MiB GitHub drops whole, and says what it left out', () => {
    const big = report(20_000, `x | y\n${'z'.repeat(200)}`);
    const text = jobSummary(big, { runUrl: 'https://example.invalid/run/1' });
    expect(Buffer.byteLength(text)).toBeLessThanOrEqual(SUMMARY_BUDGET);
    expect(text).toMatch(/\| … \| \| \| \d+ more units not shown: the summary is kept under 1 MiB \|/);
    // Cells cannot break the table: pipes escaped, newlines as <br>.
    expect(text).toContain('x \\| y<br>zzz');
  });

  it('keeps a small report whole, with the graph coloured by result', () => {
    const r = report(3, 'run r0 was executing it');
    const graph = { waves: [['u0', 'u1'], ['u2']], edges: [['u0', 'u2']] as [string, string][] };
    const text = jobSummary(r, { graph });
    expect(text).not.toContain('more units not shown');
    expect(text).toContain('| u0 | Command | uncertain | run r0 was executing it |');
    expect(text).toContain('### What to do next');
    expect(text).toContain('nyl recover -e prod --unit u0 --retry');
    const m = mermaid(r, graph);
    expect(m).toContain('subgraph w1["wave 1"]');
    expect(m).toContain('u_u0 --> u_u2');
    expect(m).toContain('class u_u0 uncertain');
    expect(m).toContain('class u_u1 executed');
    // A graph too large to read is left out rather than cut.
    expect(mermaid(report(400, ''), { waves: [Array.from({ length: 400 }, (_, i) => `u${i}`)], edges: [] })).toBe('');
  });
});
