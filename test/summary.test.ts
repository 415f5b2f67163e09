import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import {
  jobSummary,
  mermaid,
  opSummary,
  RESULT_COLORS,
  SUMMARY_BUDGET,
  TABLE_OPEN_MAX,
  unitAnnotations,
  WORKFLOWS,
} from '../src/actions/summary.js';
import type { RunReport, UnitRow } from '../src/core/ops/workspace/report.js';
import type { Problem } from '../src/core/util/errors.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));

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

const row = (unit: string, result: string, detail = ''): UnitRow => ({ unit, kind: 'Command', result, detail });

/** The report of the issue: 1 failed, 1 uncertain, 1 awaiting approval, 5 executed. */
function mixed(extraRows: UnitRow[] = []): RunReport {
  return {
    operation: 'reconcile',
    environment: 'dev',
    run: 'r-42',
    source: 'c0ffee',
    desired: 'd1',
    observed: 'o1',
    rows: [
      row('net', 'executed'),
      row('db', 'failed', 'exited with 1: connection refused'),
      row('cache', 'executed'),
      row('migrate', 'uncertain', 'run r-41 was executing it when its lease was broken'),
      row('api', 'executed'),
      row(
        'dns',
        'awaiting-approval',
        'drifted (record changed); re-running it is not safe (recovery policy manual): approve with --approve dns',
      ),
      row('web', 'executed'),
      row('cdn', 'executed'),
      ...extraRows,
    ],
    problems: [],
    exit: 4,
    extra: [
      ['plan', { token: 'p1', units: 3 }],
      ['approved', true],
    ],
  };
}

const graphOf = (r: RunReport) => ({ waves: [r.rows.map((x) => x.unit)], edges: [] as [string, string][] });

