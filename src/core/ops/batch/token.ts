import { createHash } from 'node:crypto';
import { sha256Key } from '../../util/canonical.js';
import { Exit, type Problem, problem } from '../../util/errors.js';

/**
 * A batch token: `b1.<id>.<fingerprints>`. The id (16 hex digits) is a digest of the group, the
 * selection flags and every environment's own plan token in order: any change makes it stale, and
 * it names the batch's record. The fingerprints (two base64url characters per environment, in
 * order) only tell a stale token's reader which environments' plans changed.
 */
export interface BatchTokenInput {
  group: string;
  failed: boolean;
  /** Environments in promotion order, each with its own plan token. */
  plans: { environment: string; token: string }[];
}

const VERSION = 'b1';

function fingerprint(envToken: string): string {
  return createHash('sha256').update(envToken).digest('base64url').slice(0, 2);
}

export function batchToken(input: BatchTokenInput): string {
  const id = sha256Key({
    group: input.group,
    failed: input.failed,
    plans: input.plans.map((p) => [p.environment, p.token]),
  }).slice(7, 23);
  return `${VERSION}.${id}.${input.plans.map((p) => fingerprint(p.token)).join('')}`;
}

export interface ParsedBatchToken {
  id: string;
  fingerprints: string[];
}

export function parseBatchToken(token: string): ParsedBatchToken | undefined {
  const m = /^b1\.([0-9a-f]{16})\.([A-Za-z0-9_-]+)$/.exec(token);
  if (!m || (m[2] as string).length % 2) return undefined;
  return { id: m[1] as string, fingerprints: (m[2] as string).match(/../g) ?? [] };
}

const planAgain = (group: string, failed: boolean) => {
  const f = failed ? ' --failed' : '';
  return `review the plans again with \`nyl plan --group ${group}${f}\` and pass its new token to \`nyl reconcile --group ${group}${f} --plan <token>\``;
};

/** A token that is not a batch token at all (an environment's plan token, a typo). */
export function notABatchToken(group: string, given: string, failed: boolean): Problem {
  const what = /^v\d+\./.test(given)
    ? 'it is the plan token of one environment (pass it with `-e ENV`), not a batch token'
    : 'it is not a batch token';
  return problem('NYL-BATCH-STALE', `plan ${given} is stale: ${what}`, {
    subject: group,
    exit: Exit.refused,
    fix: planAgain(group, failed),
  });
}

/** Refuses a batch token that no longer names the group's plan; says which environments changed. */
export function checkBatchToken(given: string, current: BatchTokenInput): Problem | undefined {
  const now = batchToken(current);
  if (given === now) return undefined;
  const parsed = parseBatchToken(given);
  if (!parsed) return notABatchToken(current.group, given, current.failed);
  let what: string;
  if (parsed.fingerprints.length !== current.plans.length)
    what = `the environments of group ${current.group} changed (the plan had ${parsed.fingerprints.length}, it has ${current.plans.length} now)`;
  else {
    const changed = current.plans.filter((p, i) => fingerprint(p.token) !== parsed.fingerprints[i]);
    what = changed.length
      ? `the plans of ${changed.map((p) => p.environment).join(', ')} changed (\`nyl plan -e ENV\` shows each one)`
      : `what it covers differs (the order of its environments, or ${current.failed ? 'it was made without --failed' : 'it was made with --failed'})`;
  }
  return problem('NYL-BATCH-STALE', `plan ${given} is stale: ${what}; nothing was executed`, {
    subject: current.group,
    exit: Exit.refused,
    fix: planAgain(current.group, current.failed),
  });
}

/** One environment of a recorded batch whose plan changed before the batch reached it. */
export function staleEntries(group: string, token: string, failed: boolean, envs: string[]): Problem {
  return problem(
    'NYL-BATCH-STALE',
    `batch ${token} cannot continue: the plans of ${envs.join(', ')} changed since the batch was recorded, and the batch has not run them yet; nothing was executed`,
    { subject: group, exit: Exit.refused, fix: planAgain(group, failed) },
  );
}
