import { parseCommit } from '../git/objects.js';
import type { GitRepo } from '../git/repo.js';
import type { DesiredUnit } from '../resolve/desired.js';
import { crashPoint } from '../util/crash.js';
import type { RefBackend } from './backend.js';
import { type Checkpoint, FILES, type LeaseDoc, type ObservedUnit, type RunRecord } from './documents.js';
import { type DocumentKind, parseDocument } from './schemas.js';

export interface EnvRefs {
  lease: string;
  desired: string;
  observed: string;
  run: (id: string) => string;
  evidence: (id: string) => string;
  /** Ended runs, newest first along first parents (see history.ts). */
  history: string;
  /** A run that ended without the lease (superseded, refused), until history takes it in. */
  ended: (id: string) => string;
  /** Where `nyl lease break` sets aside a run or evidence ref that cannot be read (never read again). */
  unreadable: (id: string) => string;
}

export function envRefs(prefix: string, env: string): EnvRefs {
  const base = `${prefix}/${env}`;
  return {
    lease: `${base}/lease`,
    desired: `${base}/desired`,
    observed: `${base}/observed`,
    run: (id) => `${base}/runs/${id}`,
    evidence: (id) => `${base}/evidence/${id}`,
    history: `${base}/history`,
    ended: (id) => `${base}/ended/${id}`,
    unreadable: (id) => `${base}/unreadable/${id}`,
  };
}

/** A ref, or one document on it, that cannot be read: never treated as empty, never written over. */
export interface Unreadable {
  ref: string;
  tip: string;
  /** The file in the ref's tree, when one document is the problem. */
  file?: string;
  cause: string;
  scope: 'lease' | 'run' | 'evidence' | 'desired' | 'observed';
  /** The unit the document belongs to (a unit document of desired or observed). */
  unit?: string;
  /** The run or evidence ref's id. */
  id?: string;
}

export interface RunRefState {
  id: string;
  ref: string;
  tip: string;
  record: RunRecord;
  desired: Map<string, DesiredUnit>;
  checkpoints: Map<string, Checkpoint>;
  /** Log tail blob of each unit that ran. */
  logs: Map<string, string>;
  /** Output so far of each unit running at the last heartbeat (blob ids). */
  tails: Map<string, string>;
  /** Observed files (blob ids by path) when the run started, from its record's basedOn. */
  basedOnFiles?: Map<string, string>;
}

export interface EnvState {
  environment: string;
  refs: EnvRefs;
  /** Every ref under the environment's prefix with its tip. */
  allTips: Map<string, string>;
  tips: {
    lease?: string;
    desired?: string;
    observed?: string;
    runs: Map<string, string>;
    evidence: Map<string, string>;
    history?: string;
    ended: Map<string, string>;
  };
  lease?: LeaseDoc;
  /** Observed unit documents by name, and the blob of every observed file by path. */
  observed: Map<string, ObservedUnit>;
  observedFiles: Map<string, string>;
  /** Blob of every desired file by path (documents are compared by object id). */
  desiredFiles: Map<string, string>;
  /** uids of units resolved before but never observed (so a unit keeps its uid until it executes). */
  desiredUids: Map<string, string>;
  runs: Map<string, RunRefState>;
  evidence: Map<string, RunRefState>;
  /** What could not be read; an operation that would act on it refuses (NYL-STATE-UNREADABLE). */
  unreadable: Unreadable[];
  /** The source commit the environment's configuration was last applied from (desired environment.json, else the newest receipt's). */
  recordedSource?: string;
  /** The source desired environment.json holds, as stored (rewritten only with a change). */
  desiredSource?: string;
}

const UNIT_DOC = /^units\/([^/]+)\.json$/;

/** The observed tree as read: its files and every unit document, validated (git/derived-cache.ts). */
interface ObservedCacheEntry {
  files: [string, string][];
  docs: ObservedUnit[];
}

/** Reads refs and their documents, validating each; what cannot be read is collected, not thrown. */
class Reader {
  readonly unreadable: Unreadable[] = [];
  constructor(private readonly repo: GitRepo) {}

  /** The tree of the commit a ref points at; undefined (and recorded) when it is not a readable commit. */
  async tree(where: Omit<Unreadable, 'cause' | 'file'>): Promise<string | undefined> {
    const o = await this.repo.readObject(where.tip);
    if (!o) return this.fail(where, `its tip ${where.tip} is missing from this repository`);
    if (o.type !== 'commit') return this.fail(where, `points at a ${o.type}, not a commit`);
    const c = parseCommit(o.body); // read once: asking for it again would read it again
    const tree = c.tree ? await this.repo.readObject(c.tree) : undefined;
    if (tree?.type !== 'tree') return this.fail(where, `its commit has no readable tree (${c.tree || 'none'})`);
    return tree.oid;
  }

