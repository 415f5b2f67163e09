import { loadConfig } from '../../config/load.js';
import { promotionOf, promotionOrder } from '../../config/promotion.js';
import { Exit } from '../../util/errors.js';
import type { OpReport } from '../workspace/report.js';
import type { OpContext } from '../workspace/workspace.js';

/**
 * `nyl environments`: every environment of the configuration in promotion order (each after the
 * ones its gate names), for people and for a workflow's `strategy.matrix`
 * (`nyl environments --json | jq -c .facts.environments`). Reads configuration only.
 */
export async function listEnvironments(ctx: OpContext): Promise<OpReport> {
  const cfg = await loadConfig(ctx.repo, { config: ctx.opts.config, cwd: ctx.opts.cwd });
  const order = promotionOrder(cfg);
  const details = order.map((name) => {
    const gate = promotionOf(cfg, name).promotion;
    const doc = cfg.environments.get(name)?.doc;
    return {
      name,
      ...(doc?.group ? { group: doc.group } : {}),
      after: gate?.after ?? [],
      verified: gate?.verified ?? false,
      production: doc?.production ?? false,
      // The template as written: resolving it would read each environment's state.
      ...(doc?.url !== undefined ? { urlTemplate: doc.url } : {}),
    };
  });
  return {
    operation: 'environments',
    environment: '',
    outcome: 'done',
    facts: [
      ['environments', order],
      ['promotion', details],
    ],
    table: {
      header: ['ENVIRONMENT', 'GROUP', 'AFTER'],
      rows: details.map((d) => [d.name, d.group ?? '', `${d.after.join(', ')}${d.verified ? ' (verified)' : ''}`]),
    },
    problems: [],
    exit: Exit.ok,
  };
}
