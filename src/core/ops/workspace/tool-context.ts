import type { ExecuteContext } from '../../drivers/driver.js';
import { type DesiredUnit, timeoutMs } from '../../resolve/desired.js';
import { masker } from '../../util/mask.js';
import type { OpContext } from './workspace.js';

/** What a driver gets to run a unit's tool in this operation: the unit's timeout, the cancel, the masking. */
export function toolContext(
  ctx: OpContext,
  environment: string,
  run: string,
  unit: DesiredUnit,
  extra: Pick<ExecuteContext, 'receipt' | 'saved'> = {},
): ExecuteContext {
  return {
    environment,
    run,
    unit,
    cwd: ctx.repo.root,
    timeoutMs: timeoutMs(unit),
    cancellation: ctx.cancellation,
    mask: masker.mask,
    local: ctx.opts.local,
    ...extra,
  };
}
