import type { SiteEnvironment, SiteRun } from '../../src/core/ops/site/gather.js';

/** A made-up environment of `units` units (every one failed, with a long detail) and `runs` runs; the newest ran every unit and kept a log of each. */
export function scaledEnvironment(name: string, units: number, runs: number): SiteEnvironment {
  const names = Array.from({ length: units }, (_, i) => `module.svc_${String(i).padStart(4, '0')}`);
  const detail = `exited with 1: ${'Error: provider returned 503 while refreshing; '.repeat(6)}`;
  const rows = names.map((unit) => ({
    unit,
    kind: 'Terraform',
    state: 'failed',
    receipt: 'current',
    lastRun: 'r-1',
    detail,
  }));
  const run = (i: number): SiteRun => {
    const ran = i === 0 ? names : names.slice(0, 3);
    return {
      line: {
        run: `r-${runs - i}`,
        operation: 'reconcile',
        state: 'failed',
        place: 'history' as const,
        startedAt: '2025-01-01T00:00:00Z',
        who: 'ci@runner',
        source: 'b'.repeat(40),
        counts: { failed: ran.length },
        detail: '',
      },
      facts: {},
      states: [],
      units: ran.map((unit) => ({ unit, result: 'failed', kind: 'Terraform', exitCode: 1, reason: detail })),
      logs: ran.map((unit) => ({
        unit,
        result: 'failed',
        kind: 'log' as const,
        text: `${unit} <plan> & "apply"\n`.repeat(60),
      })),
    };
  };
  return {
    name,
    after: [],
    production: false,
    status: { operation: 'status', environment: name, source: 'b'.repeat(40), rows, problems: [], exit: 0 },
    facets: names.map((unit) => ({
      unit,
      receiptAt: '2024-12-31T00:00:00Z',
      condition: { state: 'failed', reason: detail, run: 'r-1', since: '2025-01-01T00:00:00Z' },
    })),
    outputs: names.slice(0, 50).map((unit) => ({ unit, outputs: { id: `${unit}-id` } })),
    runs: Array.from({ length: runs }, (_, i) => run(i)),
  };
}
