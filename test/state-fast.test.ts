import { describe, expect, it } from 'vitest';
import { DOCUMENT_SCHEMAS, type DocumentKind, parseDocument } from '../src/core/state/schemas.js';
import { validFast } from '../src/core/util/fast-validate.js';

// State documents are validated by the compiled fast path and, when it declines, by zod: the fast
// path must give exactly what zod gives (values and key order) or decline, and it must take every
// well-formed document nyl writes (else every read pays zod's cost again).

const AT = '2026-12-01T10:00:00.000Z';
const holder = {
  id: 'ci@runner-1',
  actor: 'octo',
  workflowRun: 'https://github.com/o/r/actions/runs/1',
  github: {
    serverUrl: 'https://github.com',
    apiUrl: 'https://api.github.com',
    repository: 'o/r',
    runId: '1',
    runAttempt: '1',
    job: 'deploy',
    runnerName: 'r1',
    jobId: 7,
    jobUrl: 'https://github.com/o/r/actions/runs/1/job/7',
  },
};
const receipt = {
  executionKey: 'k1',
  uid: 'u1',
  run: 'r1',
  source: 'abc',
  at: AT,
  outputs: { url: 'https://x' },
  artifacts: {},
  attempts: 2,
  changes: {
    counts: { create: 1, update: 0, replace: 1, delete: 0, read: 0 },
    resources: [
      ['aws_instance.web', 'replace'],
      ['random_id.x', 'create'],
    ],
  },
};

const SAMPLES: Record<DocumentKind, Record<string, unknown>> = {
  lease: {
    schema: 'nyl.lease/v1',
    environment: 'dev',
    state: 'broken',
    run: 'r1',
    operation: 'reconcile',
    holder,
    acquiredAt: AT,
    renewedAt: AT,
    deadline: AT,
    heartbeatMs: 30000,
    broken: { at: AT, by: 'ops', reason: 'runner died', replaced: [{ ref: 'refs/x', tip: 'a', cause: 'c' }] },
  },
  run: {
    schema: 'nyl.run/v1',
    run: 'r1',
    environment: 'dev',
    operation: 'reconcile',
    state: 'executing',
    holder,
    source: 'abc',
    startedAt: AT,
    updatedAt: AT,
    deadline: AT,
    phase: 'wave',
    wave: 0,
    executing: ['a', 'g#1'],
    basedOn: 'def',
    exec: { unit: 'a', command: ['true'], by: 'ops', reason: 'why' },
    takenOver: { run: 'r0', leaseBroken: { at: AT, by: 'ops', reason: 'gone' } },
    finishedAt: AT,
    supervisor: { host: 'h', pid: 12, groupsFile: '/tmp/g' },
    processGroups: [12, 13],
    states: [
      { state: 'claimed', at: AT },
      { state: 'executing', at: AT, wave: 1, units: ['a'] },
    ],
    running: { a: { startedAt: AT, elapsedMs: 5, tail: 'last line' } },
    results: { a: { result: 'executed', kind: 'Command', durationMs: 3, exitCode: 0, reason: 'r' } },
    importedBy: 'r2',
    imported: ['r0'],
    ended: { code: 'NYL-X', message: 'm' },
    plan: 'v2.a.b.c',
    recovery: { selection: '--failed', roots: ['a'], revision: 'rev' },
    attempts: { a: 1 },
    github: { newer: true },
  },
  checkpoint: {
    schema: 'nyl.checkpoint/v1',
    name: 'a',
    kind: 'Command',
    uid: 'u1',
    executionKey: 'k1',
    source: 'abc',
    result: 'failed',
    at: AT,
    durationMs: 12,
    outputs: { a: 'b' },
    artifacts: { log: 'x' },
    exitCode: 2,
    reason: 'exit 2',
    retryable: true,
    attempts: 3,
    changes: { counts: { create: 0, update: 1, replace: 0, delete: 1, read: 0 }, resources: [['a.b', 'delete']] },
  },
  observed: {
    schema: 'nyl.observed-unit/v1',
    name: 'a',
    kind: 'Command',
    uid: 'u1',
    receipt,
    condition: {
      state: 'uncertain',
      reason: 'killed',
      run: 'r1',
      since: AT,
      retryable: false,
      exitCode: 137,
      executionKey: 'k1',
      checkpointed: true,
      revision: 'rev',
      attempts: 1,
    },
    lastRun: 'r1',
    drift: { state: 'drifted', detail: 'changed', at: AT, receiptKey: 'k1', resources: [['a.b', 'update']] },
    health: { state: 'ok', detail: 'fine', at: AT },
    attestations: { sbom: 'sha256:1' },
    hold: { by: 'ops', reason: 'freeze', at: AT },
    repairs: [{ run: 'r1', command: ['fix'], by: 'ops', reason: 'r', at: AT, exitCode: null, output: 'o' }],
    approvalRequired: { reason: 'unsafe', since: AT },
  },
  desired: {
    schema: 'nyl.desired-unit/v1',
    name: 'a',
    kind: 'Command',
    uid: 'u1',
    executionKey: 'k1',
    spec: { run: 'true', nested: { list: [1, 'x', null] } },
    inputs: { X: 'sha256:1' },
    needs: ['b'],
    timeout: '5m',
  },
  environment: { schema: 'nyl.environment/v1', environment: 'dev', waves: [['a'], ['b', 'c']], source: 'abc' },
};

