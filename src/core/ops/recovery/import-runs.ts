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
import type { EnvState, RunRefState } from '../../state/read.js';
import { Exit, problem } from '../../util/errors.js';
import { isoTime } from '../../util/time.js';
import { ADOPTED } from '../evaluate/decide.js';
import type { ImportResult } from './import-result.js';

/** Resolves a unit's document now, given what is observed so far (imports of earlier runs included). */
export type DesiredOf = (unit: string, uid: string, observed: Map<string, ObservedUnit>) => DesiredUnit | undefined;

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

/** One unit of one dead run, as the import meets it. */
interface Met {
  run: RunRefState;
  name: string;
  cp?: Checkpoint;
  kind: string;
  uid: string;
  /** Its observed document as the import leaves it but for what this run says. */
  base: ObservedUnit;
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
  desiredOf: DesiredOf,
  now: number,
): ImportResult {
  return new Importer(sel, state, desiredOf, now).run();
}

class Importer {
  private readonly at: string;
  private readonly current: Map<string, ObservedUnit>;
  private readonly res: ImportResult;
  private readonly breaks: Map<string, BreakInfo>;

  constructor(
    private readonly sel: Selection | undefined,
    private readonly state: EnvState,
    private readonly desiredOf: DesiredOf,
    now: number,
  ) {
    this.at = isoTime(now);
    this.current = new Map(state.observed);
    this.res = {
      observed: new Map(),
      rows: new Map(),
      imported: [],
      recovered: [],
      logs: new Map(),
      consumed: [],
      problems: [],
    };
    this.breaks = breaksOf(state, state.lease);
    const list = [...this.breaks.values()].sort((a, b) => (a.at < b.at ? -1 : 1));
    if (list.length) this.res.leaseBroken = list.length === 1 ? list[0] : list;
  }

  run(): ImportResult {
    const runs = [...this.state.runs.values()].sort((a, b) => (a.id < b.id ? -1 : 1));
    // Units in wave order, so a key computed for a consumer sees the receipts imported upstream.
    const order = [...(this.sel?.waves.flat() ?? [])];
    for (const r of runs)
      for (const n of [...r.desired.keys(), ...r.checkpoints.keys(), ...(r.record?.executing ?? [])])
        if (!order.includes(n)) order.push(n);
    for (const run of runs) {
      this.res.consumed.push(run);
      for (const name of order) this.unit(run, name);
    }
    return this.res;
  }

  private set(o: ObservedUnit): void {
    this.current.set(o.name, o);
    this.res.observed.set(o.name, o);
  }

  /** One unit of a dead run: what its checkpoint (or its absence while executing) makes of it. */
  private unit(run: RunRefState, name: string): void {
    const met = this.meet(run, name);
    if (!met) return;
    const { cp } = met;
    if (!cp) {
      const attempt = run.record?.attempts?.[name];
      const reason = `run ${run.id} was executing it${attempt ? ` (attempt ${attempt})` : ''} ${why(run, this.breaks)}`;
      this.uncertain(met, reason, false, attempt);
    } else if (cp.result === 'uncertain')
      this.uncertain(met, cp.reason ?? `run ${run.id} left it uncertain`, true, cp.attempts);
    // A teardown's success is a destroy, whatever document it was of: the unit's state goes.
    else if (run.record?.operation === 'teardown' && cp.result === 'succeeded') this.destroyed(met);
    else this.checkpointed(met, cp);
  }

  /** A checkpoint of an execution: superseded by another document, a failure, or the receipt. */
  private checkpointed(met: Met, cp: Checkpoint): void {
    const desired = this.desiredOf(met.name, met.uid, this.current);
    // A checkpoint of a nyl before file keys, of the same document, is imported with the identities.
    const match = desired ? keyMatch(desired, cp.executionKey, cp.files) : 'same';
    if (match === 'different') this.superseded(met, cp, desired?.executionKey);
    else if (cp.result === 'failed') this.failed(met, cp);
    else this.imported(met, cp, match === 'adopt' ? desired : undefined);
  }

  /**
   * The unit as this run left it, unless a result newer than the run stays. Newer means written
   * after the run started: its record names the observed tip it started from. (Run ids are
   * time-ordered too, but by each runner's own clock; they decide only for records without that tip.)
   */
  private meet(run: RunRefState, name: string): Met | undefined {
    const cp = run.checkpoints.get(name);
    const d = run.desired.get(name);
    if (!cp && !run.record?.executing?.includes(name)) return undefined;
    const prior = this.current.get(name);
    const newer = run.basedOnFiles
      ? this.state.observedFiles.get(FILES.unit(name)) !== run.basedOnFiles.get(FILES.unit(name))
      : prior !== undefined && prior.lastRun > run.id;
    const uid = prior?.uid ?? d?.uid ?? cp?.uid;
    if (newer || !uid) return undefined;
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
    if (run.record?.exec?.unit === name && !cp) base.repairs = this.unrecordedRepair(run, prior);
    return { run, name, ...(cp ? { cp } : {}), kind, uid, base };
  }

