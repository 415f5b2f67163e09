import type { SiteEnvironment, SiteRun } from '../../src/core/ops/site/gather.js';

/**
 * A made-up environment of `units` units, every one failed with a long detail (and the problem
 * `status` gives for it), 20 drifted resources each, 3 outputs each; and `runs` runs, the newest of
 * which ran every unit, changed 20 resources of each and kept a log of each.
 */
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
    drift: {
      counts: { create: 0, update: 20, replace: 0, delete: 0, read: 0 },
      resources: Array.from({ length: 20 }, (_, i) => ({
        address: `${unit}.aws_instance.node[${i}]`,
        action: 'update' as const,
      })),
    },
  }));
  const problems = names.map((unit) => ({
    code: 'NYL-UNIT-FAILED',
    severity: 'warning' as const,
    subject: unit,
    message: `unit ${unit} failed in run r-1: ${detail}`,
    fix: `fix the cause; the next \`nyl reconcile -e ${name}\` runs it again`,
    exit: 1 as const,
  }));
  const changes = (unit: string) => ({
    resources: Array.from({ length: 20 }, (_, i) => [`${unit}.aws_instance.node[${i}]`, 'update']),
  });
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
      units: ran.map((unit) => ({
        unit,
        result: 'failed',
        kind: 'Terraform',
        exitCode: 1,
        reason: detail,
        changes: changes(unit),
      })),
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
    status: { operation: 'status', environment: name, source: 'b'.repeat(40), rows, problems, exit: 0 },
    facets: names.map((unit) => ({
      unit,
      receiptAt: '2024-12-31T00:00:00Z',
      condition: { state: 'failed', reason: detail, run: 'r-1', since: '2025-01-01T00:00:00Z' },
    })),
    outputs: names.map((unit) => ({
      unit,
      outputs: { id: `${unit}-id`, arn: `arn:aws:ec2:eu-west-1:123456789012:instance/${unit}`, ip: '10.0.0.1' },
    })),
    runs: Array.from({ length: runs }, (_, i) => run(i)),
  };
}
