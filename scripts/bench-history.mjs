// History on a fresh runner: two remotes hold the same state (the same tip trees), one after a
// few transitions and one after many. A fresh clone (depth 1, as a runner checks out) runs
// `status` (and `nyl runs --limit 20`, once it exists) against each, in pairs: the bytes it
// fetches and the time it takes should not depend on how much history lies behind the tips.
import { createHash } from 'node:crypto';
import { ENV_NAME, git, log, nylJson, paired, timed } from './bench-lib.mjs';
import { freshClone, publish, urlOf } from './bench-remote.mjs';

const hex = (s, n = 64) => createHash('sha256').update(String(s)).digest('hex').slice(0, n);
// A run id as nyl makes them (UUIDv7: its first 48 bits the start in ms), so runs sort by time.
const runId = (atSeconds, s) => {
  const h = `${(atSeconds * 1000).toString(16).padStart(12, '0')}${hex(s, 20)}`;
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-7${h.slice(12, 15)}-8${h.slice(15, 18)}-${h.slice(18, 30)}`;
};
const uuid = (s) => {
  const h = hex(s, 32);
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-7${h.slice(13, 16)}-8${h.slice(17, 20)}-${h.slice(20, 32)}`;
};

/**
 * Stacks `depth` synthetic transitions under each state ref's tip of the bare repository `bare`,
 * with one `git fast-import`, then a last commit per ref whose tree and message are the real
 * tip's, so the state nyl reads is byte for byte the one it wrote. Each transition looks like a
 * real one-unit run: a lease taken, renewed and released (three lease commits), the unit's desired
 * document, its receipt and log changed (one commit each on desired and observed).
 */
