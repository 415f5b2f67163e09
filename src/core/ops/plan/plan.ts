import { loadConfig } from '../../config/load.js';
import type { Selection } from '../../resolve/select.js';
import { selectEnvironment } from '../../resolve/select.js';
import { configuredFiles, withSources } from '../../resolve/unit-sources.js';
import { leaseVerdict } from '../../state/lease.js';
import type { EnvState } from '../../state/read.js';
import { emptyEnvState } from '../../state/read.js';
import { sha256Key } from '../../util/canonical.js';
import { Exit, NylError, type Problem, problem, worstExit } from '../../util/errors.js';
import { ADOPTED, whyText, wouldText } from '../evaluate/decide.js';
import { type Evaluation, evaluateAll } from '../evaluate/evaluate.js';
import { type ToolUnit, warnUncommitted } from '../judge/files-gate.js';
import {
  configChanged,
  type RecoveryAsk,
  type RecoverySelection,
  recoveryOptions,
  recoverySelection,
} from '../recovery/selection.js';
import { previewImport } from '../recovery/takeover.js';
import type { RunReport, UnitRow } from '../workspace/report.js';
import { refuseUnknown as refuseUnknownUnit } from '../workspace/unit-names.js';
import { loadEnvironment, type OpContext } from '../workspace/workspace.js';

export interface Plan {
  rows: UnitRow[];
  problems: Problem[];
  /** Names source, desired and observed state and the plan itself: any change makes it stale. */
  token: string;
  /** A recovery plan's selection (--failed, --from). */
  recovery?: RecoverySelection;
}

const short = (oid: string | undefined) => (oid ?? 'none').slice(0, 12);

/** The plan as things stand (dead runs imported first, as a reconcile would). */
export function computePlan(sel: Selection, recorded: EnvState, now: number, ask: RecoveryAsk = {}): Plan {
  const { state, problems } = previewImport(sel, recorded, leaseVerdict(recorded, now), now);
  const recovery = recoverySelection(sel, state, ask);
  const rows: UnitRow[] = [];
  for (const e of evaluateAll(sel, state, recoveryOptions(recovery, { driftRepair: sel.driftRepair })).values()) {
    const ev = e.evaluation;
    const u = sel.units.get(e.name);
    const files = e.desired?.files ?? (u ? configuredFiles(sel, u) : undefined);
    const row: Omit<UnitRow, 'result' | 'detail'> = {
      unit: e.name,
      kind: e.kind,
      executionKey: e.desired?.executionKey,
      ...(files ? { files } : {}),
    };
    if (ev.action === 'pending' && !ev.regardless) {
      const mapped = sel.units.get(e.name)?.unresolved;
      const detail = mapped
        ? `mapped over the outputs of ${ev.on.join(', ')}: ${mapped}; each new or changed instance executes`
        : `executes if the outputs of ${ev.on.join(', ')} change`;
      rows.push({ ...row, result: 'maybe', detail });
      continue;
    }
    // A unit whose upstream executes first, but whose own state decides already, is shown as that.
    const d = ev.action === 'pending' ? (ev.regardless as Exclude<typeof ev.regardless, undefined>) : ev;
    const after = ev.action === 'pending' ? ` (after ${ev.on.join(', ')})` : '';
    const changed = d.action === 'execute' ? d.change?.files : undefined;
    rows.push({
      ...row,
      ...planRow(d),
      ...(after ? { detail: `${planRow(d).detail}${after}` } : {}),
      ...(changed ? { filesChanged: changed } : {}),
    });
  }
  // A recovery plan is bound to its selection. Not to the revision: that names the variables set
  // where the plan was made (a PR job has no secrets); reconcile checks it against the failed attempt.
  const digest = rowsDigest(sel, rows, recovery ? [recovery.why, [...recovery.only].sort()] : []);
  // Not the source commit: a merge that resolves to the same documents keeps the token.
  const token = `v2.${short(recorded.tips.desired)}.${short(recorded.tips.observed)}.${digest}`;
  return { rows, problems, token, recovery };
}

/**
 * What the plan's rows say, in 12 hex digits: each unit's result and the execution key of its
 * desired document (a unit whose inputs are not known yet: the key of its configuration).
 */
