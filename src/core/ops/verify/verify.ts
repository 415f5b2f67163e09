import type { VerifyResult } from '../../drivers/driver.js';
import { driverFor } from '../../drivers/index.js';
import { keyMatch, timeoutMs } from '../../resolve/desired.js';
import type { ObservedUnit } from '../../state/documents.js';
import { canonicalJson } from '../../util/canonical.js';
import { Exit, type Problem, problem } from '../../util/errors.js';
import { masker } from '../../util/mask.js';
import { mapPool } from '../../util/pool.js';
import { isoTime } from '../../util/time.js';
import { uuid7 } from '../../util/uuid7.js';
import { decide } from '../evaluate/decide.js';
import { evaluateAll } from '../evaluate/evaluate.js';
import { refuseUncommitted, toolUnit } from '../judge/files-gate.js';
import { verifiable } from '../judge/promotion.js';
import { DEFAULT_PARALLELISM } from '../reconcile/reconcile.js';
import { waitForNonImportWrite } from '../recovery/recover.js';
import { transitionMessage } from '../transition/message.js';
import type { RunReport, UnitRow } from '../workspace/report.js';
import { loadEnvironment, type OpContext, refuseUnpublished } from '../workspace/workspace.js';
import { writeObserved } from '../writes/write-observed.js';

/**
 * Asks each unit's driver whether its receipt still holds, executing nothing. Records the latest
 * drift, health and attestations in one observed commit, none when nothing changed; never
 * touches a receipt or a condition. Exit 3 on drift.
 */
export async function verify(ctx: OpContext, opts: { environment: string; parallelism?: number }): Promise<RunReport> {
  const env = opts.environment;
  let loaded = await loadEnvironment(ctx, env);
  refuseUnpublished(loaded);
  loaded = await waitForNonImportWrite(ctx, loaded);
  const { cfg, sel, state } = loaded;
  const evaluated = evaluateAll(sel, state);
  const mask = masker.mask;
  const run = uuid7();
  const rows: UnitRow[] = [];
  const changed = new Map<string, ObservedUnit>();
  const problems: Problem[] = [];
  const targets = [...evaluated.values()];
  // A check runs on the working tree: refuse files that are not the commit's the receipt names.
  await refuseUncommitted(
    ctx,
    sel,
    cfg.source,
    targets.flatMap((e) => {
      const r = e.observed?.receipt;
      const d = e.desired;
      const checked = r && d && keyMatch(d, r.executionKey, r.files) !== 'different' && verifiable(e.kind, d.spec);
      return checked ? [toolUnit(d)] : [];
    }),
  );
  const results = await mapPool(targets, opts.parallelism ?? DEFAULT_PARALLELISM, async (e) => {
    const o = e.observed;
    // Only a receipt of the current configuration is verified: a changed unit is reconcile's work.
    if (!o?.receipt || !e.desired || keyMatch(e.desired, o.receipt.executionKey, o.receipt.files) === 'different')
      return undefined;
    const driver = driverFor(e.kind);
    if (!driver.verify) return undefined;
    // The receipt is what is verified: its uid and outputs, with the unit's current resolution.
    const unit = { ...e.desired, uid: o.uid };
    return driver.verify({
      environment: env,
      run,
      unit,
      cwd: ctx.repo.root,
      timeoutMs: timeoutMs(unit),
      cancellation: ctx.cancellation,
      mask,
      local: ctx.opts.local,
      receipt: o.receipt,
    });
  });
  const at = isoTime(ctx.now());
  targets.forEach((e, i) => {
    const r: VerifyResult | undefined = results[i];
    const o = e.observed;
    if (!o?.receipt) {
      rows.push({ unit: e.name, kind: e.kind, result: 'none', detail: 'no receipt to verify' });
      return;
    }
    if (!r) {
      rows.push({
        unit: e.name,
        kind: e.kind,
        result: 'skipped',
        detail: !e.desired
          ? 'pending: resolves after its inputs'
          : keyMatch(e.desired, o.receipt.executionKey, o.receipt.files) === 'different'
            ? 'its configuration changed since its receipt: reconcile first'
            : 'its kind or spec has no check',
      });
      return;
    }
    rows.push({ unit: e.name, kind: e.kind, result: r.state, detail: r.detail });
    const next: ObservedUnit = {
      ...o,
      drift: { state: r.state, detail: r.detail, at, receiptKey: o.receipt.executionKey },
    };
    if (r.health) next.health = { ...r.health, at };
    if (r.attestations) next.attestations = r.attestations;
    // Written only when what was observed changed (not merely when it was observed again).
    const same = (x: ObservedUnit) =>
      canonicalJson([
        x.drift?.state,
        x.drift?.detail,
        x.drift?.receiptKey,
        x.health?.state,
        x.health?.detail,
        x.attestations,
      ]);
    if (same(next) !== same(o)) changed.set(e.name, next);
    if (r.state === 'drifted') {
      const d = e.desired ? decide(e.desired, next, e.policy, { driftRepair: sel.driftRepair }) : undefined;
      const next_ =
        d?.action === 'execute'
          ? `the next reconcile re-executes it (driftRepair: ${sel.driftRepair})`
          : d?.action === 'awaiting-approval'
            ? `the next reconcile waits for approval: it is not safe to re-run (recovery policy ${e.policy})`
            : d?.action === 'drifted'
              ? 'the next reconcile leaves it drifted (driftRepair: manual)'
              : d?.action === 'held'
                ? 'the next reconcile leaves it: it is held'
                : 'the next reconcile settles its condition first';
      problems.push(
        problem('NYL-VERIFY-DRIFT', `unit ${e.name} drifted: ${r.detail}; ${next_}`, {
          severity: 'warning',
          subject: e.name,
          exit: Exit.drift,
          fix:
            d?.action === 'awaiting-approval'
              ? `run \`nyl reconcile -e ${env} --approve ${e.name}\` once re-running it is safe`
              : d?.action === 'drifted'
                ? `force it with \`nyl reconcile -e ${env} --unit ${e.name} --reapply --reason <text>\``
                : `run \`nyl reconcile -e ${env}\` to repair it`,
        }),
      );
    }
  });
  let observed: string | undefined;
  if (changed.size) {
    const message = transitionMessage({
      operation: 'verify',
      environment: env,
      units: new Map(
        [...changed].map(([n, o]) => [n, { drift: o.drift?.state, detail: o.drift?.detail || undefined }]),
      ),
      results: rows.filter((r) => ['in-sync', 'drifted', 'unknown'].includes(r.result)).map((r) => r.result),
      lists: [['drifted', rows.filter((r) => r.result === 'drifted').map((r) => r.unit)]],
    });
    observed = (await writeObserved(ctx, state, 'verify', changed, message)).observed;
  }
  const drifted = rows.some((r) => r.result === 'drifted');
  return {
    operation: 'verify',
    environment: env,
    source: cfg.source,
    observed: observed ?? state.tips.observed,
    rows,
    problems,
    exit: drifted ? Exit.drift : Exit.ok,
    header: ['UNIT', 'KIND', 'DRIFT', 'DETAIL'],
    extra: [['recorded', observed ? 'yes' : 'no change']],
  };
}
