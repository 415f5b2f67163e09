import type {
  Counts,
  KeptChanges,
  PlannedChanges,
  RecordedChanges,
  ResourceAction,
  ResourceChange,
  UnitChanges,
} from './model.js';

/** Terraform's own symbols, so a plan reads as the tool's would. */
export const SYMBOL: Record<ResourceAction, string> = {
  create: '+',
  update: '~',
  replace: '-/+',
  delete: '-',
  read: '<=',
  forget: '.',
};

/** The order a plan is shown in: what destroys first. */
const ORDER: ResourceAction[] = ['delete', 'replace', 'create', 'update', 'read', 'forget'];

/** Deletes and replaces destroy what exists. */
export const isDestructive = (r: Pick<ResourceChange, 'action'>) => r.action === 'delete' || r.action === 'replace';

/** What waits for a person unless configured otherwise: deletes, and replaces of objects that are not tainted. */
export const needsApproval = (r: Pick<ResourceChange, 'action' | 'tainted'>) => isDestructive(r) && !r.tainted;

export function countsOf(resources: Pick<ResourceChange, 'action'>[]): Counts {
  const c: Counts = { create: 0, update: 0, replace: 0, delete: 0, read: 0 };
  for (const r of resources) if (r.action !== 'forget') c[r.action]++;
  return c;
}

/** `+2 ~1 -/+1 -0`, and `<=N` when data sources are read. */
export function countsText(c: Counts): string {
  const text = `+${c.create} ~${c.update} -/+${c.replace} -${c.delete}`;
  return c.read ? `${text} <=${c.read}` : text;
}

/** Destructive changes first, then by action, then by address. */
export function ordered<T extends Pick<ResourceChange, 'address' | 'action'>>(resources: T[]): T[] {
  return [...resources].sort(
    (a, b) => ORDER.indexOf(a.action) - ORDER.indexOf(b.action) || (a.address < b.address ? -1 : 1),
  );
}

/** A plan's changes as a report shows them: counted, destructive ones first. */
export function unitChanges(p: PlannedChanges): UnitChanges {
  return {
    counts: countsOf(p.resources),
    resources: ordered(p.resources),
    outputs: [...p.outputs].sort((a, b) => (a.name < b.name ? -1 : 1)),
  };
}

/** The compact form a plan file or a PR comment keeps: no attribute names, short digests. */
export function keptChanges(p: PlannedChanges): KeptChanges {
  return {
    resources: ordered(p.resources).map((r) => [r.address, r.action, r.digest]),
    outputs: p.outputs.map((o) => [o.name, o.action]),
  };
}

/** What the state keeps of a plan's changes. */
export function recordedChanges(p: Pick<PlannedChanges, 'resources'>): RecordedChanges {
  return { counts: countsOf(p.resources), resources: ordered(p.resources).map((r) => [r.address, r.action]) };
}
