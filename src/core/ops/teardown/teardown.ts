import type { ExecuteResult } from '../../drivers/driver.js';
import { driverFor } from '../../drivers/index.js';
import { isStorageFailure } from '../../git/storage-failure.js';
import { type DesiredUnit, timeoutMs } from '../../resolve/desired.js';
import type { Checkpoint, ObservedUnit } from '../../state/documents.js';
import { FILES } from '../../state/documents.js';
import { GRACE_MS } from '../../state/lease.js';
import { readDesiredDocs } from '../../state/read.js';
import { endRecord } from '../../state/run-record.js';
import { prettyJson } from '../../util/canonical.js';
import { Exit, NylError, problem } from '../../util/errors.js';
import { masker } from '../../util/mask.js';
import { mapPool } from '../../util/pool.js';
import { isoTime } from '../../util/time.js';
import { evaluateAll } from '../evaluate/evaluate.js';
import { refuseUncommitted, toolUnit } from '../judge/files-gate.js';
import { DEFAULT_PARALLELISM, inDoubt, safeExecute } from '../reconcile/reconcile.js';
import { loadTakingOver } from '../recovery/takeover.js';
import { ownEntry } from '../runs/history.js';
import { startRun } from '../runs/start.js';
import { stoppedByStorage } from '../runs/storage-stop.js';
import {
  consumedRefs,
  desiredFilesWithout,
  importLists,
  messageUnits,
  observedFiles,
} from '../transition/documents.js';
import { transitionMessage } from '../transition/message.js';
import { exitFor, type RunReport, type UnitRow } from '../workspace/report.js';
import { refuseUnreadable } from '../workspace/unreadable.js';
import { type OpContext, whereOf } from '../workspace/workspace.js';

/** Reverse dependency order: a unit goes only after every unit that needs it has gone. */
function reverseWaves(docs: Map<string, DesiredUnit>): string[][] {
  const names = [...docs.keys()];
  const level = new Map<string, number>();
  const depth = (n: string, seen = new Set<string>()): number => {
    const known = level.get(n);
    if (known !== undefined) return known;
    if (seen.has(n)) return 0;
    seen.add(n);
    const deps = (docs.get(n)?.needs ?? []).filter((d) => docs.has(d));
    const d = deps.length ? Math.max(...deps.map((x) => depth(x, seen))) + 1 : 0;
    level.set(n, d);
    return d;
  };
  const waves: string[][] = [];
  for (const n of names.sort()) {
    const d = depth(n);
    waves[d] = [...(waves[d] ?? []), n];
  }
  return waves.filter(Boolean).reverse();
}

/**
 * `nyl teardown -e ENV`: runs each unit's destroy in reverse dependency order, units that left
 * the configuration included, and lands one transition that drops what was torn down. A broken
 * lease's run is imported first, as a reconcile would.
 */
