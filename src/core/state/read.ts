import type { GitRepo } from '../git/repo.js';
import type { DesiredUnit } from '../resolve/desired.js';
import type { RefBackend } from './backend.js';
import { type Checkpoint, FILES, type LeaseDoc, type ObservedUnit, type RunRecord } from './documents.js';

export interface EnvRefs {
  lease: string;
  desired: string;
  observed: string;
  run: (id: string) => string;
  evidence: (id: string) => string;
}

export function envRefs(prefix: string, env: string): EnvRefs {
  const base = `${prefix}/${env}`;
  return {
    lease: `${base}/lease`,
    desired: `${base}/desired`,
    observed: `${base}/observed`,
    run: (id) => `${base}/runs/${id}`,
    evidence: (id) => `${base}/evidence/${id}`,
  };
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
}

async function readJson<T>(repo: GitRepo, oid: string | undefined): Promise<T | undefined> {
  if (!oid) return undefined;
  const [body] = await repo.readBlobs([oid]);
  return JSON.parse((body as Buffer).toString('utf8')) as T;
}

async function treeOf(repo: GitRepo, commit: string | undefined): Promise<Map<string, string>> {
  if (!commit) return new Map();
  const c = await repo.readCommit(commit);
  return c ? repo.readTreeRecursive(c.tree) : new Map();
}

async function readRunRef(repo: GitRepo, id: string, ref: string, tip: string): Promise<RunRefState> {
  const files = await treeOf(repo, tip);
  const desired = new Map<string, DesiredUnit>();
  const checkpoints = new Map<string, Checkpoint>();
  const logs = new Map<string, string>();
  const jobs: Promise<void>[] = [];
  for (const [path, oid] of files) {
    const log = /^units\/(.+)\/log\.txt$/.exec(path);
    if (log) logs.set(log[1] as string, oid);
    const m = /^units\/(.+)\/(desired|checkpoint)\.json$/.exec(path);
    if (!m) continue;
    jobs.push(
      readJson<DesiredUnit & Checkpoint>(repo, oid).then((doc) => {
        if (!doc) return;
        if (m[2] === 'desired') desired.set(m[1] as string, doc);
        else checkpoints.set(m[1] as string, doc);
      }),
    );
  }
  const [record] = await Promise.all([readJson<RunRecord>(repo, files.get(FILES.run)), ...jobs]);
  // Only a tip this repository has can tell what is newer; without it, fall back to run ids.
  const based = record?.basedOn ? await repo.readCommit(record.basedOn) : undefined;
  const basedOnFiles = based ? await repo.readTreeRecursive(based.tree) : undefined;
  return { id, ref, tip, record: record as RunRecord, desired, checkpoints, logs, basedOnFiles };
}

/** Reads an environment's state from the tips of its refs; never walks history. */
export async function readEnvironment(
  repo: GitRepo,
  backend: RefBackend,
  prefix: string,
  environment: string,
): Promise<EnvState> {
  const refs = envRefs(prefix, environment);
  const tips = await backend.list(`${prefix}/${environment}`);
  const runs = new Map<string, string>();
  const evidence = new Map<string, string>();
  for (const [ref, oid] of tips) {
    const m = /\/(runs|evidence)\/([^/]+)$/.exec(ref);
    if (m && ref.startsWith(`${prefix}/${environment}/`)) (m[1] === 'runs' ? runs : evidence).set(m[2] as string, oid);
  }
  const state: EnvState = {
    environment,
    refs,
    allTips: tips,
    tips: {
      lease: tips.get(refs.lease),
      desired: tips.get(refs.desired),
      observed: tips.get(refs.observed),
      runs,
      evidence,
    },
    observed: new Map(),
    observedFiles: new Map(),
    desiredFiles: new Map(),
    desiredUids: new Map(),
    runs: new Map(),
    evidence: new Map(),
  };
  const [leaseFiles, observedFiles, desiredFiles] = await Promise.all([
    treeOf(repo, state.tips.lease),
    treeOf(repo, state.tips.observed),
    treeOf(repo, state.tips.desired),
  ]);
  state.observedFiles = observedFiles;
  state.desiredFiles = desiredFiles;
  const unitPaths = [...observedFiles.entries()].filter(([p]) => /^units\/[^/]+\.json$/.test(p));
  const [lease, bodies, runStates, evidenceStates] = await Promise.all([
    readJson<LeaseDoc>(repo, leaseFiles.get(FILES.lease)),
    repo.readBlobs(unitPaths.map(([, oid]) => oid)),
    Promise.all([...runs].map(([id, tip]) => readRunRef(repo, id, refs.run(id), tip))),
    Promise.all([...evidence].map(([id, tip]) => readRunRef(repo, id, refs.evidence(id), tip))),
  ]);
  state.lease = lease;
  bodies.forEach((b) => {
    const doc = JSON.parse(b.toString('utf8')) as ObservedUnit;
    state.observed.set(doc.name, doc);
  });
  const unobserved = [...desiredFiles].filter(
    ([p]) => /^units\/[^/]+\.json$/.test(p) && !state.observed.has(p.slice(6, -5)),
  );
  const docs = await repo.readBlobs(unobserved.map(([, oid]) => oid));
  for (const b of docs) {
    const d = JSON.parse(b.toString('utf8')) as DesiredUnit;
    state.desiredUids.set(d.name, d.uid);
  }
  for (const r of runStates) state.runs.set(r.id, r);
  for (const r of evidenceStates) state.evidence.set(r.id, r);
  return state;
}
