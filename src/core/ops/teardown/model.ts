import type { DesiredUnit } from '../../resolve/desired.js';
import type { ObservedUnit } from '../../state/documents.js';
import type { EnvState } from '../../state/read.js';
import type { ImportResult } from '../recovery/import-result.js';
import type { RunWriter } from '../runs/writer.js';
import type { UnitRow } from '../workspace/report.js';
import type { OpContext } from '../workspace/workspace.js';

/** A teardown under way: what it destroys, its writes, and what each unit came to. */
export interface Teardown {
  ctx: OpContext;
  env: string;
  /** The state after the import of dead runs. */
  state: EnvState;
  imp: ImportResult | undefined;
  docs: Map<string, DesiredUnit>;
  writer: RunWriter;
  parallelism: number;
  rows: Map<string, UnitRow>;
  /** Observed documents changed: null drops the unit's state (destroyed, or removed with no destroy). */
  changed: Map<string, ObservedUnit | null>;
  /** Units failed, blocked or held: what they need must stay. */
  stopped: Set<string>;
}