  /**
   * The files of the commit a ref points at; undefined (and recorded) when it is not a readable
   * commit. `cached`: the listing is kept between commands (the desired tree: one per unit).
   */
  async files(where: Omit<Unreadable, 'cause' | 'file'>, cached = false): Promise<Map<string, string> | undefined> {
    const tree = await this.tree(where);
    if (!tree) return undefined;
    const hit = cached ? this.repo.derived.get<[string, string][]>('tree', tree) : undefined;
    if (hit) return new Map(hit);
    const files = await this.repo.readTreeRecursive(tree);
    if (cached) this.repo.derived.set('tree', tree, [...files]);
    return files;
  }

  /** One validated document, or undefined (recorded as unreadable). */
  async doc<T>(
    kind: DocumentKind,
    where: Omit<Unreadable, 'cause'> & { file: string },
    oid: string | undefined,
  ): Promise<T | undefined> {
    if (!oid) return this.fail(where, `it has no ${where.file}`);
    const o = await this.repo.readObject(oid);
    if (o?.type !== 'blob')
      return this.fail(where, o ? `${where.file} is a ${o.type}, not a file` : `${where.file} is missing`);
    const r = parseDocument(kind, o.body);
    if (!r.ok) return this.fail(where, r.cause);
    return r.doc as T;
  }

  fail(where: Omit<Unreadable, 'cause'>, cause: string): undefined {
    this.unreadable.push({ ...where, cause });
    return undefined;
  }
}

async function readRunRef(
  reader: Reader,
  repo: GitRepo,
  scope: 'run' | 'evidence',
  id: string,
  ref: string,
  tip: string,
): Promise<RunRefState | undefined> {
  const where = { ref, tip, scope, id };
  const before = reader.unreadable.length;
  const files = await reader.files(where);
  if (!files) return undefined;
  const desired = new Map<string, DesiredUnit>();
  const checkpoints = new Map<string, Checkpoint>();
  const logs = new Map<string, string>();
  const tails = new Map<string, string>();
  const jobs: Promise<void>[] = [];
  for (const [path, oid] of files) {
    const log = /^units\/(.+)\/log\.txt$/.exec(path);
    if (log) logs.set(log[1] as string, oid);
    const tail = /^units\/(.+)\/tail\.txt$/.exec(path);
    if (tail) tails.set(tail[1] as string, oid);
    const m = /^units\/(.+)\/(desired|checkpoint)\.json$/.exec(path);
    if (!m) continue;
    const unit = m[1] as string;
    const kind = m[2] === 'desired' ? 'desired' : 'checkpoint';
    jobs.push(
      reader.doc<DesiredUnit | Checkpoint>(kind, { ...where, file: path }, oid).then((doc) => {
        if (!doc) return;
        if (doc.name !== unit)
          reader.fail({ ...where, file: path }, `it holds the document of unit ${doc.name}, not ${unit}`);
        else if (kind === 'desired') desired.set(unit, doc as DesiredUnit);
        else checkpoints.set(unit, doc as Checkpoint);
      }),
    );
  }
  const [record] = await Promise.all([
    reader.doc<RunRecord>('run', { ...where, file: FILES.run }, files.get(FILES.run)),
    ...jobs,
  ]);
  // One unreadable file makes the whole run unreadable: importing the rest would guess about it.
  if (!record || reader.unreadable.length > before) return undefined;
  // Only a tip this repository has can tell what is newer; without it, fall back to run ids.
  const based = record.basedOn ? await repo.readCommit(record.basedOn) : undefined;
  const basedOnFiles = based ? await repo.readTreeRecursive(based.tree) : undefined;
  return { id, ref, tip, record, desired, checkpoints, logs, tails, basedOnFiles };
}

/** An environment with nothing recorded (a first run, or a plan that cannot read the remote). */
export function emptyEnvState(prefix: string, environment: string): EnvState {
  return {
    environment,
    refs: envRefs(prefix, environment),
    allTips: new Map(),
    tips: { runs: new Map(), evidence: new Map(), ended: new Map() },
    observed: new Map(),
    observedFiles: new Map(),
    desiredFiles: new Map(),
    desiredUids: new Map(),
    runs: new Map(),
    evidence: new Map(),
    unreadable: [],
  };
}