export function addHistory(bare, depth) {
  // The run history (issue 13) when this nyl writes one: one commit per ended run.
  const hasHistory = git(bare, ['for-each-ref', '--format=%(refname)', `refs/nyl/${ENV_NAME}/history`]) !== '';
  const names = ['observed', 'desired', 'lease', ...(hasHistory ? ['history'] : [])];
  const refs = Object.fromEntries(names.map((r) => [r, `refs/nyl/${ENV_NAME}/${r}`]));
  const tip = (r) => git(bare, ['rev-parse', `${refs[r]}^{commit}`]);
  const real = Object.fromEntries(
    Object.keys(refs).map((r) => [
      r,
      {
        commit: tip(r),
        tree: git(bare, ['rev-parse', `${refs[r]}^{tree}`]),
        message: git(bare, ['log', '-1', '--format=%B', refs[r]]),
        files: git(bare, ['ls-tree', '-r', refs[r]])
          .split('\n')
          .filter(Boolean)
          .map((l) => {
            const [meta, path] = l.split('\t');
            const [mode, , oid] = meta.split(' ');
            return { mode, oid, path };
          }),
      },
    ]),
  );
  const units = real.observed.files
    .filter((f) => f.path.startsWith('units/') && f.path.endsWith('.json'))
    .map((f) => f.path.slice('units/'.length, -'.json'.length));
  if (!units.length) throw new Error(`history: ${refs.observed} has no units/*.json`);

  const t0 = performance.now();
  // Five minutes apart, the newest an hour before now: older than the real run at the tips.
  const base = Math.floor(Date.now() / 1000) - 3600 - (depth + 1) * 300;
  const parts = [];
  const last = Object.fromEntries(names.map((r) => [r, real[r].commit]));
  let mark = 0;
  const data = (s) => `data ${Buffer.byteLength(s)}\n${s}\n`;
  const commit = (r, at, message, body) => {
    mark++;
    parts.push(
      `commit ${refs[r]}\nmark :${mark}\ncommitter nyl bench <bench@localhost> ${at} +0000\n`,
      data(message),
      `from ${last[r]}\n`,
      body,
      '\n',
    );
    last[r] = `:${mark}`;
  };
  const iso = (t) => new Date(t * 1000).toISOString();
  for (let i = 1; i <= depth; i++) {
    const at = base + i * 300;
    const run = runId(at, `run ${i}`);
    const unit = units[i % units.length];
    const key = `sha256:${hex(`key ${i}`)}`;
    const lease = (state, t) =>
      `${JSON.stringify(
        {
          acquiredAt: iso(at),
          deadline: iso(t + 2400),
          environment: ENV_NAME,
          heartbeatMs: 30000,
          holder: { id: 'runner@bench' },
          operation: 'reconcile',
          renewedAt: iso(t),
          run,
          schema: 'nyl.lease/v1',
          state,
        },
        null,
        2,
      )}\n`;
    const leaseFile = (s) => `M 100644 inline lease.json\n${data(s)}`;
    commit('lease', at, `nyl: lease ${ENV_NAME} for reconcile ${run}\n`, leaseFile(lease('held', at)));
    commit('lease', at + 1, `nyl: renew lease ${ENV_NAME} for ${run}\n`, leaseFile(lease('held', at + 1)));
    const desired = `${JSON.stringify(
      {
        executionKey: key,
        inputs: {},
        kind: 'Command',
        name: unit,
        schema: 'nyl.desired-unit/v1',
        spec: { run: `true # transition ${i}` },
        timeout: '30m',
        uid: uuid(`uid ${unit}`),
      },
      null,
      2,
    )}\n`;
    const observed = `${JSON.stringify(
      {
        kind: 'Command',
        lastRun: run,
        name: unit,
        receipt: {
          artifacts: {},
          at: iso(at + 2),
          executionKey: key,
          outputs: {},
          run,
          source: hex(`source ${i}`, 40),
          uid: uuid(`uid ${unit}`),
        },
        schema: 'nyl.observed-unit/v1',
        uid: uuid(`uid ${unit}`),
      },
      null,
      2,
    )}\n`;
    const message = `nyl: reconcile ${ENV_NAME} (1 executed)\n\nunits:\n  ${unit}: {"executionKey":"${key}","result":"executed"}\n`;
    commit('desired', at + 2, message, `M 100644 inline units/${unit}.json\n${data(desired)}`);
    commit(
      'observed',
      at + 2,
      message,
      `M 100644 inline units/${unit}.json\n${data(observed)}M 100644 inline logs/${unit}.txt\n${data(`transition ${i}\n`)}`,
    );
    commit('lease', at + 3, `nyl: release lease ${ENV_NAME} from ${run}\n`, leaseFile(lease('released', at + 3)));
    if (hasHistory)
      commit(
        'history',
        at + 3,
        `nyl: run ${run} reconcile ${ENV_NAME} succeeded (1 executed)\n`,
        historyEntry(run, unit, at, i, data),
      );
  }
  // The tips again: the real trees and messages on top of the synthetic history.
  const now = Math.floor(Date.now() / 1000);
  for (const r of Object.keys(refs))
    commit(
      r,
      now,
      `${real[r].message}\n`,
      `deleteall\n${real[r].files.map((f) => `M ${f.mode} ${f.oid} ${f.path}\n`).join('')}`,
    );
  git(bare, ['fast-import', '--quiet', '--force'], { input: parts.join('') });
  const ms = performance.now() - t0;
  for (const r of Object.keys(refs)) {
    const tree = git(bare, ['rev-parse', `${refs[r]}^{tree}`]);
    if (tree !== real[r].tree) throw new Error(`history: the tip tree of ${refs[r]} changed`);
  }
  return {
    depth,
    ms,
    commits: Object.fromEntries(
      Object.entries(refs).map(([r, ref]) => [r, Number(git(bare, ['rev-list', '--count', ref]))]),
    ),
  };
}

/** A history commit's tree of a one-unit run that succeeded: its final record and the unit's log. */
function historyEntry(run, unit, at, i, data) {
  const iso = (t) => new Date(t * 1000).toISOString();
  const record = {
    deadline: iso(at + 2400),
    environment: ENV_NAME,
    executing: [],
    finishedAt: iso(at + 3),
    holder: { id: 'runner@bench' },
    operation: 'reconcile',
    phase: 'finished',
    results: { [unit]: { durationMs: 40, kind: 'Command', result: 'executed' } },
    run,
    schema: 'nyl.run/v1',
    source: hex(`source ${i}`, 40),
    startedAt: iso(at),
    state: 'succeeded',
    states: [
      { at: iso(at), state: 'claimed' },
      { at: iso(at + 1), state: 'executing', units: [unit], wave: 0 },
      { at: iso(at + 3), state: 'succeeded' },
    ],
    supervisor: { groupsFile: `/tmp/nyl-bench/${i}-groups`, host: 'runner', pid: 1000 + (i % 30000) },
    updatedAt: iso(at + 1),
    wave: 0,
  };
  return `deleteall\nM 100644 inline run.json\n${data(`${JSON.stringify(record, null, 2)}\n`)}M 100644 inline units/${unit}/log.txt\n${data(`transition ${i}\n`)}`;
}

/** Does this CLI have `nyl runs`? (exit 0 for `nyl runs --help`; a usage error otherwise). */
export function runsSupported(cli) {
  const r = timed(process.execPath, [cli, 'runs', '--help']);
  if (r.status === 0) return { ok: true };
  const first = `${r.stderr}${r.stdout}`.trim().split('\n').slice(0, 2).join(': ');
  return { ok: false, reason: `\`nyl runs --help\` exits ${r.status} (${first})` };
}