export async function teardown(
  ctx: OpContext,
  opts: { environment: string; parallelism?: number },
): Promise<RunReport> {
  const env = opts.environment;
  const loaded = await loadTakingOver(ctx, env);
  if (loaded.stopped !== undefined) throw new Error('teardown has no gate');
  const { cfg, sel, original, verdict, takeover, imp, state, problems } = loaded;

  // What to destroy: every unit with recorded state, with the document it was last resolved to.
  const names = [...state.observed.keys()];
  const { docs, unreadable } = await readDesiredDocs(ctx.repo, state, names);
  refuseUnreadable({ ...state, unreadable }, whereOf(ctx, env));
  const current = evaluateAll(sel, state);
  for (const n of names) {
    const d = current.get(n)?.desired;
    if (!docs.has(n) && d) docs.set(n, d);
  }
  if (!docs.size && !takeover)
    return {
      operation: 'teardown',
      environment: env,
      source: cfg.source,
      rows: [],
      problems,
      exit: Exit.ok,
      extra: [['teardown', 'nothing recorded']],
    };

  // A destroy runs on the working tree: its files are the commit's (a held unit, or a Command
  // without destroy, runs nothing).
  const destroying = [...docs.values()].filter(
    (d) => !state.observed.get(d.name)?.hold && (d.kind !== 'Command' || d.spec.destroy !== undefined),
  );
  await refuseUncommitted(ctx, sel, cfg.source, destroying.map(toolUnit));
  const { run, session, record } = await startRun(
    ctx,
    original,
    verdict,
    'teardown',
    { source: cfg.source, state: 'executing', phase: 'resolution', executing: [] },
    GRACE_MS,
  );

  let acquired = false;
  const write = async (deadlineMs: number) => {
    const t = ctx.now();
    record.deadline = isoTime(t + deadlineMs);
    record.updatedAt = isoTime(t);
    if (acquired) return session.checkpoint(record, deadlineMs, t);
    if (!(await session.acquire(record, deadlineMs, t)))
      throw new NylError(
        problem('NYL-LEASE-HELD', `another run took the lease of ${env} first`, {
          exit: Exit.refused,
          fix: 'run again, or pass --wait-lease <duration>',
        }),
      );
    acquired = true;
  };

  const rows = new Map<string, UnitRow>();
  const changed = new Map<string, ObservedUnit | null>();
  const mask = masker.mask;
  const stopped = new Set<string>(); // failed, blocked or held: what they need must stay
  try {
    for (const wave of reverseWaves(docs)) {
      const go: DesiredUnit[] = [];
      for (const n of wave) {
        const d = docs.get(n) as DesiredUnit;
        const o = state.observed.get(n);
        const needers = [...docs.values()].filter((x) => x.needs.includes(n) && stopped.has(x.name)).map((x) => x.name);
        if (o?.hold) {
          rows.set(n, {
            unit: n,
            kind: d.kind,
            result: 'held',
            detail: `held by ${o.hold.by}: resume it to tear it down`,
          });
          stopped.add(n);
        } else if (needers.length) {
          rows.set(n, { unit: n, kind: d.kind, result: 'blocked', detail: `still needed by ${needers.join(', ')}` });
          stopped.add(n);
        } else go.push(d);
      }
      if (!go.length) continue;
      record.phase = 'wave';
      record.executing = go.map((d) => d.name);
      await session.announce(
        go.map((d) => [d.name, Buffer.from(prettyJson(d))]),
        () => write(Math.max(...go.map(timeoutMs)) + GRACE_MS),
      );
      await mapPool(go, opts.parallelism ?? DEFAULT_PARALLELISM, async (d) => {
        ctx.onEvent({ type: 'unit-start', unit: d.name, kind: d.kind, at: ctx.now() });
        // undefined: the unit has nothing to run (no destroy); a throwing driver leaves it uncertain.
        let r: ExecuteResult | undefined;
        try {
          r = await driverFor(d.kind).destroy?.({
            environment: env,
            run,
            unit: d,
            cwd: ctx.repo.root,
            timeoutMs: timeoutMs(d),
            cancellation: ctx.cancellation,
            mask,
            local: ctx.opts.local,
          });
        } catch (e) {
          r = await safeExecute(() => Promise.reject(e));
        }
        const prior = state.observed.get(d.name);
        if (!r) {
          rows.set(d.name, {
            unit: d.name,
            kind: d.kind,
            result: 'removed',
            detail: 'no destroy: its effects are left in place',
          });
          changed.set(d.name, null);
        } else if (r.status === 'succeeded') {
          rows.set(d.name, { unit: d.name, kind: d.kind, result: 'destroyed', detail: '' });
          changed.set(d.name, null);
        } else {
          stopped.add(d.name);
          rows.set(d.name, {
            unit: d.name,
            kind: d.kind,
            result: r.status === 'failed' ? 'failed' : 'uncertain',
            detail: r.reason,
          });
          changed.set(d.name, {
            ...(prior as ObservedUnit),
            lastRun: run,
            // A failed destroy must not make the next reconcile run the unit again: it waits.
            condition: {
              state: r.status === 'failed' ? 'failed' : 'uncertain',
              reason: `teardown: ${r.reason}; run \`nyl teardown -e ${env}\` again once fixed, or \`nyl recover -e ${env} --unit ${d.name} --retry\` to keep the unit`,
              run,
              since: isoTime(ctx.now()),
              retryable: false,
            },
          });
        }
        const c: Checkpoint = {
          schema: 'nyl.checkpoint/v1',
          name: d.name,
          kind: d.kind,
          uid: d.uid,
          executionKey: d.executionKey,
          result: !r || r.status === 'succeeded' ? 'succeeded' : r.status,
          at: isoTime(ctx.now()),
          durationMs: r?.durationMs ?? 0,
          ...(r && r.status !== 'succeeded' ? { reason: r.reason } : {}),
        };
        session.runFiles.set(FILES.runCheckpoint(d.name), Buffer.from(prettyJson(c)));
        ctx.onEvent({
          type: 'unit-finish',
          unit: d.name,
          kind: d.kind,
          result: rows.get(d.name)?.result ?? '',
          durationMs: r?.durationMs ?? 0,
        });
      });
      record.executing = [];
    }
    const list = [...rows.values()];
    // Everything held or blocked, nothing to import: nothing to write either.
    if (!acquired && !takeover)
      return {
        operation: 'teardown',
        environment: env,
        source: cfg.source,
        rows: reverseWaves(docs)
          .flat()
          .map((n) => rows.get(n) as UnitRow)
          .filter(Boolean),
        problems,
        exit: list.some((r) => r.result === 'held') ? Exit.refused : Exit.ok,
      };
    if (!acquired) await write(GRACE_MS);
    for (const [n, o] of imp?.observed ?? []) if (!changed.has(n)) changed.set(n, o);
    const oFiles = observedFiles(state, changed);
    const dFiles = desiredFilesWithout(
      state,
      [...changed].filter(([, o]) => o === null).map(([n]) => n),
    );
    const message = transitionMessage({
      operation: 'teardown',
      environment: env,
      units: messageUnits(list, run),
      results: list.map((r) => r.result),
      lists: importLists(imp),
      extra: [['leaseBroken', imp?.leaseBroken]],
    });
    const landedState = new Map(
      [...state.observed]
        .filter(([n]) => changed.get(n) !== null)
        .map(([n, o]) => [n, (changed.get(n) as ObservedUnit) ?? o]),
    );
    const { tips } = await session.land(
      [
        { ref: state.refs.desired, old: state.tips.desired, files: dFiles, message },
        { ref: state.refs.observed, old: state.tips.observed, files: oFiles, message },
      ],
      ctx.now(),
      consumedRefs(original, imp, landedState),
      ownEntry(record, list, session.runFiles, ctx.now(), { imported: imp?.consumed.map((c) => c.id) }),
    );
    return {
      operation: 'teardown',
      environment: env,
      run,
      source: cfg.source,
      desired: tips.get(state.refs.desired),
      observed: tips.get(state.refs.observed),
      rows: reverseWaves(docs)
        .flat()
        .map((n) => rows.get(n) as UnitRow)
        .filter(Boolean),
      problems,
      exit: exitFor(list, problems, ['held']),
    };
  } catch (e) {
    const end = () => {
      endRecord(record, 'failed', ctx.now());
      return session.finish(record, ctx.now());
    };
    if (acquired && session.holding && isStorageFailure(e))
      throw await stoppedByStorage(e, { session, environment: env, end, command: 'teardown' });
    if (acquired && session.holding && !inDoubt(e)) await end().catch(() => undefined);
    throw e;
  }
}