function rowsDigest(sel: Selection, rows: UnitRow[], bound: unknown[]): string {
  const list: unknown[] = rows.map((r) => [r.unit, r.result, r.executionKey ?? configKey(sel, r.unit)]);
  return sha256Key(bound.length ? [...list, bound] : list).slice(7, 19);
}

/** The short form of an execution key a kept plan row holds (a PR comment's hidden rows). */
export function keptKey(executionKey: string | undefined): string | undefined {
  return executionKey ? sha256Key(executionKey).slice(7, 15) : undefined;
}

/**
 * A unit's configuration as written (kind, name, spec, dependencies) and the files it names
 * outright: known before its inputs are.
 */
export function configKey(sel: Selection, unit: string): string {
  const u = sel.units.get(unit);
  if (!u) return '';
  const files = configuredFiles(sel, u);
  const named = files && Object.keys(files).length ? { files } : {};
  return sha256Key({ kind: u.doc.kind, name: u.doc.name, spec: u.doc.spec, deps: u.deps, ...named });
}

/** Refuses a plan token that no longer names the state: says what changed (NYL-PLAN-STALE, exit 2). */
export function checkToken(
  env: string,
  given: string,
  current: Plan,
  /** The rows the token was made for, when known (a PR comment keeps them): the changed units are named. */
  givenRows?: Pick<UnitRow, 'unit' | 'result' | 'executionKey'>[],
): Problem | undefined {
  if (given === current.token) return undefined;
  const [v, des, obs, digest] = given.split('.');
  const [, des2, obs2] = current.token.split('.');
  let what = 'what would run differs';
  if (v === 'v1') what = 'it was made by an older nyl';
  else if (v !== 'v2' || digest === undefined) what = 'it is not a plan token';
  else if (des !== des2) what = `the desired state changed (${des} → ${des2})`;
  else if (obs !== obs2) what = `the observed state changed (${obs} → ${obs2})`;
  if (givenRows) {
    // Kept rows carry short digests of their keys (a PR comment has no room for whole ones).
    const short = givenRows.some((r) => r.executionKey && !r.executionKey.startsWith('sha256:'));
    const now = new Map(current.rows.map((r) => [r.unit, short ? { ...r, executionKey: keptKey(r.executionKey) } : r]));
    const before = new Map(givenRows.map((r) => [r.unit, r]));
    const changed = [...new Set([...now.keys(), ...before.keys()])].filter((u) => {
      const a = before.get(u);
      const b = now.get(u);
      return !a || !b || a.result !== b.result || (a.executionKey ?? '') !== (b.executionKey ?? '');
    });
    if (changed.length) what += `; units whose rows changed: ${changed.join(', ')}`;
  }
  // A recovery plan's token is bound to its selection: the fix repeats it.
  const flags = current.recovery ? ` ${current.recovery.why}` : '';
  const reason = current.recovery?.why.includes('--from') ? ' --reason "…"' : '';
  return problem('NYL-PLAN-STALE', `plan ${given} is stale: ${what}`, {
    subject: env,
    exit: Exit.refused,
    fix: `review the plan again with \`nyl plan -e ${env}${flags}\` and pass its new token to \`nyl reconcile -e ${env}${flags}${reason} --plan <token>\``,
  });
}

/** What a reconcile would do now, executing nothing and writing nothing. */
export async function plan(
  ctx: OpContext,
  opts: { environment: string; asNewWhenUnreachable?: boolean } & RecoveryAsk,
): Promise<RunReport> {
  const { cfg, sel, state, unread } = await loadForPlan(ctx, opts);
  for (const u of opts.from ?? []) refuseUnknownUnit(sel, u);
  const { rows, problems, token, recovery } = computePlan(sel, state, ctx.now(), opts);
  problems.unshift(...unread);
  // Every unit's: an edit the plan cannot show (it is of the commit) is said, not silently left out.
  problems.push(...(await warnUncommitted(ctx, sel, cfg.source, rows.map(rowUnit))));
  if (recovery?.changed.length) problems.push(configChanged(sel, recovery, 'warning'));
  const count = (r: string) => rows.filter((x) => x.result === r).length;
  const [n, maybe, approval, skipped] = ['execute', 'maybe', 'awaiting-approval', 'skipped'].map(count) as [
    number,
    number,
    number,
    number,
  ];
  const summary = [
    `${n} to execute`,
    ...(maybe ? [`${maybe} depending on outputs`] : []),
    ...(approval ? [`${approval} awaiting approval`] : []),
    ...(skipped ? [`${skipped} not selected`] : []),
    `${rows.length - n - maybe - approval - skipped} unchanged`,
  ].join(', ');
  return {
    operation: 'plan',
    environment: opts.environment,
    source: cfg.source,
    rows,
    problems,
    exit: worstExit(problems.map((p) => p.exit)),
    extra: [['plan', summary], ...(recovery ? recoveryFacts(state, rows, recovery) : []), ['token', token]],
    desired: state.tips.desired,
    observed: state.tips.observed,
  };
}

