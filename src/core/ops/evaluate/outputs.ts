import type { ExecuteResult } from '../../drivers/driver.js';
import { masker } from '../../util/mask.js';

/**
 * Outputs are recorded in receipts, in clear: an output whose value holds a secret (the value of a
 * secret-looking variable, a sensitive output's value) is not. It is left out and named in the
 * `sensitiveOutputs` artifact, as a sensitive output is, so a reference to it is refused with the
 * sensitive-output message instead of passing a secret on.
 */
export function withoutSecretOutputs<
  R extends Pick<Extract<ExecuteResult, { status: 'succeeded' }>, 'outputs' | 'artifacts'>,
>(r: R): R {
  const secret = Object.keys(r.outputs).filter((k) => masker.contains(r.outputs[k] as string));
  if (!secret.length) return r;
  const outputs = Object.fromEntries(Object.entries(r.outputs).filter(([k]) => !secret.includes(k)));
  const known = r.artifacts.sensitiveOutputs ? r.artifacts.sensitiveOutputs.split(',') : [];
  const sensitiveOutputs = [...new Set([...known, ...secret])].sort().join(',');
  return { ...r, outputs, artifacts: { ...r.artifacts, sensitiveOutputs } };
}
