/** The JSON documents Nyl keeps in ref trees; every one carries a schema version. See docs/git-storage.md. */
import type { RecordedChanges } from '../changes/model.js';

export interface Holder {
  /** `user@host` */
  id: string;
  actor?: string;
  workflowRun?: string;
  /** The GitHub Actions job that holds it, when it runs in one: whether it finished, the Actions API tells. */
  github?: GithubJob;
}

/** A GitHub Actions job, as a run recorded it (from the runner's environment and, with a token, the API). */
export interface GithubJob {
  serverUrl: string;
  apiUrl?: string;
  repository: string;
  runId: string;
  runAttempt: string;
  /** The job's key in the workflow (GITHUB_JOB). */
  job: string;
  runnerName?: string;
  /** Its numeric id and page, when the API could be asked. */
  jobId?: number;
  jobUrl?: string;
}

/** A lease break: who, when, why, and any unreadable lease, run or evidence ref it replaced. */
export interface BreakInfo {
  at: string;
  by: string;
  reason: string;
  replaced?: { ref: string; tip: string; cause: string; setAside?: string }[];
}

export interface LeaseDoc {
  schema: 'nyl.lease/v1';
  environment: string;
  state: 'held' | 'released' | 'broken';
  run: string;
  operation: string;
  holder: Holder;
  acquiredAt: string;
  renewedAt: string;
  deadline: string;
  /** How often the holder renews the lease while it runs (a taker waits two of these before calling it silent). */
  heartbeatMs?: number;
  broken?: BreakInfo;
}

/**
 * A run's lifecycle: claimed (lease taken, run ref written) → executing (wave k) → one terminal
 * state. `lost`: taken over after its deadline or a broken lease; `superseded`/`refused`: ended
 * without executing (an older source; a gate, a stale plan). `timeout` is read, no longer written.
 */
export type RunState =
  | 'claimed'
  | 'executing'
  | 'succeeded'
  | 'failed'
  | 'cancelled'
  | 'lost'
  | 'superseded'
  | 'refused'
  | 'timeout';

/** What happened to one unit in a run, as its history keeps it. */
export interface UnitResult {
  result: string;
  kind?: string;
  durationMs?: number;
  exitCode?: number;
  /** The failure text, why it is uncertain, or why it waits for approval (masked, bounded). */
  reason?: string;
  /** Kinds that plan: the resource changes it applied, or that wait for approval. */
  changes?: RecordedChanges;
}

export interface RunRecord {
  schema: 'nyl.run/v1';
  run: string;
  environment: string;
  operation: string;
  state: RunState;
  holder: Holder;
  source: string;
  startedAt: string;
  updatedAt: string;
  deadline: string;
  phase: 'resolution' | 'wave' | 'transition' | 'finished';
  wave?: number;
  /** Units started and not yet checkpointed. */
  executing: string[];
  /** Tip of the observed ref the run started from: a later import knows what is newer than it. */
  basedOn?: string;
  /** For `nyl exec`: the repair this run makes. */
  exec?: { unit: string; command: string[]; by: string; reason?: string };
  /** A broken lease this run took over, kept here until an import of it lands (then a later importer records it). */
  takenOver?: { run: string; leaseBroken: BreakInfo };
  finishedAt?: string;
  /** Where the run's tools run: the host, nyl's pid, and the file its watchdog lists their process groups in. */
  supervisor?: { host: string; pid: number; groupsFile?: string };
  /** Process groups of the tools running at the last write. */
  processGroups?: number[];
  /** Each state the run moved to, with its time (and the wave and units of an executing one). */
  states?: { state: RunState; at: string; wave?: number; units?: string[] }[];
  /** Units running at the last write (a heartbeat's too): when each started, how long it had run. */
  running?: Record<string, { startedAt: string; elapsedMs: number }>;
  /** Each unit's result once the run ended (history). */
  results?: Record<string, UnitResult>;
  /** The run that imported this one (lost, cancelled, or failed without a transition). */
  importedBy?: string;
  /** Runs this run imported before it executed. */
  imported?: string[];
  /** Why a refused or superseded run ended: the problem it answered with. */
  ended?: { code: string; message: string };
  /** The plan token it executed (--plan): the same accepted plan answers with this run again. */
  plan?: string;
  /** A recovery run's selection (--failed, --from) and the configuration revision it ran against. */
  recovery?: { selection: string; roots: string[]; revision: string };
  /** Units retried in this run (`retries`): the attempt each is at, written before that attempt starts. */
  attempts?: Record<string, number>;
}

