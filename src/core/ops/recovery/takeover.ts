import type { Config } from '../../config/model.js';
import { type DesiredUnit, keyMatch, withFiles } from '../../resolve/desired.js';
import type { Selection } from '../../resolve/select.js';
import {
  type BreakInfo,
  type Checkpoint,
  type Condition,
  FILES,
  type LeaseDoc,
  type ObservedUnit,
} from '../../state/documents.js';
import type { LeaseVerdict } from '../../state/lease.js';
import { clockSkewProblems, leaseVerdict } from '../../state/lease.js';
import type { EnvState, RunRefState } from '../../state/read.js';
import { Exit, type Problem, problem } from '../../util/errors.js';
import { isoTime } from '../../util/time.js';
import { ADOPTED } from '../evaluate/decide.js';
import { waitForLease } from '../lease/wait.js';
import { desiredResolver } from '../transition/documents.js';
import { type Loaded, loadEnvironment, type OpContext, refuseUnpublished } from '../workspace/workspace.js';

import type { ImportResult } from './import-result.js';

/**
 * Breaks not recorded yet, by the run whose lease was broken: the current lease's, and any a dead
 * taking-over run carried in its run record because it died before its import landed.
 */
function breaksOf(state: EnvState, lease: LeaseDoc | undefined): Map<string, BreakInfo> {
  const out = new Map<string, BreakInfo>();
  for (const r of state.runs.values())
    if (r.record?.takenOver) out.set(r.record.takenOver.run, r.record.takenOver.leaseBroken);
  if (lease?.state === 'broken' && lease.broken) out.set(lease.run, lease.broken);
  return out;
}

function why(run: RunRefState, breaks: Map<string, BreakInfo>): string {
  if (breaks.has(run.id)) return 'when its lease was broken';
  if (run.record?.state === 'cancelled') return 'when it was cancelled';
  return `when it stopped (its deadline ${run.record?.deadline ?? 'unknown'} passed)`;
}

/**
 * Takes over from every dead run ref, oldest first, unit by unit (DESIGN §4):
 * a checkpoint whose key equals the unit's key now is its receipt (`imported`); a unit the
 * run was executing without a checkpoint is uncertain (`recovered`); a checkpoint with another
 * key is superseded and, when it recorded effects, makes the unit uncertain. Idempotent, and
 * never overwrites a result newer than the dead run.
 */