/** The tips under an environment's prefix, with its run, evidence and ended refs by id. */
function tipsOf(prefix: string, environment: string, tips: Map<string, string>): EnvState['tips'] {
  const refs = envRefs(prefix, environment);
  const byKind = {
    runs: new Map<string, string>(),
    evidence: new Map<string, string>(),
    ended: new Map<string, string>(),
  };
  for (const [ref, oid] of tips) {
    const m = /\/(runs|evidence|ended)\/([^/]+)$/.exec(ref);
    if (m && ref.startsWith(`${prefix}/${environment}/`)) byKind[m[1] as keyof typeof byKind].set(m[2] as string, oid);
  }
  return {
    lease: tips.get(refs.lease),
    desired: tips.get(refs.desired),
    observed: tips.get(refs.observed),
    history: tips.get(refs.history),
    ...byKind,
  };
}

/**
 * One read of an environment's state: the trees of its tips, then their documents, each
 * validated (what cannot be read is collected, with where and why). Phases: trees (lease,
 * observed, desired) → documents (the lease, observed units, run and evidence refs, in parallel)
 * → uids of units only the desired ref knows → the recorded source.
 */
class EnvRead {
  private readonly reader: Reader;
  private readonly state: EnvState;
  private readonly refs: EnvRefs;

  constructor(
    private readonly repo: GitRepo,
    prefix: string,
    environment: string,
    tips: Map<string, string>,
  ) {
    this.reader = new Reader(repo);
    this.refs = envRefs(prefix, environment);
    this.state = { ...emptyEnvState(prefix, environment), allTips: tips, tips: tipsOf(prefix, environment, tips) };
  }

  async read(): Promise<EnvState> {
    const { state, refs, reader, repo } = this;
    const { tips } = state;
    const [leaseFiles, observedTree, desiredFiles] = await Promise.all([
      tips.lease ? reader.files({ ref: refs.lease, tip: tips.lease, scope: 'lease' }) : new Map<string, string>(),
      tips.observed ? reader.tree(this.observedWhere(tips.observed)) : undefined,
      tips.desired
        ? reader.files({ ref: refs.desired, tip: tips.desired, scope: 'desired' }, true)
        : new Map<string, string>(),
    ]);
    state.desiredFiles = desiredFiles ?? new Map();
    const [lease, observedDocs, runStates, evidenceStates] = await Promise.all([
      this.lease(leaseFiles),
      this.observed(observedTree),
      Promise.all([...tips.runs].map(([id, tip]) => readRunRef(reader, repo, 'run', id, refs.run(id), tip))),
      Promise.all(
        [...tips.evidence].map(([id, tip]) => readRunRef(reader, repo, 'evidence', id, refs.evidence(id), tip)),
      ),
    ]);
    state.lease = lease;
    for (const doc of observedDocs) if (doc) state.observed.set(doc.name, doc);
    await this.unobservedUids();
    await this.recordedSource();
    for (const r of runStates) if (r) state.runs.set(r.id, r);
    for (const r of evidenceStates) if (r) state.evidence.set(r.id, r);
    state.unreadable = reader.unreadable;
    return state;
  }

  private observedWhere(tip: string) {
    return { ref: this.refs.observed, tip, scope: 'observed' as const };
  }

  private lease(files: Map<string, string> | undefined): Promise<LeaseDoc | undefined> {
    const tip = this.state.tips.lease;
    if (!tip || !files) return Promise.resolve(undefined);
    const where = { ref: this.refs.lease, tip, scope: 'lease' as const, file: FILES.lease };
    return this.reader.doc<LeaseDoc>('lease', where, files.get(FILES.lease));
  }

  /** A unit's document of the observed or desired ref, which must be the document of the unit its path names. */
  private async unitDoc<T extends { name: string }>(
    kind: 'observed' | 'desired',
    ref: string,
    tip: string,
    [path, oid]: [string, string],
  ): Promise<T | undefined> {
    const unit = (UNIT_DOC.exec(path) as RegExpExecArray)[1] as string;
    const where = { ref, tip, scope: kind, file: path, unit };
    const doc = await this.reader.doc<T>(kind, where, oid);
    crashPoint('read-state');
    if (doc && doc.name !== unit)
      return this.reader.fail(where, `it holds the document of unit ${doc.name}, not ${unit}`);
    return doc;
  }

