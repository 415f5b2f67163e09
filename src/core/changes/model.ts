/**
 * What a Terraform/OpenTofu plan does, as data: each resource's address and action, the names of
 * its attributes that change and a digest of its planned values; never a value (values can hold
 * secrets, and a plan's text differs from run to run where its meaning does not).
 */

/** Create, update in place, replace (delete and create), delete, read (a data source), forget (leave the state only). */
export type ResourceAction = 'create' | 'update' | 'replace' | 'delete' | 'read' | 'forget';

export interface ResourceChange {
  address: string;
  action: ResourceAction;
  /** Top-level attributes whose values change (updates and replacements): names only. */
  attributes?: string[];
  /**
   * A replace of a tainted object (a create an interrupted apply left unfinished, or `taint`):
   * finishing what an apply started, it does not wait for approval.
   */
  tainted?: true;
  /**
   * 12 hex digits of sha256 over the action and the planned values, unknown values ("known after
   * apply") and sensitive ones normalised and known secrets masked: equal plans, equal digests.
   */
  digest: string;
}

export interface OutputChange {
  name: string;
  action: 'create' | 'update' | 'delete';
}

/** A plan's changes: resources (no-ops left out) and root outputs. */
export interface PlannedChanges {
  resources: ResourceChange[];
  outputs: OutputChange[];
}

export type Counts = Record<'create' | 'update' | 'replace' | 'delete' | 'read', number>;

/**
 * A unit's changes as a plan or a run reports them: the changes with their counts, or why there
 * are none to show (its inputs come from a unit that executes first; it could not be planned).
 */
export interface UnitChanges {
  counts: Counts;
  resources: ResourceChange[];
  outputs: OutputChange[];
}

/** The changes a reviewed plan listed for one unit, as a plan file or a PR comment keeps them. */
export interface KeptChanges {
  /** [address, action, digest] */
  resources: [string, ResourceAction, string][];
  /** [name, action] */
  outputs: [string, OutputChange['action']][];
}

/** What a receipt, a checkpoint or a drift observation keeps of a plan: counts, addresses and actions. */
export interface RecordedChanges {
  counts: Counts;
  /** [address, action], destructive ones first. */
  resources: [string, ResourceAction][];
}