export function importRuns(
  sel: Selection | undefined,
  state: EnvState,
  desiredOf: (unit: string, uid: string, observed: Map<string, ObservedUnit>) => DesiredUnit | undefined,
  now: number,
): ImportResult {
  const env = state.environment;
  const at = isoTime(now);
  const current = new Map(state.observed);
  const res: ImportResult = {
    observed: new Map(),
    rows: new Map(),
    imported: [],
    recovered: [],
    logs: new Map(),
    consumed: [],
    problems: [],
  };
  const breaks = breaksOf(state, state.lease);
  const list = [...breaks.values()].sort((a, b) => (a.at < b.at ? -1 : 1));
  if (list.length) res.leaseBroken = list.length === 1 ? list[0] : list;
  const set = (o: ObservedUnit) => {
    current.set(o.name, o);
    res.observed.set(o.name, o);
  };
  const drop = (name: string) => {
    current.delete(name);
    res.observed.set(name, null);
  };
  const runs = [...state.runs.values()].sort((a, b) => (a.id < b.id ? -1 : 1));
  // Units in wave order, so a key computed for a consumer sees the receipts imported upstream.
  const order = [...(sel?.waves.flat() ?? [])];
  for (const r of runs)
    for (const n of [...r.desired.keys(), ...r.checkpoints.keys(), ...(r.record?.executing ?? [])])
      if (!order.includes(n)) order.push(n);

  for (const run of runs) {
    res.consumed.push(run);
    const reasonWhy = why(run, breaks);
    for (const name of order) {
      const cp: Checkpoint | undefined = run.checkpoints.get(name);
      const d: DesiredUnit | undefined = run.desired.get(name);
      const executing = run.record?.executing?.includes(name) ?? false;
      if (!cp && !executing) continue;
      const prior = current.get(name);
      // A result newer than this run stays. Newer means written after the run started: its record
      // names the observed tip it started from. (Run ids are time-ordered too, but by each
      // runner's own clock; they decide only for records without that tip.)
      const newer = run.basedOnFiles
        ? state.observedFiles.get(FILES.unit(name)) !== run.basedOnFiles.get(FILES.unit(name))
        : prior !== undefined && prior.lastRun > run.id;
      if (newer) continue;
      const uid = prior?.uid ?? d?.uid ?? cp?.uid;
      if (!uid) continue;
      const kind = d?.kind ?? cp?.kind ?? prior?.kind ?? 'Command';
      // Everything else recorded about the unit (hold, repairs, approvals) stays.
      const base: ObservedUnit = {
        ...prior,
        schema: 'nyl.observed-unit/v1',
        name,
        kind,
        uid,
        receipt: prior?.receipt,
        lastRun: run.id,
      };
      // An exec that stopped before it recorded its repair: the repair counts (a resume asks for an approved plan).
      const exec = run.record?.exec;
      if (exec?.unit === name && !cp)
        base.repairs = [
          ...(prior?.repairs ?? []),
          {
            run: run.id,
            command: exec.command,
            by: exec.by,
            ...(exec.reason ? { reason: exec.reason } : {}),
            at: run.record?.startedAt ?? at,
            exitCode: null,
            output: `not recorded: run ${run.id} stopped before it recorded how the repair ended`,
          },
        ].slice(-20);
      const uncertain = (reason: string, checkpointed: boolean, attempts?: number) => {
        const condition: Condition = { state: 'uncertain', reason, run: run.id, since: at };
        if (checkpointed) condition.checkpointed = true;
        if (attempts) condition.attempts = attempts;
        set({ ...base, condition });
        res.rows.set(name, { unit: name, kind, result: 'uncertain', detail: reason });
        if (!res.recovered.includes(name)) res.recovered.push(name);
      };
      if (!cp) {
        const attempt = run.record?.attempts?.[name];
        uncertain(
          `run ${run.id} was executing it${attempt ? ` (attempt ${attempt})` : ''} ${reasonWhy}`,
          false,
          attempt,
        );
        continue;
      }
      const desired = desiredOf(name, uid, current);
      const key = desired?.executionKey;
      // A checkpoint of a nyl before file keys, of the same document, is imported with the identities.
      const match = desired ? keyMatch(desired, cp.executionKey, cp.files) : 'same';
      if (cp.result === 'uncertain') {
        uncertain(cp.reason ?? `run ${run.id} left it uncertain`, true, cp.attempts);
        continue;
      }
      // A teardown's success is a destroy, whatever document it was of: the unit's state goes.
      if (run.record?.operation === 'teardown' && cp.result === 'succeeded') {
        drop(name);
        res.rows.set(name, {
          unit: name,
          kind,
          result: 'destroyed',
          detail: `imported: run ${run.id} (teardown) destroyed it`,
          run: run.id,
        });
        res.imported = res.imported.filter((n) => n !== name);
        res.recovered = res.recovered.filter((n) => n !== name);
        continue;
      }
      if (match === 'different') {
        res.problems.push(
          problem(
            'NYL-RUN-SUPERSEDED',
            `run ${run.id} checkpointed ${name} with execution key ${cp.executionKey}, which is not its key now (${key})`,
            {
              severity: 'warning',
              subject: name,
              // The unit's own result says whether anything is left uncertain.
              exit: Exit.ok,
              fix:
                cp.result === 'succeeded'
                  ? `the unit was marked uncertain: its recovery policy settles it, or check what run ${run.id} applied and run \`nyl recover -e ${env} --unit ${name} --retry --reason <text>\``
                  : 'nothing to do: a failed execution claims no effect',
            },
          ),
        );
        // A failure claims no effect; a success of another document did change something.
        if (cp.result === 'succeeded')
          uncertain(`run ${run.id} applied a superseded desired document (NYL-RUN-SUPERSEDED)`, true);
        continue;
      }
      if (cp.result === 'failed') {
        const reason = cp.reason ?? `run ${run.id} failed it`;
        set({
          ...base,
          condition: {
            state: 'failed',
            reason,
            run: run.id,
            since: cp.at,
            retryable: cp.retryable,
            exitCode: cp.exitCode,
            executionKey: cp.executionKey,
            ...withFiles(cp.files),
            ...(cp.attempts ? { attempts: cp.attempts } : {}),
          },
        });
        const detail = cp.attempts && cp.attempts > 1 ? `failed ${cp.attempts} times: ${reason}` : reason;
        res.rows.set(name, { unit: name, kind, result: 'failed', detail, run: run.id });
        continue;
      }
      set({
        ...base,
        condition: undefined,
        receipt: {
          executionKey: match === 'adopt' && key ? key : cp.executionKey,
          uid,
          run: run.id,
          ...(cp.source ? { source: cp.source } : {}),
          at: cp.at,
          outputs: cp.outputs ?? {},
          artifacts: cp.artifacts ?? {},
          ...(cp.attempts ? { attempts: cp.attempts } : {}),
          ...withFiles(match === 'adopt' ? desired?.files : cp.files),
        },
      });
      res.rows.set(name, {
        unit: name,
        kind,
        result: 'imported',
        detail: match === 'adopt' ? ADOPTED.done : '',
        executionKey: match === 'adopt' && key ? key : cp.executionKey,
        run: run.id,
      });
      if (!res.imported.includes(name)) res.imported.push(name);
      res.recovered = res.recovered.filter((n) => n !== name);
      const log = run.logs.get(name);
      if (log) res.logs.set(name, log);
    }
  }
  return res;
}