  /** An exec that stopped before it recorded its repair: the repair counts (a resume asks for an approved plan). */
  private unrecordedRepair(run: RunRefState, prior: ObservedUnit | undefined): ObservedUnit['repairs'] {
    const exec = run.record?.exec as NonNullable<NonNullable<RunRefState['record']>['exec']>;
    return [
      ...(prior?.repairs ?? []),
      {
        run: run.id,
        command: exec.command,
        by: exec.by,
        ...(exec.reason ? { reason: exec.reason } : {}),
        at: run.record?.startedAt ?? this.at,
        exitCode: null,
        output: `not recorded: run ${run.id} stopped before it recorded how the repair ended`,
      },
    ].slice(-20);
  }

  private uncertain(m: Met, reason: string, checkpointed: boolean, attempts?: number): void {
    const condition: Condition = { state: 'uncertain', reason, run: m.run.id, since: this.at };
    if (checkpointed) condition.checkpointed = true;
    if (attempts) condition.attempts = attempts;
    this.set({ ...m.base, condition });
    this.res.rows.set(m.name, { unit: m.name, kind: m.kind, result: 'uncertain', detail: reason });
    if (!this.res.recovered.includes(m.name)) this.res.recovered.push(m.name);
  }

  private destroyed(m: Met): void {
    this.current.delete(m.name);
    this.res.observed.set(m.name, null);
    this.res.rows.set(m.name, {
      unit: m.name,
      kind: m.kind,
      result: 'destroyed',
      detail: `imported: run ${m.run.id} (teardown) destroyed it`,
      run: m.run.id,
    });
    this.res.imported = this.res.imported.filter((n) => n !== m.name);
    this.res.recovered = this.res.recovered.filter((n) => n !== m.name);
  }

  private superseded(m: Met, cp: Checkpoint, key: string | undefined): void {
    const env = this.state.environment;
    const { run, name } = m;
    this.res.problems.push(
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
      this.uncertain(m, `run ${run.id} applied a superseded desired document (NYL-RUN-SUPERSEDED)`, true);
  }

  private failed(m: Met, cp: Checkpoint): void {
    const reason = cp.reason ?? `run ${m.run.id} failed it`;
    this.set({
      ...m.base,
      condition: {
        state: 'failed',
        reason,
        run: m.run.id,
        since: cp.at,
        retryable: cp.retryable,
        exitCode: cp.exitCode,
        executionKey: cp.executionKey,
        ...withFiles(cp.files),
        ...(cp.attempts ? { attempts: cp.attempts } : {}),
      },
    });
    const detail = cp.attempts && cp.attempts > 1 ? `failed ${cp.attempts} times: ${reason}` : reason;
    this.res.rows.set(m.name, { unit: m.name, kind: m.kind, result: 'failed', detail, run: m.run.id });
  }

  /** The checkpoint becomes the receipt (keyed with the files of `adopted`, a checkpoint of an earlier nyl). */
  private imported(m: Met, cp: Checkpoint, adopted: DesiredUnit | undefined): void {
    const key = adopted?.executionKey ?? cp.executionKey;
    this.set({
      ...m.base,
      condition: undefined,
      receipt: {
        executionKey: key,
        uid: m.uid,
        run: m.run.id,
        ...(cp.source ? { source: cp.source } : {}),
        at: cp.at,
        outputs: cp.outputs ?? {},
        artifacts: cp.artifacts ?? {},
        ...(cp.attempts ? { attempts: cp.attempts } : {}),
        ...withFiles(adopted ? adopted.files : cp.files),
      },
    });
    const row = { unit: m.name, kind: m.kind, result: 'imported', executionKey: key, run: m.run.id };
    this.res.rows.set(m.name, { ...row, detail: adopted ? ADOPTED.done : '' });
    if (!this.res.imported.includes(m.name)) this.res.imported.push(m.name);
    this.res.recovered = this.res.recovered.filter((n) => n !== m.name);
    const log = m.run.logs.get(m.name);
    if (log) this.res.logs.set(m.name, log);
  }
}