/** A value with every object's key order made part of it (deep equality ignores order). */
function ordered(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(ordered);
  if (v && typeof v === 'object') return Object.entries(v).map(([k, x]) => [k, ordered(x)]);
  return v;
}

/** Every path to a value in a document, for the mutations below. */
function paths(v: unknown, at: (string | number)[] = []): (string | number)[][] {
  const out: (string | number)[][] = at.length ? [at] : [];
  if (Array.isArray(v)) for (const [i, x] of v.entries()) out.push(...paths(x, [...at, i]));
  else if (v && typeof v === 'object') for (const [k, x] of Object.entries(v)) out.push(...paths(x, [...at, k]));
  return out;
}

function mutated(
  doc: unknown,
  path: (string | number)[],
  f: (parent: Record<string | number, unknown>, key: string | number) => void,
) {
  const copy = structuredClone(doc) as Record<string | number, unknown>;
  let parent = copy;
  for (const k of path.slice(0, -1)) parent = parent[k] as Record<string | number, unknown>;
  f(parent, path[path.length - 1] as string | number);
  return copy;
}

const REPLACEMENTS: unknown[] = [null, 'text', 'not a time', 0, -1, 1.5, true, [], {}, ['x'], { x: 1 }];

describe('the fast validation of state documents', () => {
  for (const kind of Object.keys(SAMPLES) as DocumentKind[]) {
    const schema = DOCUMENT_SCHEMAS[kind];
    const sample = SAMPLES[kind];

    it(`takes a full ${kind} document and gives what zod gives`, () => {
      const zod = schema.safeParse(sample);
      expect(zod.success).toBe(true);
      const fast = validFast(schema, sample);
      expect(fast, 'the fast path declined a well-formed document').toBeDefined();
      expect(ordered(fast?.data)).toEqual(ordered(zod.data));
      // Fields a newer nyl adds are kept, after the known ones (loose objects).
      expect(validFast(schema, { extra: 1, ...sample })?.data).toHaveProperty('extra', 1);
    });

    it(`agrees with zod or declines on every mutation of a ${kind} document`, () => {
      let checked = 0;
      let rejected = 0;
      for (const path of paths(sample)) {
        const variants = [
          mutated(sample, path, (p, k) => delete p[k]),
          ...REPLACEMENTS.map((r) =>
            mutated(sample, path, (p, k) => {
              p[k] = r;
            }),
          ),
        ];
        for (const v of variants) {
          const zod = schema.safeParse(v);
          const fast = validFast(schema, v);
          checked++;
          if (!zod.success) {
            rejected++;
            expect(fast, `${kind} ${path.join('.')}: ${JSON.stringify(v)}`).toBeUndefined();
          } else if (fast) expect(ordered(fast.data)).toEqual(ordered(zod.data));
        }
      }
      expect(rejected).toBeGreaterThan(0);
      expect(checked).toBeGreaterThan(rejected);
    });
  }

  it('reads documents through it, and words what is wrong as zod does', () => {
    const ok = parseDocument('observed', Buffer.from(JSON.stringify(SAMPLES.observed)));
    expect(ok).toEqual({ ok: true, doc: SAMPLES.observed });
    const bad = parseDocument(
      'observed',
      Buffer.from(JSON.stringify({ ...SAMPLES.observed, receipt: { ...receipt, at: 'yesterday' } })),
    );
    expect(bad).toEqual({ ok: false, cause: 'receipt.at: is not a time' });
    // A `__proto__` key (JSON.parse makes it an own key) goes to zod, never onto a prototype.
    const proto = parseDocument(
      'desired',
      Buffer.from(JSON.stringify(SAMPLES.desired).replace('{', '{"__proto__":{"x":1},')),
    );
    expect(proto.ok && Object.getPrototypeOf(proto.doc)).toBe(Object.prototype);
  });
});