  /**
   * Every unit document of the observed ref (from the derived cache when its tree was read whole
   * before). Only a tree whose every document could be read is kept: an unreadable one is read
   * (and reported) again each time until it is repaired.
   */
  private async observed(tree: string | undefined): Promise<ObservedUnit[]> {
    const { state, repo, reader } = this;
    const tip = state.tips.observed;
    if (!tip || !tree) return [];
    const cached = repo.derived.get<ObservedCacheEntry>('observed', tree);
    if (cached) {
      crashPoint('read-state');
      state.observedFiles = new Map(cached.files);
      return cached.docs;
    }
    state.observedFiles = await repo.readTreeRecursive(tree);
    const before = reader.unreadable.length;
    const unitPaths = [...state.observedFiles].filter(([p]) => UNIT_DOC.test(p));
    const read = await Promise.all(
      unitPaths.map((f) => this.unitDoc<ObservedUnit>('observed', this.refs.observed, tip, f)),
    );
    const docs = read.filter((d): d is ObservedUnit => d !== undefined);
    if (reader.unreadable.length === before)
      repo.derived.set('observed', tree, { files: [...state.observedFiles], docs } satisfies ObservedCacheEntry);
    return docs;
  }

  /** The uids of units resolved before but never observed: a unit keeps its uid until it executes. */
  private async unobservedUids(): Promise<void> {
    const { state } = this;
    const unreadableUnits = new Set(
      this.reader.unreadable.filter((u) => u.scope === 'observed' && u.unit).map((u) => u.unit),
    );
    const unobserved = [...state.desiredFiles].filter(([p]) => {
      const m = UNIT_DOC.exec(p);
      return m && !state.observed.has(m[1] as string) && !unreadableUnits.has(m[1] as string);
    });
    const tip = state.tips.desired as string;
    const docs = await Promise.all(
      unobserved.map((f) => this.unitDoc<DesiredUnit>('desired', this.refs.desired, tip, f)),
    );
    for (const d of docs) if (d) state.desiredUids.set(d.name, d.uid);
  }

  /** The source the environment's configuration was last applied from: desired environment.json, else the newest receipt's. */
  private async recordedSource(): Promise<void> {
    const { state } = this;
    const envDoc = state.desiredFiles.get(FILES.environment);
    const tip = state.tips.desired;
    const where = { ref: this.refs.desired, tip: tip as string, scope: 'desired' as const, file: FILES.environment };
    const file = envDoc && tip ? await this.reader.doc<{ source?: string }>('environment', where, envDoc) : undefined;
    state.desiredSource = file?.source;
    state.recordedSource = file?.source ?? newestReceiptSource(state.observed);
  }
}

/** Reads an environment's state from the tips of its refs; never walks history. */
export async function readEnvironment(
  repo: GitRepo,
  backend: RefBackend,
  prefix: string,
  environment: string,
): Promise<EnvState> {
  const read = async () => {
    const tips = await backend.list(`${prefix}/${environment}`);
    return new EnvRead(repo, prefix, environment, tips).read();
  };
  const state = await read();
  return landingReadHalfDone(state) ? read() : state;
}

/**
 * The lease released by run R while R's ref is listed unfinished: no write leaves this (a landing
 * releases the lease and deletes the run ref in one push; a run that ends without landing marks
 * its ref finished in the write that releases). But a remote applies a push's updates before its
 * deletions, so a read made while R's landing commits sees it: read once more before importing R
 * as a dead run. A second read that still shows it is what is on the remote.
 */
function landingReadHalfDone(state: EnvState): boolean {
  const l = state.lease;
  return l?.state === 'released' && state.tips.runs.has(l.run) && state.runs.get(l.run)?.record?.phase !== 'finished';
}

/** Before environment.json recorded it: the source of the newest receipt. */
function newestReceiptSource(observed: Map<string, ObservedUnit>): string | undefined {
  let best: { at: string; source: string } | undefined;
  for (const o of observed.values()) {
    const r = o.receipt;
    if (r?.source && (!best || r.at > best.at)) best = { at: r.at, source: r.source };
  }
  return best?.source;
}

/** Reads the desired documents of `names` from the desired ref, validated (teardown, state show). */
export async function readDesiredDocs(
  repo: GitRepo,
  state: EnvState,
  names: string[],
): Promise<{ docs: Map<string, DesiredUnit>; unreadable: Unreadable[] }> {
  const reader = new Reader(repo);
  const docs = new Map<string, DesiredUnit>();
  await Promise.all(
    names.map(async (n) => {
      const oid = state.desiredFiles.get(FILES.unit(n));
      if (!oid || !state.tips.desired) return;
      const where = {
        ref: state.refs.desired,
        tip: state.tips.desired,
        scope: 'desired' as const,
        file: FILES.unit(n),
        unit: n,
      };
      const d = await reader.doc<DesiredUnit>('desired', where, oid);
      if (d && d.name !== n) reader.fail(where, `it holds the document of unit ${d.name}, not ${n}`);
      else if (d) docs.set(n, d);
    }),
  );
  return { docs, unreadable: reader.unreadable };
}
