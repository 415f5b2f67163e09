import { countsText, SYMBOL } from '../core/changes/counts.js';
import type { RecordedChanges, ResourceChange, UnitChanges } from '../core/changes/model.js';
import type { OpReport, RunReport, StatusReport, UnitRow } from '../core/ops/workspace/report.js';
import { canonicalJson, prettyJson } from '../core/util/canonical.js';
import type { Problem } from '../core/util/errors.js';

/** Columns padded to the widest cell plus two spaces; trailing blanks trimmed. */
export function table(header: string[], rows: string[][]): string {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: string[]) =>
    cells
      .map((c, i) => (i === cells.length - 1 ? c : c.padEnd((widths[i] as number) + 2)))
      .join('')
      .trimEnd();
  return [line(header), ...rows.map(line)].join('\n');
}

/** A typed fact as text: strings as they are, yes/no, everything else canonical JSON (as seed 000 prints it). */
export function factText(v: unknown): string {
  if (typeof v === 'string') return v;
  if (typeof v === 'boolean') return v ? 'yes' : 'no';
  return canonicalJson(v ?? null);
}

/** `  label:    value` lines, labels padded to one width. */
export function facts(pairs: [string, unknown][]): string {
  const present = pairs.filter(([, v]) => v !== undefined && v !== '');
  // Labels line up as in `observed: ` even when fewer are shown.
  const w = Math.max('observed:'.length, ...present.map(([k]) => k.length + 1));
  return present.map(([k, v]) => `  ${`${k}:`.padEnd(w + 1)}${factText(v)}`).join('\n');
}

/** `error|warning NYL-CODE (subject)`, then the explanation and `fix:` indented. */
export function renderProblem(p: Problem): string {
  const lines = [`${p.severity} ${p.code}${p.subject ? ` (${p.subject})` : ''}`];
  for (const l of p.message.split('\n')) lines.push(`  ${l}`);
  if (p.fix) lines.push(`  fix: ${p.fix}`);
  return lines.join('\n');
}

export function renderProblems(ps: Problem[]): string {
  return ps.map(renderProblem).join('\n\n');
}

function withProblems(out: string[], problems: Problem[]): string {
  if (problems.length) out.push('', renderProblems(problems));
  return `${out.join('\n')}\n`;
}

/**
 * The resource changes of the units that have them, under the table: `changes of net: +1 ~1 -/+1 -1`,
 * then one line per resource (destructive first, Terraform's symbols, the attributes that change)
 * and the outputs; a unit without them says why (it waits for a unit that executes first, …).
 */
type ChangesRow = Pick<UnitRow, 'unit' | 'changesNote'> & {
  changes?: {
    counts: UnitChanges['counts'];
    resources: Pick<ResourceChange, 'address' | 'action' | 'attributes' | 'tainted'>[];
    outputs?: UnitChanges['outputs'];
  };
};

export function renderChanges(rows: ChangesRow[], label = 'changes'): string[] {
  const out: string[] = [];
  for (const r of rows) {
    if (r.changes) {
      out.push(`${label} of ${r.unit}: ${countsText(r.changes.counts)}`);
      const w = Math.max(0, ...r.changes.resources.map((c) => SYMBOL[c.action].length));
      for (const c of r.changes.resources) out.push(`  ${SYMBOL[c.action].padEnd(w)}  ${c.address}${notes(c)}`);
      if (r.changes.outputs?.length)
        out.push(`  outputs: ${r.changes.outputs.map((o) => `${SYMBOL[o.action]} ${o.name}`).join(', ')}`);
    } else if (r.changesNote) out.push(`${label} of ${r.unit}: ${r.changesNote}`);
  }
  return out.length ? ['', ...out] : [];
}

/** ` (tainted; input, output)`: what a change line says after its address. */
function notes(c: { attributes?: string[]; tainted?: true }): string {
  const parts = [...(c.tainted ? ['tainted'] : []), ...(c.attributes?.length ? [c.attributes.join(', ')] : [])];
  return parts.length ? ` (${parts.join('; ')})` : '';
}

/** `url:` the environment's URL, or why its template gave none; no line without a `url` template. */
const urlFact = (r: { url?: string; urlMissing?: string }): [string, unknown] => [
  'url',
  r.url ?? (r.urlMissing ? `none (${r.urlMissing})` : undefined),
];

/** reconcile, plan, verify, teardown: the unit table, then run, source, url, tips and extras. */
export function renderRun(r: RunReport): string {
  const tips: [string, unknown][] = ['reconcile', 'verify', 'teardown'].includes(r.operation)
    ? [
        ['desired', r.desired],
        ['observed', r.observed],
      ]
    : [];
  return withProblems(
    [
      table(
        r.header ?? ['UNIT', 'KIND', 'RESULT', 'DETAIL'],
        r.rows.map((x) => [x.unit, x.kind, x.result, x.detail.replace(/\n/g, ' | ')]),
      ),
      // verify: what its plan would change to put the unit back, i.e. what drifted.
      ...renderChanges(r.rows, r.operation === 'verify' ? 'drift' : 'changes'),
      '',
      facts([['run', r.run], ['source', r.source], urlFact(r), ...tips, ...(r.extra ?? [])]),
    ],
    r.problems,
  );
}