const rowUnit = (r: UnitRow): ToolUnit => ({ name: r.unit, kind: r.kind, ...(r.files ? { files: r.files } : {}) });

/** `--failed: b, then c (dependants)`: the roots, then what runs because it depends on them. */
function selectionText(r: RecoverySelection): string {
  if (!r.roots.length) return `${r.why}: nothing failed or is uncertain`;
  const roots = new Set(r.roots);
  const dependants = [...r.only].filter((u) => !roots.has(u)).sort();
  return `${r.why}: ${r.roots.join(', ')}${dependants.length ? `, then ${dependants.join(', ')} (dependants)` : ''}`;
}

/**
 * A recovery plan's preview (seed 004): what it selects, the receipts it reuses, the dead runs
 * imported first, and the configuration revision it runs against.
 */
function recoveryFacts(state: EnvState, rows: UnitRow[], r: RecoverySelection): [string, unknown][] {
  const reused = rows.filter((x) => x.result === 'current' && !r.only.has(x.unit)).map((x) => x.unit);
  const imports = [...state.runs.keys()].sort();
  return [
    ['selection', selectionText(r)],
    ['reused', reused.length ? reused.join(', ') : '(none)'],
    ...(imports.length ? [['imports', imports.join(', ')] as [string, unknown]] : []),
    ['revision', r.revision],
  ];
}

/** A plan row's result and detail for a decision (as reconcile would report the unit). */
function planRow(d: Exclude<Evaluation, { action: 'pending' }>): { result: string; detail: string } {
  switch (d.action) {
    case 'execute':
      return { result: 'execute', detail: whyText(d) };
    case 'current':
      return { result: 'current', detail: d.adopt ? ADOPTED.next : '' };
    case 'wait':
      return { result: d.state, detail: `${d.reason}; waits for nyl recover` };
    case 'blocked':
      return { result: 'blocked', detail: d.reason };
    case 'inspect':
      return { result: 'inspect', detail: 'uncertain; asks its driver whether it was applied, executes if not' };
    case 'invalid':
      return { result: 'failed', detail: d.reason };
    case 'awaiting-approval':
      return { result: 'awaiting-approval', detail: d.reason };
    case 'held':
      return { result: 'held', detail: d.reason };
    case 'drifted':
      return { result: 'drifted', detail: d.reason };
    case 'skipped':
      return { result: 'skipped', detail: `${d.reason}; it would ${wouldText(d.would)}` };
  }
}

/**
 * Configuration and state for a plan. On a pull request (asNewWhenUnreachable) a remote whose
 * state this token cannot read (a fork's read-only token, no permission) is planned as new, saying so.
 */
async function loadForPlan(ctx: OpContext, opts: { environment: string; asNewWhenUnreachable?: boolean }) {
  try {
    return { ...(await loadEnvironment(ctx, opts.environment)), unread: [] as Problem[] };
  } catch (e) {
    const p = e instanceof NylError ? e.problems.find((x) => x.code === 'NYL-REMOTE-UNREACHABLE') : undefined;
    if (!opts.asNewWhenUnreachable || !p) throw e;
    const cfg = await loadConfig(ctx.repo, { config: ctx.opts.config, cwd: ctx.opts.cwd });
    const sel = await withSources(ctx.repo, cfg, selectEnvironment(cfg, opts.environment));
    const unread = problem(
      'NYL-REMOTE-UNREACHABLE',
      `the recorded state of ${opts.environment} could not be read (${p.message}): it is planned as new`,
      {
        severity: 'warning',
        subject: opts.environment,
        exit: Exit.ok,
        fix: 'give the plan job a token that can read the repository (contents: read)',
      },
    );
    return { cfg, sel, state: emptyEnvState(sel.prefix, opts.environment), unread: [unread] };
  }
}