describe('job summary', () => {
  it('stays under the 1 MiB GitHub drops whole, and says what it left out', () => {
    const big = report(20_000, `x | y\n${'z'.repeat(200)}`);
    const text = jobSummary(big, { runUrl: 'https://example.invalid/run/1' });
    expect(Buffer.byteLength(text)).toBeLessThanOrEqual(SUMMARY_BUDGET);
    expect(text).toMatch(/\| … \| \| \| \d+ more units not shown: the summary is kept under 1 MiB \|/);
    // Cells cannot break the table: pipes escaped, newlines as <br>.
    expect(text).toContain('x \\| y<br>zzz');
    // What needs a person is listed up to a point, then counted.
    expect(text).toMatch(/^- … and \d+ more units that need a person: see the table$/m);
    // The facts come after the table, and survive the cut.
    expect(text).toContain('- **run**: `r1`');
    // A smaller budget cuts the table sooner, never the heading or the list.
    const small = jobSummary(big, {}, 200_000);
    expect(Buffer.byteLength(small)).toBeLessThanOrEqual(200_000);
    expect(small.startsWith('## nyl reconcile prod: 2858 uncertain, 17142 executed\n')).toBe(true);
    expect(small).toContain('### Needs a person');
  });

  it('cuts a Terraform unit’s resource changes to a quarter of the budget, counting what it left out', () => {
    const resources = Array.from({ length: 20_000 }, (_, i) => ({
      address: `terraform_data.r[${i}]`,
      action: 'create' as const,
      digest: 'x',
    }));
    const r: RunReport = {
      ...report(3, ''),
      rows: [
        {
          unit: 'net',
          kind: 'Terraform',
          result: 'executed',
          detail: '+20000 ~0 -/+0 -0',
          changes: { counts: { create: 20_000, update: 0, replace: 0, delete: 0, read: 0 }, resources, outputs: [] },
        },
      ],
    };
    const text = jobSummary(r);
    expect(Buffer.byteLength(text)).toBeLessThanOrEqual(SUMMARY_BUDGET);
    expect(text).toContain('#### Resource changes');
    expect(text).toContain('- `+` `terraform_data.r[0]`');
    expect(text).toMatch(/- … \d+ more resource changes not shown here/);
    expect(text).not.toContain('terraform_data.r[19999]');
    // With a tiny budget the section gives way whole, saying so.
    expect(jobSummary(r, {}, 400)).toContain('_The resource changes are left out: the summary is kept under 1 MiB._');
  });

  it('keeps the graph when it fits and says when it is left out', () => {
    const r = report(200, 'd');
    const graph = graphOf(r);
    expect(jobSummary(r, { graph })).toContain('```mermaid');
    // The table fills a tight budget first; the graph then gives way, saying so.
    const tight = jobSummary(r, { graph }, 20_000);
    expect(tight).not.toContain('```mermaid');
    expect(tight).toContain('_The wave graph is left out: the summary is kept under 1 MiB._');
    const many = report(301, '');
    expect(jobSummary(many, { graph: graphOf(many) })).toContain('_The wave graph is left out above 300 units._');
  });

  it('keeps a small report whole, with the graph coloured by result', () => {
    const r = report(3, 'run r0 was executing it');
    const graph = { waves: [['u0', 'u1'], ['u2']], edges: [['u0', 'u2']] as [string, string][] };
    const text = jobSummary(r, { graph });
    expect(text).not.toContain('more units not shown');
    expect(text).not.toContain('<details>');
    expect(text).toContain('| u0 | Command | uncertain | run r0 was executing it |');
    expect(text).toContain('### Needs a person');
    expect(text).toContain('`nyl recover -e prod --unit u0 --retry --reason <why>`');
    const m = mermaid(r, graph);
    expect(m).toContain('subgraph w1["wave 1"]');
    expect(m).toContain('u_u0 --> u_u2');
    expect(m).toContain('class u_u0 uncertain');
    expect(m).toContain('class u_u1 executed');
    // A graph too large to read is left out rather than cut.
    expect(mermaid(report(400, ''), { waves: [Array.from({ length: 400 }, (_, i) => `u${i}`)], edges: [] })).toBe('');
  });

  it('puts the outcome in words first, then what needs a person, the table, the facts, the graph', () => {
    const r = mixed();
    const text = jobSummary(r, { runUrl: 'https://github.com/o/r/actions/runs/9', graph: graphOf(r) });
    const lines = text.split('\n');
    expect(lines[0]).toBe('## nyl reconcile dev: 1 failed, 1 uncertain, 1 awaiting approval, 5 executed');
    const at = (s: string) => {
      const i = text.indexOf(s);
      expect(i, s).toBeGreaterThanOrEqual(0);
      return i;
    };
    const order = [
      at('## nyl reconcile dev:'),
      at('### Needs a person'),
      at('- **db** (Command) failed'),
      at('- **migrate** (Command) uncertain'),
      at('- **dns** (Command) awaiting approval'),
      at('### Units (8)'),
      at('| Unit | Kind | Result | Detail |'),
      at('### Run'),
      at('- **run**: `r-42`'),
      at('### Waves'),
      at('```mermaid'),
    ];
    expect([...order].sort((a, b) => a - b)).toEqual(order);
    // Within the list: failed, then uncertain, then awaiting approval (the heading's order).
    // Each unit says its next step in the workflows' terms.
    expect(text).toContain(
      '- **dns** (Command) awaiting approval: drifted (record changed); re-running it is not safe (recovery policy manual): approve with --approve dns<br>next: once re-running it is safe, run the **deploy** workflow with `environment: dev`, `approve: dns` (CLI: `nyl reconcile -e dev --approve dns`)',
    );
    expect(text).toContain(
      'run the **recover** workflow with `environment: dev`, `action: retry`, `unit: migrate`, `reason: <why>`',
    );
    // Facts: typed values as canonical JSON, the exit code, the workflow run.
    expect(text).toContain('- **plan**: `{"token":"p1","units":3}`');
    expect(text).toContain('- **approved**: `true`');
    expect(text).toContain('- **exit code**: `4` (uncertain)');
    expect(text).toContain('- **workflow run**: https://github.com/o/r/actions/runs/9');
    // A run with nothing for a person has no such section.
    const fine = jobSummary({ ...r, rows: r.rows.filter((x) => x.result === 'executed'), exit: 0 });
    expect(fine.split('\n')[0]).toBe('## nyl reconcile dev: 5 executed');
    expect(fine).not.toContain('### Needs a person');
  });

  it('counts every result, attention first, and names errors about the whole run', () => {
    const r: RunReport = {
      ...mixed([
        row('x', 'blocked', 'needs db (failed)'),
        row('y', 'held', 'held by ann: migration'),
        row('z', 'current'),
      ]),
      problems: [
        { severity: 'error', code: 'NYL-RUN-CANCELLED', message: 'the run was cancelled', exit: 4 },
        { severity: 'warning', code: 'NYL-CLOCK-SKEW', message: 'clocks differ', exit: 0 },
      ],
    };
    const text = jobSummary(r);
    expect(text.split('\n')[0]).toBe(
      '## nyl reconcile dev: 1 failed, 1 uncertain, 1 awaiting approval, 1 held, 1 blocked, 5 executed, 1 current (NYL-RUN-CANCELLED)',
    );
    expect(text).toContain('- **x** (needs db (failed)) is blocked: it runs once what it needs is resolved');
    expect(text).toContain('- **error NYL-RUN-CANCELLED**: the run was cancelled');
    // Warnings come after what needs a person, before the table.
    expect(text.indexOf('### Notes')).toBeGreaterThan(text.indexOf('### Needs a person'));
    expect(text.indexOf('### Notes')).toBeLessThan(text.indexOf('### Units'));
    expect(text).toContain('- **warning NYL-CLOCK-SKEW**: clocks differ');
  });

  it('says superseded when an older source was not applied', () => {
    const r: RunReport = {
      operation: 'reconcile',
      environment: 'dev',
      source: 'old',
      rows: [],
      problems: [
        {
          severity: 'warning',
          code: 'NYL-SOURCE-OLDER',
          subject: 'dev',
          message:
            'source old is older than new, which dev was last reconciled from: it is not applied, and nothing was executed',
          fix: 'nothing to do: a newer configuration was applied after this commit; to apply this one on purpose, `nyl reconcile -e dev --allow-older-source --reason <text>`',
          exit: 0,
        },
      ],
      exit: 0,
    };
    const text = jobSummary(r);
    expect(text.split('\n')[0]).toBe('## nyl reconcile dev: superseded (source older than the recorded one)');
    expect(text).not.toContain('### Units');
    expect(text).toContain(
      'run the **deploy** workflow with `environment: dev`, `allow-older-source: true`, `reason: <why>`',
    );
  });

  it('collapses a long table in <details>, keeping what needs a person in view', () => {
    const r = mixed(Array.from({ length: TABLE_OPEN_MAX }, (_, i) => row(`extra${i}`, 'current')));
    const text = jobSummary(r);
    expect(text).toContain(
      `### Units (${r.rows.length})\n\n<details><summary>All ${r.rows.length} units</summary>\n\n| Unit |`,
    );
    expect(text).toMatch(/\| extra19 \| Command \| current \| {2}\|\n\n<\/details>\n/);
    expect(text.indexOf('### Needs a person')).toBeLessThan(text.indexOf('<details>'));
    // At the limit it stays open.
    const open = mixed(Array.from({ length: TABLE_OPEN_MAX - 8 }, (_, i) => row(`extra${i}`, 'current')));
    expect(open.rows).toHaveLength(TABLE_OPEN_MAX);
    expect(jobSummary(open)).not.toContain('<details>');
  });

  it('keeps text from units inert: no HTML comment, no closing tag, no broken table', () => {
    const hostile = 'exited with 1: <!-- comment starts </details> <img src=x onerror=alert(1)> | pipe';
    const r: RunReport = {
      ...mixed(Array.from({ length: 30 }, (_, i) => row(`e${i}`, 'executed'))),
      rows: [row('db', 'failed', hostile), ...Array.from({ length: 30 }, (_, i) => row(`e${i}`, 'executed'))],
      problems: [{ severity: 'error', code: 'NYL-INTERNAL', message: '<!-- hidden', fix: '<b>bold</b>', exit: 1 }],
      extra: [['note', '<!-- x `y` -->']],
    };
    const text = jobSummary(r);
    expect(text).not.toContain('<!--');
    expect(text).not.toContain('<img');
    expect(text).not.toContain('<b>');
    // The only </details> is the one closing the table.
    expect(text.match(/<\/details>/g)).toHaveLength(1);
    expect(text).toContain('&lt;!-- comment starts &lt;/details&gt;');
    expect(text).toContain('\\| pipe');
    // A fact that holds markup is shown as inert text, not in a code span.
    expect(text).toContain('- **note**: &lt;!-- x `y` --&gt;');
  });

  it('links the drift issue of a verify', () => {
    const r: RunReport = {
      operation: 'verify',
      environment: 'dev',
      source: 's',
      rows: [row('a', 'drifted', 'a is bad'), row('b', 'in-sync')],
      problems: [
        {
          severity: 'warning',
          code: 'NYL-VERIFY-DRIFT',
          subject: 'a',
          message: 'unit a drifted: a is bad; the next reconcile re-executes it (driftRepair: converge)',
          fix: 'run `nyl reconcile -e dev` to repair it',
          exit: 3,
        },
      ],
      exit: 3,
    };
    const text = jobSummary(r, { driftIssue: { number: 12, url: 'https://github.com/o/r/issues/12' } });
    expect(text.split('\n')[0]).toBe('## nyl verify dev: 1 drifted, 1 in sync');
    expect(text).toContain('Drift is tracked in [issue #12](https://github.com/o/r/issues/12).');
    expect(text).toContain('- **drift issue**: [#12](https://github.com/o/r/issues/12)');
    // The problem about the unit is shown with it, once; not again among the notes.
    expect(text).toContain('- **a** (Command) drifted: a is bad<br>**warning NYL-VERIFY-DRIFT** (a)');
    expect(text).not.toContain('### Notes');
    expect(text).toContain('next: the next deploy repairs it: run the **deploy** workflow with `environment: dev`');
    // Only http(s) links.
    const odd = jobSummary(r, { driftIssue: { number: 12, url: 'javascript:alert(1)' } });
    expect(odd).not.toContain('javascript:');
    expect(odd).toContain('Drift is tracked in issue #12.');
  });

  it('annotates failed, uncertain and awaiting-approval units a problem does not already name', () => {
    const r: RunReport = {
      ...mixed(),
      problems: [
        {
          severity: 'warning',
          code: 'NYL-RUN-LATE-CHECKPOINT',
          subject: 'migrate',
          message: 'late checkpoint',
          exit: 4,
        },
      ],
    };
    const notes = unitAnnotations(r);
    expect(notes.map((n) => [n.level, n.title])).toEqual([
      ['error', 'NYL-UNIT-FAILED (db)'],
      ['warning', 'NYL-UNIT-AWAITING-APPROVAL (dns)'],
    ]);
    expect(notes[0]?.message).toBe(
      'db failed: exited with 1: connection refused\nnext: fix the cause, then run the deploy workflow with environment: dev again (or push the fix); if the unit is not retryable, run the recover workflow with environment: dev, action: retry, unit: db, reason: <why> before that',
    );
    expect(unitAnnotations({ ...r, problems: [] }).map((n) => n.title)).toContain('NYL-UNIT-UNCERTAIN (migrate)');
  });

  it('summarizes an operation that is not a run: outcome, problems, typed facts', () => {
    const text = opSummary(
      {
        operation: 'recover',
        environment: 'dev',
        outcome: 'done',
        facts: [
          ['imported', 'run r-1'],
          ['units', ['a', 'b']],
          ['count', 2],
        ],
        problems: [{ severity: 'error', code: 'NYL-LEASE-BROKEN', message: 'the lease is broken', exit: 2 }],
        exit: 2,
      },
      { runUrl: 'https://github.com/o/r/actions/runs/1' },
    );
    expect(text).toBe(
      [
        '## nyl recover dev: done',
        '',
        '### Needs a person',
        '',
        '- **error NYL-LEASE-BROKEN**: the lease is broken<br>next: run the **recover** workflow with `environment: dev`, `action: import`, `reason: <why>`',
        '',
        '### Facts',
        '',
        '- **imported**: `run r-1`',
        '- **units**: `["a","b"]`',
        '- **count**: `2`',
        '- **workflow run**: https://github.com/o/r/actions/runs/1',
        '',
      ].join('\n'),
    );
  });
});