export interface Receipt {
  executionKey: string;
  uid: string;
  run: string;
  /** Source commit whose configuration the execution applied. */
  source?: string;
  at: string;
  outputs: Record<string, string>;
  artifacts: Record<string, string>;
  /** A unit with `retries`: the attempt of its run that succeeded. */
  attempts?: number;
  /** The identities of the files it applied (path: object id in its source commit); absent from a receipt of a nyl before file keys. */
  files?: Record<string, string>;
  /** Kinds that plan (Terraform, OpenTofu): the resource changes it applied. */
  changes?: RecordedChanges;
}

export interface Condition {
  state: 'uncertain' | 'failed';
  reason: string;
  run: string;
  since: string;
  retryable?: boolean;
  exitCode?: number;
  /** Execution key of the attempt that failed (a changed desired document runs again). */
  executionKey?: string;
  /** The identities of that attempt's files (see Receipt): absent from a failure of a nyl before file keys. */
  files?: Record<string, string>;
  /** Whether the run named had checkpointed the unit when the condition was recorded (else a later checkpoint is late). */
  checkpointed?: boolean;
  /** The configuration revision of the attempt (launch settings, variable names): see ops/evaluate/revision.ts. */
  revision?: string;
  /** A unit with `retries`: how many attempts its run made. */
  attempts?: number;
}

/** One unit's checkpoint on a run ref: what its execution recorded. */
export interface Checkpoint {
  schema: 'nyl.checkpoint/v1';
  name: string;
  kind: string;
  uid: string;
  executionKey: string;
  /** Source commit of the run that executed it. */
  source?: string;
  result: 'succeeded' | 'failed' | 'uncertain';
  at: string;
  durationMs: number;
  outputs?: Record<string, string>;
  artifacts?: Record<string, string>;
  exitCode?: number;
  reason?: string;
  retryable?: boolean;
  /** A unit with `retries`: the attempts made so far (a failed one is checkpointed before the next waits). */
  attempts?: number;
  /** The identities of the files of the document it executed (see Receipt). */
  files?: Record<string, string>;
  /** Kinds that plan: the resource changes it applied (see Receipt). */
  changes?: RecordedChanges;
}

/** A unit's observed state: last receipt, condition and observations. */
export interface ObservedUnit {
  schema: 'nyl.observed-unit/v1';
  name: string;
  kind: string;
  uid: string;
  receipt?: Receipt;
  condition?: Condition;
  /** Run that last changed this document. */
  lastRun: string;
  /** Latest drift observation by `nyl verify`, about the receipt with `receiptKey`. */
  drift?: {
    state: 'in-sync' | 'drifted' | 'unknown';
    detail: string;
    at: string;
    receiptKey: string;
    /** Kinds that plan: the resources that drifted, as the actions that would put them back. */
    resources?: RecordedChanges['resources'];
  };
  /** Latest health observation a driver reported. */
  health?: { state: string; detail: string; at: string };
  /** Attestations a driver reported at the last verify (e.g. digests, versions). */
  attestations?: Record<string, string>;
  /** Held by an operator: not executed, its consumers resolve from its last receipt. */
  hold?: { by: string; reason: string; at: string };
  /** Native repairs made with `nyl exec` (newest last, bounded). */
  repairs?: {
    run: string;
    command: string[];
    by: string;
    reason?: string;
    at: string;
    exitCode: number | null;
    output: string;
  }[];
  /** After a repair and resume: the first execution needs its plan approved by token. */
  approvalRequired?: { reason: string; since: string };
}

export interface EnvironmentDoc {
  schema: 'nyl.environment/v1';
  environment: string;
  run: string;
  source: string;
  at: string;
}

export const FILES = {
  lease: 'lease.json',
  run: 'run.json',
  environment: 'environment.json',
  unit: (name: string) => `units/${name}.json`,
  log: (name: string) => `logs/${name}.txt`,
  runDesired: (name: string) => `units/${name}/desired.json`,
  runCheckpoint: (name: string) => `units/${name}/checkpoint.json`,
  runLog: (name: string) => `units/${name}/log.txt`,
  /** A running unit's output so far, as the last heartbeat saw it (bounded). */
  runTail: (name: string) => `units/${name}/tail.txt`,
} as const;