export function renderStatus(r: StatusReport): string {
  return withProblems(
    [
      table(
        ['UNIT', 'KIND', 'STATE', 'RECEIPT', 'LAST RUN', 'DETAIL'],
        r.rows.map((x) => [x.unit, x.kind, x.state, x.receipt, x.lastRun, x.detail.replace(/\n/g, ' | ')]),
      ),
      // What a verify found drifted, resource by resource.
      ...renderChanges(
        r.rows.map((x) => ({ unit: x.unit, ...(x.drift ? { changes: x.drift } : {}) })),
        'drift',
      ),
      '',
      facts([
        ['source', r.source],
        urlFact(r),
        // A run holding the lease now: the units it may be changing are its, whatever their rows say.
        ...(r.lease?.state === 'held'
          ? [
              ['lease', `held by run ${r.lease.run} (${r.lease.holder}), deadline ${r.lease.deadline}`] as [
                string,
                unknown,
              ],
            ]
          : []),
        // The promotion gate: where each environment before this one stands for this source.
        ...(r.promotion ?? []).map(
          (g) =>
            [`after ${g.environment}`, g.ready ? `ready (at ${g.source})` : `waiting: ${g.missing.join('; ')}`] as [
              string,
              unknown,
            ],
        ),
      ]),
    ],
    r.problems,
  );
}

/** Operations that are not runs: `<operation> <env>: <outcome>` then `  key: value` facts (or a document). */
export function renderOp(r: OpReport): string {
  if (r.operation === 'runs show') return renderRunShow(r);
  if (r.operation === 'runs logs') return renderRunLogs(r);
  if (r.document !== undefined) return withProblems([prettyJson(r.document).trimEnd()], r.problems);
  if (r.table) return withProblems([table(r.table.header, r.table.rows)], r.problems);
  return withProblems(
    [
      `${r.operation}${r.environment ? ` ${r.environment}` : ''}: ${r.outcome}`,
      ...r.facts.map(([k, v]) => `  ${k}: ${factText(v)}`),
    ],
    r.problems,
  );
}

const fact = (r: OpReport, k: string) => r.facts.find(([key]) => key === k)?.[1];

/** `nyl runs show`: the record's facts, its states with their times, then its units' table. */
function renderRunShow(r: OpReport): string {
  const plain = r.facts.filter(([k]) => !['states', 'units', 'running'].includes(k));
  const states = (fact(r, 'states') ?? []) as { state: string; at: string; wave?: number; units?: string[] }[];
  const running = fact(r, 'running') as Record<string, { elapsedMs: number }> | undefined;
  const units = (fact(r, 'units') ?? []) as {
    unit: string;
    kind?: string;
    result: string;
    durationMs?: number;
    exitCode?: number;
    reason?: string;
    changes?: RecordedChanges;
  }[];
  const out = [`run ${fact(r, 'run')} of ${r.environment}: ${r.outcome}`, facts(plain), '', 'states:'];
  out.push(
    ...table(
      ['STATE', 'AT', 'DETAIL'],
      states.map((s) => [
        s.state,
        s.at,
        s.wave !== undefined ? `wave ${s.wave + 1}${s.units?.length ? `: ${s.units.join(', ')}` : ''}` : '',
      ]),
    )
      .split('\n')
      .map((l) => `  ${l}`),
  );
  if (running)
    out.push('', 'running at its last write:', ...Object.entries(running).map(([u, x]) => `  ${u}: ${x.elapsedMs}ms`));
  out.push(
    '',
    table(
      ['UNIT', 'KIND', 'RESULT', 'DURATION', 'EXIT', 'DETAIL'],
      units.map((u) => [
        u.unit,
        u.kind ?? '',
        u.result,
        u.durationMs !== undefined ? `${u.durationMs}ms` : '',
        u.exitCode !== undefined ? String(u.exitCode) : '',
        (u.reason ?? (u.changes ? countsText(u.changes.counts) : '')).replace(/\n/g, ' | '),
      ]),
    ),
    ...recordedLines(units),
  );
  return withProblems(out, r.problems);
}

/** The resources each unit of a run changed (or would have, waiting for approval), destructive first. */
function recordedLines(units: { unit: string; changes?: RecordedChanges }[]): string[] {
  const out: string[] = [];
  for (const u of units) {
    if (!u.changes?.resources.length) continue;
    out.push(`changes of ${u.unit}: ${countsText(u.changes.counts)}`);
    for (const [address, action] of u.changes.resources) out.push(`  ${SYMBOL[action].padEnd(3)}  ${address}`);
  }
  return out.length ? ['', ...out] : [];
}

/** `nyl runs logs`: a header per unit (`==> unit (result) <==`, as tail prints files), then its log. */
function renderRunLogs(r: OpReport): string {
  const logs = (fact(r, 'logs') ?? []) as { unit: string; result?: string; kind: string; text: string }[];
  const out: string[] = [];
  for (const l of logs) {
    const what = [l.result, l.kind === 'tail' ? 'output at the last heartbeat' : ''].filter(Boolean).join(', ');
    out.push(`==> ${l.unit}${what ? ` (${what})` : ''} <==`, l.text.replace(/\n$/, ''), '');
  }
  if (!logs.length) out.push(`run ${fact(r, 'run')} kept no logs`);
  else out.pop();
  return withProblems(out, r.problems);
}
