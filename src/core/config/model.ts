import type { ForEachSource, Item } from './for-each.js';
import type { Reference } from './references.js';
import type { EnvironmentDoc, EnvironmentGroupDoc, UnitDoc } from './schema.js';

/** What the configuration is once read and validated (config/load.ts): environments, groups, units, and where each was written. */

export interface Location {
  file: string;
  line: number;
}

export interface UnitConfig {
  doc: UnitDoc;
  at: Location;
  /** Output references in the unit's spec, in order of appearance. */
  refs: Reference[];
  /** needs plus every unit referenced: the unit's dependency edges. */
  deps: string[];
  /** Where a dependency is named (a needs entry or a reference), for messages. */
  depAt: (dep: string) => { line: number; field: string };
  /** Line of a field of the document, for messages. */
  lineAt: (path: (string | number)[]) => number;
  /** A mapped unit (a group): where its items come from (resolve/for-each.ts). */
  forEach?: ForEachSource;
  /** Item paths its spec uses: `key`, `value`, `value.<field>`. */
  each?: string[];
  /** An instance of a group: the group and its item. */
  instance?: { group: string; item: Item };
  /** Why it cannot be resolved: a group whose items are unknown or unusable, an item lacking a field. */
  unresolved?: string;
}

export interface Config {
  /** Commit the configuration was read from. */
  source: string;
  /** That commit's tree: what the units' files are read from (resolve/unit-sources.ts). */
  tree?: string;
  files: string[];
  environments: Map<string, { doc: EnvironmentDoc; at: Location; lineAt: (path: (string | number)[]) => number }>;
  groups: Map<string, { doc: EnvironmentGroupDoc; at: Location; lineAt: (path: (string | number)[]) => number }>;
  units: Map<string, UnitConfig>;
  /** Names of unit documents that failed validation (not "undefined" for reference checks). */
  invalid: Set<string>;
}
