import type { Config } from '../../config/model.js';
import { promotionOrder } from '../../config/promotion.js';
import { DEFAULT_PREFIX } from '../../resolve/select.js';
import { Exit, NylError, problem } from '../../util/errors.js';

/** At most this many environments per batch, as seed 004 bounds its date ranges. */
export const MAX_BATCH = 100;

/** The environments of EnvironmentGroup `group` (those with `group: <group>`), in promotion order. */
export function groupMembers(cfg: Config, group: string): string[] {
  const g = cfg.groups.get(group);
  const known = [...cfg.groups.keys()];
  if (!g)
    throw new NylError(
      problem('NYL-GROUP-UNKNOWN', `environment group ${group} is not defined in ${cfg.files.join(', ')}`, {
        subject: group,
        fix: known.length
          ? `use one of: ${known.join(', ')}, or add a document \`kind: EnvironmentGroup\` named ${group}`
          : `add a document \`kind: EnvironmentGroup\` with \`name: ${group}\` and set \`group: ${group}\` on its environments`,
      }),
    );
  const members = promotionOrder(cfg).filter((e) => cfg.environments.get(e)?.doc.group === group);
  if (!members.length)
    throw new NylError(
      problem('NYL-GROUP-UNKNOWN', `environment group ${group} has no environments`, {
        subject: group,
        fix: `set \`group: ${group}\` on the environments it should hold`,
      }),
    );
  if (members.length > MAX_BATCH)
    throw new NylError(
      problem(
        'NYL-BATCH-TOO-LARGE',
        `environment group ${group} has ${members.length} environments; a batch takes at most ${MAX_BATCH}`,
        {
          subject: group,
          exit: Exit.failed,
          fix: `split ${group} into EnvironmentGroups of at most ${MAX_BATCH} environments and run one batch per group, or reconcile its environments one by one with \`-e ENV\``,
        },
      ),
    );
  return members;
}

/** Where the group's refs live: its own coordinationRefPrefix, or refs/nyl. */
export function groupPrefix(cfg: Config, group: string): string {
  return cfg.groups.get(group)?.doc.coordinationRefPrefix ?? DEFAULT_PREFIX;
}