/**
 * Rows 2 and 8: `src` holds an environment already reconciled; remotes after `small` and `big`
 * transitions; `pairs` pairs of fresh clones running status (then runs) against each.
 */
export function benchHistory(ctx, { src, small, big, pairs }) {
  const remotes = {};
  for (const depth of [small, big]) {
    const name = `history-${depth}`;
    const bare = publish(src, ctx.root, name);
    log(`history: ${depth} synthetic transitions under the tips of ${name}`);
    const added = addHistory(bare, depth);
    remotes[depth] = { bare, url: urlOf(ctx.server, bare, 'http', name), added };
  }
  // One sample: a fresh clone (not timed), then the command, timed, with what the server sent.
  const sample = (depth, args, check) => {
    const { bare, url } = remotes[depth];
    const clone = freshClone(bare, url, `history-${depth}`);
    const m = ctx.server.mark();
    const r = nylJson(ctx.cli, clone, args);
    const s = ctx.server.since(m);
    check(r, depth);
    ctx.drop(clone);
    return {
      ms: r.ms,
      bytesDown: s.bytesDown,
      httpRequests: s.httpRequests,
      roundTrips: r.report?.stats?.remoteRoundTrips,
    };
  };
  const measure = (label, args, check) => {
    log(`history: ${label} in a fresh clone, after ${big} vs ${small} transitions × ${pairs} (smart HTTP)`);
    const bigs = [];
    const smalls = [];
    // No warm-up: every sample is a fresh clone, and fast-import just left the packs in the cache.
    const p = paired(
      pairs,
      (warm) => {
        const s = sample(big, args, check);
        if (!warm) bigs.push(s);
        return s.ms;
      },
      (warm) => {
        const s = sample(small, args, check);
        if (!warm) smalls.push(s);
        return s.ms;
      },
      { warmup: 0 },
    );
    return {
      big: bigs,
      small: smalls,
      timeRatios: p.ratios,
      bytesRatios: bigs.map((b, i) => b.bytesDown / smalls[i].bytesDown),
    };
  };
  const out = {
    small,
    big,
    remotes: Object.fromEntries(Object.entries(remotes).map(([d, r]) => [d, r.added])),
    status: measure('status', ['status', '-e', ENV_NAME], (r) =>
      ctx.check(r.status === 0 && r.report.exit === 0, `history: status exit ${r.status} (${r.stderr.slice(0, 300)})`),
    ),
  };
  const runs = runsSupported(ctx.cli);
  out.runs = runs.ok
    ? measure('runs --limit 20', ['runs', '-e', ENV_NAME, '--limit', '20'], (r, depth) => {
        // The synthetic runs and the real one at the tip, 20 at most.
        const listed = r.report?.facts?.runs?.length;
        const want = Math.min(20, depth + 1);
        ctx.check(
          r.status === 0 && (listed === undefined || listed === want),
          `history: runs after ${depth} transitions: exit ${r.status}, ${listed} runs listed (expected ${want}) ${r.stderr.slice(0, 300)}`,
        );
      })
    : { skipped: runs.reason };
  return out;
}