// --- next steps name what the shipped workflows take --------------------------------------------

interface DispatchInput {
  type?: string;
  options?: string[];
}

/** examples/workflows/<file>: its workflow_dispatch inputs. */
function dispatchInputs(): Map<string, Record<string, DispatchInput>> {
  const dir = join(ROOT, 'examples', 'workflows');
  const out = new Map<string, Record<string, DispatchInput>>();
  for (const f of readdirSync(dir).filter((x) => x.endsWith('.yml'))) {
    const doc = parse(readFileSync(join(dir, f), 'utf8')) as { on?: { workflow_dispatch?: { inputs?: object } } };
    const wd = doc.on?.workflow_dispatch;
    out.set(f, (wd?.inputs ?? {}) as Record<string, DispatchInput>);
  }
  return out;
}

/** Every `the **X** workflow with `k: v`, …` (Markdown) or `the X workflow with k: v, …` (plain) a text names. */
function workflowRefs(text: string, md: boolean): { workflow: string; inputs: [string, string][] }[] {
  const refs: { workflow: string; inputs: [string, string][] }[] = [];
  const re = md
    ? /the \*\*([a-z-]+)\*\* workflow(?: with ((?:`[^`]+`(?:, )?)+))?/g
    : /the ([a-z-]+) workflow(?: with ((?:[a-z-]+: [^,\n()]*?(?:, |(?= again| before| and| from| with| \(|$|\n)))+))?/g;
  for (const m of text.matchAll(re)) {
    const list = m[2] ?? '';
    const pairs = md
      ? [...list.matchAll(/`([^`]+)`/g)].map((x) => x[1] as string)
      : list
          .split(/, (?=[a-z-]+: )/)
          .map((s) => s.trim())
          .filter(Boolean);
    refs.push({
      workflow: m[1] as string,
      inputs: pairs.map((p) => {
        const i = p.indexOf(': ');
        return [p.slice(0, i), p.slice(i + 2)] as [string, string];
      }),
    });
  }
  return refs;
}

describe('next steps', () => {
  const workflows = dispatchInputs();
  const env = 'dev';
  const p = (code: string, severity: Problem['severity'] = 'error', fix?: string): Problem => ({
    severity,
    code,
    subject: env,
    message: code,
    fix,
    exit: severity === 'error' ? 2 : 0,
  });
  const reports: RunReport[] = [
    mixed(),
    {
      ...mixed([
        row('dns2', 'awaiting-approval', 'approve with --approve dns2'),
        row(
          'repaired',
          'awaiting-approval',
          'repaired with nyl exec while held: approve the plan with `nyl plan -e dev` then `nyl reconcile -e dev --plan <token>`',
        ),
        row('re', 'awaiting-approval', 'reapplying it is not safe (recovery policy manual): approve with --approve re'),
        row('manual', 'drifted', 'gone (driftRepair: manual)'),
        row('h', 'held', 'held by ann: x'),
        row('b', 'blocked', 'needs db (failed)'),
      ]),
      problems: [
        p('NYL-LEASE-HELD'),
        p('NYL-PLAN-STALE'),
        p('NYL-RUN-UNIMPORTED', 'warning'),
        p('NYL-SOURCE-DIVERGED'),
      ],
    },
    {
      operation: 'verify',
      environment: env,
      source: 's',
      rows: [row('a', 'drifted', 'x'), row('c', 'drifted', 'y'), row('f', 'failed', 'check crashed')],
      problems: [
        {
          ...p('NYL-VERIFY-DRIFT', 'warning', 'run `nyl reconcile -e dev --approve a` once re-running it is safe'),
          subject: 'a',
        },
        { ...p('NYL-VERIFY-DRIFT', 'warning', 'run `nyl reconcile -e dev` to repair it'), subject: 'c' },
      ],
      exit: 3,
    },
    {
      operation: 'reconcile',
      environment: env,
      source: 's',
      rows: [],
      problems: [p('NYL-SOURCE-OLDER', 'warning', 'nothing to do')],
      exit: 0,
    },
  ];
  const texts = reports.map((r) => jobSummary(r));
  const plain = reports.flatMap((r) => unitAnnotations(r).map((a) => a.message));
  const ops = [
    opSummary({
      operation: 'recover',
      environment: env,
      outcome: 'refused',
      facts: [],
      problems: [p('NYL-LEASE-BROKEN')],
      exit: 2,
    }),
    opSummary({
      operation: 'lease-break',
      environment: env,
      outcome: 'refused',
      facts: [],
      problems: [p('NYL-LEASE-HELD')],
      exit: 2,
    }),
  ];
  const refs = [
    ...[...texts, ...ops].flatMap((t) => workflowRefs(t, true)),
    ...plain.flatMap((t) => workflowRefs(t, false)),
  ];

  it('name them at all (the check below is not vacuous)', () => {
    const named = new Set(
      refs.flatMap((r) => r.inputs.map(([k, v]) => `${r.workflow} ${k}${k === 'action' ? `=${v}` : ''}`)),
    );
    expect([...named].sort()).toEqual(
      expect.arrayContaining([
        'deploy allow-older-source',
        'deploy approve',
        'deploy environment',
        'deploy plan',
        'deploy reason',
        'recover action=import',
        'recover action=lease-break',
        'recover action=retry',
        'recover environment',
        'recover reason',
        'recover unit',
      ]),
    );
    // Annotations (plain text) name them too.
    expect(workflowRefs(plain.join('\n'), false).length).toBeGreaterThan(3);
  });

  it('name only workflows, inputs and choices the shipped example workflows have', () => {
    for (const ref of refs) {
      const file = WORKFLOWS[ref.workflow as keyof typeof WORKFLOWS];
      expect(file, `workflow ${ref.workflow}`).toBeDefined();
      const inputs = workflows.get(file as string);
      expect(inputs, `${file} in examples/workflows`).toBeDefined();
      for (const [key, value] of ref.inputs) {
        const spec = inputs?.[key];
        expect(spec, `${file}: on.workflow_dispatch.inputs.${key}`).toBeDefined();
        if (spec?.type === 'choice') expect(spec.options, `${file}: ${key} has option ${value}`).toContain(value);
        if (spec?.type === 'boolean') expect(['true', 'false'], `${file}: ${key} is a boolean`).toContain(value);
      }
    }
  });
});

// --- colours ------------------------------------------------------------------------------------

/** WCAG 2 relative luminance of #rrggbb. */
function luminance(hex: string): number {
  const [r, g, b] = [1, 3, 5].map((i) => {
    const c = Number.parseInt(hex.slice(i, i + 2), 16) / 255;
    return c <= 0.04045 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4;
  }) as [number, number, number];
  return 0.2126 * r + 0.7152 * g + 0.0722 * b;
}

function contrast(a: string, b: string): number {
  const [hi, lo] = [luminance(a), luminance(b)].sort((x, y) => y - x) as [number, number];
  return (hi + 0.05) / (lo + 0.05);
}

describe('wave graph colours', () => {
  const RESULTS = [
    'executed',
    'recovered',
    'imported',
    'current',
    'failed',
    'uncertain',
    'blocked',
    'awaiting-approval',
    'drifted',
    'held',
    'in-sync',
    'pending',
    'removed',
    'destroyed',
    'skipped',
    'superseded',
  ];

  it('give every result a colour whose text has at least 4.5:1 contrast', () => {
    expect(Object.keys(RESULT_COLORS).sort()).toEqual([...RESULTS].sort());
    const r: RunReport = {
      operation: 'reconcile',
      environment: 'dev',
      source: 's',
      rows: RESULTS.map((x) => row(`u-${x}`, x)),
      problems: [],
      exit: 0,
    };
    const m = mermaid(r, graphOf(r));
    const defs = [...m.matchAll(/^ {2}classDef (\S+) fill:(#[0-9a-f]{6}),color:(#[0-9a-f]{6})$/gm)];
    expect(defs.map((d) => d[1])).toEqual(RESULTS.map((x) => x.replace(/-/g, '_')));
    for (const [, name, fill, color] of defs)
      expect(contrast(fill as string, color as string), `${name}: ${fill} on ${color}`).toBeGreaterThanOrEqual(4.5);
    // Every unit is in a class.
    for (const x of RESULTS) expect(m).toContain(`class u_u_${x.replace(/-/g, '_')} ${x.replace(/-/g, '_')}`);
  });
});
