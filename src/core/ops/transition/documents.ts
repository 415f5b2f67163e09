import { countsText } from '../../changes/counts.js';
import type { GitRepo, TreeFiles } from '../../git/repo.js';
import { type DesiredUnit, resolveUnit } from '../../resolve/desired.js';
import type { Selection } from '../../resolve/select.js';
import { FILES, type ObservedUnit } from '../../state/documents.js';
import type { EnvState } from '../../state/read.js';
import { prettyJson } from '../../util/canonical.js';
import type { ImportResult } from '../recovery/import-result.js';
import type { UnitRow } from '../workspace/report.js';

/**
 * The desired ref's tree: the resolution's waves, the source commit it was applied from (the
 * environment's recorded source, which a later reconcile of an older commit compares with), and
 * one document per unit.
 */
export function desiredFiles(
  sel: Selection,
  docs: Map<string, DesiredUnit>,
  state: EnvState,
  source: string | undefined = state.desiredSource,
): TreeFiles {
  const files: TreeFiles = new Map();
  files.set(FILES.environment, environmentDoc(sel, source));
  // Units that left the configuration keep their last document until torn down or forgotten.
  for (const name of state.observed.keys()) {
    const old = state.desiredFiles.get(FILES.unit(name));
    if (!sel.units.has(name) && old) files.set(FILES.unit(name), { oid: old });
  }
  for (const name of sel.units.keys()) {
    const d = docs.get(name);
    const old = state.desiredFiles.get(FILES.unit(name));
    // A held unit keeps the document of its last receipt; one that could not be resolved keeps its own.
    if (old && (!d || state.observed.get(name)?.hold)) files.set(FILES.unit(name), { oid: old });
    else if (d) files.set(FILES.unit(name), desiredBody(d));
  }
  return files;
}

/**
 * The observed ref's tree: every document kept, the changed ones replaced, and the log tail of
 * each unit's last execution (so it outlives the run ref, in history).
 */
export function observedFiles(
  state: EnvState,
  changed: Map<string, ObservedUnit | null>,
  logs: Map<string, string | { oid: string }> = new Map(),
): TreeFiles {
  const files: TreeFiles = new Map();
  for (const [p, oid] of state.observedFiles) files.set(p, { oid });
  for (const [name, o] of changed) {
    // null: the unit's state is dropped (teardown, state forget), its log with it.
    if (o) files.set(FILES.unit(name), Buffer.from(prettyJson(o)));
    else {
      files.delete(FILES.unit(name));
      files.delete(FILES.log(name));
    }
  }
  for (const [name, log] of logs) files.set(FILES.log(name), typeof log === 'string' ? Buffer.from(log) : log);
  return files;
}

/**
 * A desired document as written, serialized once: a run writes each executed unit's document on
 * its run ref before the unit starts and again on the desired ref when it lands. Resolution makes
 * a new document whenever anything in it changes; none is changed afterwards.
 */
const bodies = new WeakMap<DesiredUnit, Buffer>();
export function desiredBody(d: DesiredUnit): Buffer {
  let body = bodies.get(d);
  if (!body) {
    // A unit that uses no file keeps the document (and key) it had before file keys.
    const { files, ...rest } = d;
    body = Buffer.from(prettyJson(files && Object.keys(files).length ? d : rest));
    bodies.set(d, body);
  }
  return body;
}

/** The same desired files with the environment document naming another source (`desiredFiles` of it, for less). */
export function withSource(files: TreeFiles, sel: Selection, source: string | undefined): TreeFiles {
  return new Map(files).set(FILES.environment, environmentDoc(sel, source));
}

function environmentDoc(sel: Selection, source: string | undefined): Buffer {
  return Buffer.from(
    prettyJson({
      schema: 'nyl.environment/v1',
      environment: sel.environment,
      waves: sel.waves,
      ...(source ? { source } : {}),
    }),
  );
}

/** The desired ref's tree as it is, less the documents of `dropped` units. */
export function desiredFilesWithout(state: EnvState, dropped: Iterable<string>): TreeFiles {
  const files: TreeFiles = new Map();
  for (const [p, oid] of state.desiredFiles) files.set(p, { oid });
  for (const n of dropped) files.delete(FILES.unit(n));
  return files;
}

export function sameFiles(repo: GitRepo, files: TreeFiles, old: Map<string, string>): boolean {
  if (files.size !== old.size) return false;
  const batch = repo.batch();
  for (const [p, c] of files) {
    const oid = Buffer.isBuffer(c) ? batch.add('blob', c) : c.oid;
    if (old.get(p) !== oid) return false;
  }
  return true;
}

/** The document a unit has in the current resolution, given the outputs observed so far. */
export function desiredResolver(sel: Selection) {
  return (unit: string, uid: string, observed: Map<string, ObservedUnit>): DesiredUnit | undefined => {
    const u = sel.units.get(unit);
    if (!u) return undefined;
    try {
      return resolveUnit(u, uid, (d) => observed.get(d)?.receipt?.outputs, sel.sources);
    } catch {
      return undefined;
    }
  };
}

/** The `units:` entries of a transition message: every unit whose result is not `current`. */
export function messageUnits(rows: UnitRow[], run: string | undefined): Map<string, Record<string, unknown>> {
  const out = new Map<string, Record<string, unknown>>();
  for (const r of rows) {
    if (r.result === 'current') continue;
    const v: Record<string, unknown> = { result: r.result };
    if (r.executionKey) v.executionKey = r.executionKey;
    if (r.result !== 'executed' && r.result !== 'recovered' && r.result !== 'imported' && r.detail) v.reason = r.detail;
    if (r.run && r.run !== run) v.run = r.run;
    // The resource changes it applied (or that wait for approval): Terraform's counts.
    if (r.changes) v.changes = countsText(r.changes.counts);
    out.set(r.unit, v);
  }
  return out;
}

/** `recovered`: units taken over as uncertain, and uncertain units a converge policy ran again. */
export function importLists(imp: ImportResult | undefined, rows: UnitRow[] = []): [string, string[]][] {
  const recovered = [...(imp?.recovered ?? [])];
  for (const r of rows) if (r.result === 'recovered' && !recovered.includes(r.unit)) recovered.push(r.unit);
  return [
    ['recovered', recovered],
    ['imported', imp?.imported ?? []],
  ];
}

/**
 * Dead run refs and evidence refs a transition consumes, judged by the state it lands: a run an
 * uncertain unit still names is kept as evidence (its ref retired), every other one is deleted.
 */
export function consumedRefs(state: EnvState, imp: ImportResult | undefined, landed: Map<string, ObservedUnit>) {
  const needed = (id: string) =>
    [...landed.values()].some((o) => o.condition?.state === 'uncertain' && o.condition.run === id);
  const out = (imp?.consumed ?? []).map((r) => ({ id: r.id, ref: r.ref, tip: r.tip, retire: needed(r.id) }));
  for (const e of state.evidence.values())
    if (!needed(e.id)) out.push({ id: e.id, ref: e.ref, tip: e.tip, retire: false });
  return out;
}