/** Checkpoints that arrived on evidence refs after their run was marked uncertain. */
export function lateCheckpoints(state: EnvState): Problem[] {
  const out: Problem[] = [];
  for (const ev of state.evidence.values())
    for (const [name, cp] of ev.checkpoints) {
      const c = state.observed.get(name)?.condition;
      if (c?.state !== 'uncertain' || c.run !== ev.id || c.checkpointed) continue;
      out.push(
        problem(
          'NYL-RUN-LATE-CHECKPOINT',
          `run ${ev.id} checkpointed ${name} (${cp.result}) after it was marked uncertain; the checkpoint is kept as evidence and does not clear the condition`,
          {
            severity: 'warning',
            subject: name,
            exit: Exit.uncertain,
            fix: `if that execution is the one you want, adopt it: \`nyl recover -e ${state.environment} --unit ${name} --accept ${ev.id} --reason <text>\``,
          },
        ),
      );
    }
  return out;
}

/**
 * What status and plan show for runs left behind: the state as the next import will record it,
 * and NYL-RUN-UNIMPORTED per dead run (a live run's ref is not dead).
 */
export function previewImport(
  sel: Selection,
  recorded: EnvState,
  v: LeaseVerdict,
  now: number,
): { state: EnvState; problems: Problem[] } {
  const env = recorded.environment;
  const problems: Problem[] = [];
  let state = recorded;
  const dead =
    v.kind === 'held' ? [...recorded.runs.values()].filter((r) => r.id !== v.run) : [...recorded.runs.values()];
  if (dead.length) {
    const preview = importRuns(
      sel,
      { ...recorded, runs: new Map(dead.map((r) => [r.id, r])) },
      desiredResolver(sel),
      now,
    );
    state = { ...recorded, observed: withChanges(recorded.observed, preview.observed) };
    for (const r of dead) {
      const left = [...preview.observed.values()].filter(
        (o): o is ObservedUnit => o?.condition?.run === r.id && o.condition.state === 'uncertain',
      );
      const how =
        r.record?.state === 'cancelled' ? 'cancelled' : v.kind === 'broken' && v.run === r.id ? 'lease broken' : 'died';
      problems.push(
        problem(
          'NYL-RUN-UNIMPORTED',
          `run ${r.id} (${r.record?.operation ?? 'unknown'}, ${how}) has not been imported: ${r.checkpoints.size} checkpoint(s)${left.length ? `; units it left uncertain: ${left.map((o) => o.name).join(', ')}` : ''}`,
          {
            severity: 'warning',
            subject: r.id,
            exit: Exit.uncertain,
            fix: `run \`nyl reconcile -e ${env}\` to take it over, or \`nyl recover -e ${env} --reason <text>\` to import it without executing`,
          },
        ),
      );
    }
  }
  return { state, problems };
}

/** What an importing operation starts from, when no gate stopped it. */
export interface TakenOver {
  stopped: undefined;
  cfg: Config;
  sel: Selection;
  /** The state as read; `state` is it with the import applied. */
  original: EnvState;
  verdict: LeaseVerdict;
  /** Whether there are dead runs (or a broken lease) to import. */
  takeover: boolean;
  imp: ImportResult | undefined;
  state: EnvState;
  problems: Problem[];
}

/**
 * What an importing operation (reconcile, teardown) starts from: configuration and state read,
 * unpublished local work refused, the lease waited for, and every dead run imported in memory.
 */
export async function loadTakingOver<G>(
  ctx: OpContext,
  env: string,
  /**
   * Asked before waiting for the lease, and again after a wait (the state may have moved): a
   * `stop` ends here with nothing taken; its problems go with the report.
   */
  gate?: (loaded: Loaded) => Promise<{ stop?: G; problems: Problem[] }>,
): Promise<{ stopped: G } | TakenOver> {
  let loaded = await loadEnvironment(ctx, env);
  refuseUnpublished(loaded);
  let gated = await gate?.(loaded);
  if (gated?.stop !== undefined) return { stopped: gated.stop } as const;
  const waited = await waitForLease(ctx, loaded, { takeover: true });
  if (waited.loaded.state.allTips !== loaded.state.allTips) {
    gated = await gate?.(waited.loaded);
    if (gated?.stop !== undefined) return { stopped: gated.stop } as const;
  }
  loaded = waited.loaded;
  const original = loaded.state;
  const verdict = leaseVerdict(original, ctx.now());
  const takeover = original.runs.size > 0 || verdict.kind === 'broken';
  const imp = takeover ? importRuns(loaded.sel, original, desiredResolver(loaded.sel), ctx.now()) : undefined;
  const state: EnvState = imp ? { ...original, observed: withChanges(original.observed, imp.observed) } : original;
  const problems: Problem[] = [
    ...(gated?.problems ?? []),
    ...waited.problems,
    ...clockSkewProblems(original, ctx.now()),
    ...(imp?.problems ?? []),
    ...lateCheckpoints(original),
  ];
  return { stopped: undefined, cfg: loaded.cfg, sel: loaded.sel, original, verdict, takeover, imp, state, problems };
}

/** Observed documents with `changes` applied: a changed document replaces its unit's, null drops it. */
export function withChanges(
  observed: Map<string, ObservedUnit>,
  changes: Map<string, ObservedUnit | null>,
): Map<string, ObservedUnit> {
  const out = new Map(observed);
  for (const [name, o] of changes) {
    if (o) out.set(name, o);
    else out.delete(name);
  }
  return out;
}
