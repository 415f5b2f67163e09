import { type Reference, scanReferences, substitute } from '../../config/references.js';
import type { Outputs } from '../../resolve/outputs.js';
import type { ObservedUnit } from '../../state/documents.js';
import { masker } from '../../util/mask.js';

/** An environment's URL resolved, or why it cannot be (`missing`); neither when it has no `url`. */
export interface EnvironmentUrl {
  url?: string;
  missing?: string;
}

/**
 * The environment's `url` template (config `url`, Selection.url) with every `${{ units.U.outputs.K }}`
 * replaced by that output; a missing or sensitive output gives no URL and says why. Masked anyway.
 */
export function environmentUrl(
  sel: { url?: string },
  outputsOf: (unit: string) => Outputs | undefined,
  artifactsOf: (unit: string) => Record<string, string> | undefined = () => undefined,
): EnvironmentUrl {
  if (sel.url === undefined) return {};
  for (const ref of scanReferences(sel.url).refs) {
    const missing = missingOutput(ref, outputsOf(ref.unit), artifactsOf(ref.unit));
    if (missing) return { missing };
  }
  return { url: masker.mask(substitute(sel.url, (ref) => outputsOf(ref.unit)?.[ref.key] ?? '')) };
}

/** The URL as observed documents record it: each unit's receipt's outputs. */
export function recordedUrl(sel: { url?: string }, observed: ReadonlyMap<string, ObservedUnit>): EnvironmentUrl {
  const receipt = (unit: string) => observed.get(unit)?.receipt;
  return environmentUrl(
    sel,
    (u) => receipt(u)?.outputs,
    (u) => receipt(u)?.artifacts,
  );
}

function missingOutput(
  ref: Reference,
  outputs: Outputs | undefined,
  artifacts: Record<string, string> | undefined,
): string | undefined {
  if (!outputs) return `${ref.unit} has no receipt`;
  if (outputs[ref.key] !== undefined) return undefined;
  const sensitive = artifacts?.sensitiveOutputs?.split(',') ?? [];
  return sensitive.includes(ref.key)
    ? `output ${ref.key} of ${ref.unit} is sensitive (or holds a secret's value): Nyl never records it`
    : `${ref.unit} has no output ${ref.key}`;
}
