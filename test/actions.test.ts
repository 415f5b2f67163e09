import { existsSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import {
  action,
  REPOSITORY,
  type Running,
  SERVER_URL,
  type Step,
  type StepOptions,
  setup,
  startStep,
  step,
  type Work,
} from './helpers/action-step.js';
import { command, commitFiles, ENV_DEV, GIT_ENV, git, waitForFile } from './helpers/repo.js';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
const OID = /^[0-9a-f]{40}$/;
const TOKEN = 'test-token';
const COUNTS = [
  'executed',
  'recovered',
  'imported',
  'current',
  'failed',
  'uncertain',
  'blocked',
  'awaiting-approval',
  'drifted',
  'held',
  'in-sync',
];

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** True while any process of the group is alive. */
function groupAlive(pgid: number): boolean {
  if (!existsSync('/proc/self/stat')) {
    try {
      process.kill(-pgid, 0);
      return true;
    } catch {
      return false;
    }
  }
  // A killed process whose parent died is a zombie until init reaps it: it no longer runs.
  for (const pid of readdirSync('/proc').filter((d) => /^\d+$/.test(d))) {
    let stat: string;
    try {
      stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    } catch {
      continue;
    }
    const [state, , pgrp] = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    if (Number(pgrp) === pgid && state !== 'Z' && state !== 'X') return true;
  }
  return false;
}

function killGroup(pgid: number): void {
  try {
    process.kill(-pgid, 'SIGKILL');
  } catch {
    /* gone */
  }
}

/** Process groups of blocking units: killed at the end should a test fail before they end. */
const groups = new Set<number>();
afterAll(() => {
  for (const g of groups) killGroup(g);
});

const errors = (s: Step) => s.annotations.filter((a) => a.command === 'error');
const warnings = (s: Step) => s.annotations.filter((a) => a.command === 'warning');
const titled = (s: Step, title: string) => s.annotations.filter((a) => a.props.title === title);
/** `core.setFailed`: an `::error::` without properties, and exit code 1. */
const setFailed = (s: Step) => s.annotations.filter((a) => a.command === 'error' && !Object.keys(a.props).length);
const unitsOf = (s: Step) =>
  Object.fromEntries(
    (JSON.parse(s.outputs.units ?? 'null') as { unit: string; result: string }[]).map((u) => [u.unit, u.result]),
  );
const counts = (s: Step) => Object.fromEntries(COUNTS.map((c) => [c, Number(s.outputs[c])]));
const zero = Object.fromEntries(COUNTS.map((c) => [c, 0]));

/** What a step shows the world must not carry a stack trace. */
function expectNoStackTrace(s: Step): void {
  expect(`${s.stdout}${s.stderr}`).not.toMatch(/^\s+at .+\(.+:\d+:\d+\)$|^\s+at .+:\d+:\d+$/m);
  expect(`${s.stdout}${s.stderr}`).not.toContain('NYL-INTERNAL');
}

function expectInputError(s: Step, message: string): void {
  expect(s.code, s.stdout + s.stderr).toBe(1);
  expect(s.signal).toBeNull();
  expect(s.stderr).toBe('');
  expect(errors(s)).toEqual([
    { command: 'error', props: { title: 'NYL-INPUT' }, message },
    { command: 'error', props: {}, message },
  ]);
  expect(s.stdout.trim().split('\n')).toHaveLength(2);
  expect(s.outputs).toEqual({});
  expect(s.summary).toBe('');
  expectNoStackTrace(s);
}

// --- the remote ---------------------------------------------------------------------------------

function refs(w: Work): Map<string, string> {
  const out = git(w.bare, 'for-each-ref', '--format=%(objectname) %(refname)', 'refs/nyl/');
  return new Map(
    out
      .split('\n')
      .filter(Boolean)
      .map((l) => {
        const [oid, ref] = l.split(' ');
        return [ref as string, oid as string];
      }),
  );
}

const runRefs = (w: Work) => [...refs(w).keys()].filter((r) => r.startsWith('refs/nyl/dev/runs/'));

// biome-ignore lint/suspicious/noExplicitAny: JSON documents read back from the refs
type Json = any;
const show = (w: Work, spec: string): Json => JSON.parse(git(w.bare, 'show', spec));
const lease = (w: Work): Json => show(w, 'refs/nyl/dev/lease:lease.json');
const runRecord = (w: Work, run: string): Json => show(w, `refs/nyl/dev/runs/${run}:run.json`);
const transitionMessage = (w: Work) => git(w.bare, 'log', '-1', '--format=%B', 'refs/nyl/dev/observed');

// --- units --------------------------------------------------------------------------------------

/**
 * A unit that, while ctl/<name>.block exists, writes its pid (= its process group: tools run in
 * their own group) and blocks in `wait`; `trap` is put in front of it (e.g. a SIGINT handler).
 */
function blocking(name: string, opts: { trap?: string; idempotent?: boolean; needs?: string[] } = {}): string {
  const run =
    `if [ -f ctl/${name}.block ]; then ${opts.trap ? `${opts.trap}; ` : ''}echo $$ > ctl/${name}.pid.tmp; ` +
    `mv ctl/${name}.pid.tmp ctl/${name}.pid; sleep 60 & wait $!; fi; echo ${name} done`;
  return command(name, run, {
    ...(opts.needs ? { needs: opts.needs } : {}),
    ...(opts.idempotent ? { spec: { idempotent: true } } : {}),
  });
}

/** spec.check: exit 0 when `<unit>.state` says ok, else 2 with the drift on stdout. */
function checked(name: string): string {
  return command(name, `echo ok > ${name}.state`, {
    spec: {
      idempotent: true,
      check: `s=$(cat ${name}.state 2>/dev/null || echo missing); if [ "$s" = ok ]; then exit 0; fi; echo "${name} is $s"; exit 2`,
    },
  });
}

const setState = (w: Work, unit: string, s: string) => writeFileSync(join(w.dir, `${unit}.state`), `${s}\n`);

/** Starts an action whose unit blocks; resolves once the unit runs, with its process group. */
async function startBlocked(name: string, w: Work, unit: string, o: StepOptions = {}) {
  writeFileSync(join(w.ctl, `${unit}.block`), '');
  const r = startStep(name, w, { ...o, inputs: { environment: 'dev', ...o.inputs } });
  const pidFile = join(w.ctl, `${unit}.pid`);
  await Promise.race([
    waitForFile(pidFile),
    r.done.then((s) => {
      throw new Error(`${name} ended before ${unit} started (exit ${s.code}):\n${s.stdout}\n${s.stderr}`);
    }),
  ]);
  const pgid = Number(readFileSync(pidFile, 'utf8').trim());
  expect(pgid).toBeGreaterThan(1);
  groups.add(pgid);
  rmSync(join(w.ctl, `${unit}.block`));
  return { ...r, pgid };
}

// --- 1. reconcile --------------------------------------------------------------------------------

describe('reconcile action', () => {
  it('sets every output, writes the job summary with a coloured graph, saves its state; then all current; a failing unit fails the step', async () => {
    const config = ENV_DEV + command('a', 'echo a') + command('b', 'echo b', { needs: ['a'] });
    const w = setup(config);
    const source = git(w.dir, 'rev-parse', 'HEAD');

    const s = await action('reconcile', w, {}, { runId: '4242' });
    expect(s.stderr).toBe('');
    expect(s.code, s.stdout).toBe(0);
    expect(errors(s)).toEqual([]);
    expect(warnings(s)).toEqual([]);
    expect(s.stdout).toContain('nyl: a (Command) started\n');
    expect(s.stdout).toMatch(/^nyl: b \(Command\) executed in \d+ms$/m);
    const run = s.outputs.run as string;
    expect(run).toMatch(UUID);
    const tips = refs(w);
    expect(s.outputs).toMatchObject({
      result: 'success',
      'exit-code': '0',
      observed: tips.get('refs/nyl/dev/observed'),
      desired: tips.get('refs/nyl/dev/desired'),
    });
    expect(s.outputs.observed).toMatch(OID);
    expect(s.outputs.desired).toMatch(OID);
    expect(counts(s)).toEqual({ ...zero, executed: 2 });
    expect(JSON.parse(s.outputs.units as string)).toEqual([
      { unit: 'a', kind: 'Command', result: 'executed', detail: '' },
      { unit: 'b', kind: 'Command', result: 'executed', detail: '' },
    ]);
    expect(Object.keys(s.outputs).sort()).toEqual(
      [...COUNTS, 'run', 'result', 'exit-code', 'observed', 'desired', 'units', 'environment-url'].sort(),
    );
    // State for the post step: the main step finished.
    expect(s.state).toEqual({
      environment: 'dev',
      action: 'reconcile',
      run,
      main: 'finished',
      'groups-file': expect.stringMatching(/\/nyl-[^/]+\/\d+-groups$/),
    });
    expect(lease(w)).toMatchObject({ state: 'released', run });

    // The job summary: outcome heading, result table, facts, the workflow run, the graph coloured by result.
    expect(s.summary).toContain(
      [
        '## nyl reconcile dev: 2 executed',
        '',
        '### Units (2)',
        '',
        '| Unit | Kind | Result | Detail |',
        '| --- | --- | --- | --- |',
        '| a | Command | executed |  |',
        '| b | Command | executed |  |',
      ].join('\n'),
    );
    expect(s.summary).toContain(`- **run**: \`${run}\``);
    expect(s.summary).toContain(`- **source**: \`${source}\``);
    expect(s.summary).toContain(`- **desired**: \`${s.outputs.desired}\``);
    expect(s.summary).toContain(`- **observed**: \`${s.outputs.observed}\``);
    expect(s.summary).toContain(`- **workflow run**: ${SERVER_URL}/${REPOSITORY}/actions/runs/4242`);
    // Nothing needs a person, no warnings: only the table, the facts and the graph, in that order.
    expect(s.summary).not.toContain('### Needs a person');
    expect(s.summary).not.toContain('### Notes');
    expect(s.summary.match(/^#{2,3} .*$/gm)).toEqual([
      '## nyl reconcile dev: 2 executed',
      '### Units (2)',
      '### Run',
      '### Waves',
    ]);
    expect(s.summary).toContain('- **exit code**: `0` (done)');
    const graph = /```mermaid\n([\s\S]*?)\n```/.exec(s.summary)?.[1] ?? '';
    expect(graph.split('\n')).toEqual([
      'flowchart LR',
      '  subgraph w1["wave 1"]',
      '    u_a["a<br/>executed"]',
      '  end',
      '  subgraph w2["wave 2"]',
      '    u_b["b<br/>executed"]',
      '  end',
      '  u_a --> u_b',
      '  classDef executed fill:#2da44e,color:#1f2328',
      '  class u_a executed',
      '  class u_b executed',
    ]);

    // Nothing to do: every unit current, no run, nothing written.
    const again = await action('reconcile', w, {});
    expect(again.code, again.stdout + again.stderr).toBe(0);
    expect(again.outputs).toMatchObject({ result: 'success', 'exit-code': '0', run: '' });
    expect(counts(again)).toEqual({ ...zero, current: 2 });
    expect(unitsOf(again)).toEqual({ a: 'current', b: 'current' });
    expect(again.summary).toContain('| a | Command | current |');
    expect(again.summary).toContain('| b | Command | current |');
    expect(again.summary).toContain('classDef current fill:#d0d7de');
    expect(again.summary).not.toContain('- **run**:');
    expect(refs(w)).toEqual(tips);

    // A failing unit: the step fails (setFailed), result failed, what to do next.
    commitFiles(w.dir, { 'nyl.yaml': `${config}${command('c', 'echo boom; exit 7', { needs: ['b'] })}` });
    const failed = await action('reconcile', w, {});
    expect(failed.stderr).toBe('');
    expect(failed.code).toBe(1);
    expect(setFailed(failed)).toEqual([{ command: 'error', props: {}, message: 'nyl reconcile dev: failed (exit 1)' }]);
    expect(failed.outputs).toMatchObject({ result: 'failed', 'exit-code': '1' });
    expect(counts(failed)).toEqual({ ...zero, current: 2, failed: 1 });
    const c = (JSON.parse(failed.outputs.units as string) as { unit: string; detail: string; result: string }[]).find(
      (u) => u.unit === 'c',
    );
    expect(c).toMatchObject({ result: 'failed', detail: expect.stringContaining('exited with 7') });
    expect(c?.detail).toContain('boom');
    // The failed unit is also annotated, with its next step.
    expect(titled(failed, 'NYL-UNIT-FAILED (c)')).toEqual([
      {
        command: 'error',
        props: { title: 'NYL-UNIT-FAILED (c)' },
        message: expect.stringMatching(
          /^c failed: exited with 7[\s\S]*\nnext: fix the cause, then run the deploy workflow with environment: dev again \(or push the fix\); if the unit is not retryable, run the recover workflow with environment: dev, action: retry, unit: c, reason: <why> before that$/,
        ),
      },
    ]);
    expect(failed.summary).toContain('## nyl reconcile dev: 1 failed, 2 current\n');
    expect(failed.summary).toMatch(/^\| c \| Command \| failed \| exited with 7/m);
    expect(failed.summary).toContain('### Needs a person');
    expect(failed.summary).toMatch(
      /^- \*\*c\*\* \(Command\) failed: exited with 7.*<br>next: fix the cause, then run the \*\*deploy\*\* workflow with `environment: dev` again/m,
    );
    expect(failed.summary.match(/^#{2,3} .*$/gm)).toEqual([
      '## nyl reconcile dev: 1 failed, 2 current',
      '### Needs a person',
      '### Units (3)',
      '### Run',
      '### Waves',
    ]);
    expect(failed.summary).toContain('- **exit code**: `1` (failed)');
    expect(failed.summary).toContain('classDef failed fill:#cf222e');
    expect(failed.summary).toContain('class u_c failed');
    expect(failed.state).toMatchObject({ environment: 'dev', action: 'reconcile', main: 'finished' });
    expect(lease(w).state).toBe('released');
    expectNoStackTrace(failed);
  });
});

// --- 2. bad input ---------------------------------------------------------------------------------

describe('bad input', () => {
  it('one clear NYL-INPUT error per bad input, exit 1, no stack trace, nothing written', async () => {
    const w = setup(ENV_DEV + command('a', 'echo a'));
    const [missing, wait, grace, reapply] = await Promise.all([
      step('reconcile', w, {}),
      action('reconcile', w, { 'wait-lease': 'soon' }),
      action('verify', w, { 'cancel-grace': 'briefly' }),
      action('reconcile', w, { reapply: 'yes' }),
    ]);
    expectInputError(missing, 'input environment: environment is required: the environment to act on, e.g. dev');
    expectInputError(wait, 'input wait-lease: wait-lease must be a duration such as 30s, 5m or 1h30m');
    expectInputError(grace, 'input cancel-grace: cancel-grace must be a duration such as 30s, 5m or 1h30m');
    expectInputError(reapply, 'input reapply: reapply must be true or false');
    // Nothing ran: no state saved for a post step, nothing on the remote.
    for (const s of [missing, wait, grace, reapply]) expect(s.state).toEqual({});
    expect(refs(w).size).toBe(0);
  });
});

// --- 3. verify --------------------------------------------------------------------------------------

interface ApiRequest {
  method: string;
  path: string;
  query: Record<string, string>;
  authorization: string | undefined;
  body: Json;
}

interface Issue {
  number: number;
  title: string;
  body: string;
  state: string;
  state_reason: string | null;
  labels: { name: string }[];
  comments: string[];
}

/** The GitHub REST endpoints syncDriftIssue uses, issues in memory, every request recorded. */
class FakeGitHub {
  readonly requests: ApiRequest[] = [];
  readonly issues: Issue[] = [];
  private server: Server | undefined;
  url = '';
  /** Answer every write 403, as for a token without issues: write. */
  forbidWrites = false;

  async start(): Promise<void> {
    this.server = createServer((req, res) => {
      let text = '';
      req.on('data', (d) => {
        text += d;
      });
      req.on('end', () => {
        const u = new URL(req.url ?? '/', 'http://127.0.0.1');
        const body = text ? JSON.parse(text) : undefined;
        this.requests.push({
          method: req.method ?? '',
          path: u.pathname,
          query: Object.fromEntries(u.searchParams),
          authorization: (req.headers as IncomingHttpHeaders).authorization,
          body,
        });
        const send = (status: number, data: unknown) => {
          res.writeHead(status, { 'content-type': 'application/json; charset=utf-8' });
          res.end(JSON.stringify(data));
        };
        const view = (i: Issue) => ({
          id: i.number * 1000,
          number: i.number,
          title: i.title,
          body: i.body,
          state: i.state,
          state_reason: i.state_reason,
          labels: i.labels,
          comments: i.comments.length,
          html_url: `${SERVER_URL}/${REPOSITORY}/issues/${i.number}`,
        });
        if (this.forbidWrites && req.method !== 'GET')
          return send(403, { message: 'Resource not accessible by integration', status: '403' });
        const base = `/repos/${REPOSITORY}/issues`;
        const one = new RegExp(`^${base}/(\\d+)$`).exec(u.pathname);
        const comments = new RegExp(`^${base}/(\\d+)/comments$`).exec(u.pathname);
        const find = (n: string | undefined) => this.issues.find((i) => i.number === Number(n));
        if (req.method === 'GET' && u.pathname === base) {
          const state = u.searchParams.get('state') ?? 'open';
          const labels = (u.searchParams.get('labels') ?? '').split(',').filter(Boolean);
          return send(
            200,
            this.issues
              .filter((i) => state === 'all' || i.state === state)
              .filter((i) => labels.every((l) => i.labels.some((x) => x.name === l)))
              .map(view),
          );
        }
        if (req.method === 'POST' && u.pathname === base) {
          const issue: Issue = {
            number: this.issues.length + 1,
            title: body.title,
            body: body.body ?? '',
            state: 'open',
            state_reason: null,
            labels: (body.labels ?? []).map((name: string) => ({ name })),
            comments: [],
          };
          this.issues.push(issue);
          return send(201, view(issue));
        }
        if (req.method === 'PATCH' && one) {
          const issue = find(one[1]);
          if (!issue) return send(404, { message: 'Not Found' });
          if (body.body !== undefined) issue.body = body.body;
          if (body.state !== undefined) issue.state = body.state;
          if (body.state_reason !== undefined) issue.state_reason = body.state_reason;
          return send(200, view(issue));
        }
        if (req.method === 'POST' && comments) {
          const issue = find(comments[1]);
          if (!issue) return send(404, { message: 'Not Found' });
          issue.comments.push(body.body);
          return send(201, { id: issue.comments.length, body: body.body });
        }
        send(404, { message: 'Not Found' });
      });
    });
    await new Promise<void>((r) => this.server?.listen(0, '127.0.0.1', r));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  /** Requests since `from`, as `METHOD path`. */
  calls(from = 0): string[] {
    return this.requests.slice(from).map((r) => `${r.method} ${r.path}`);
  }

  close(): Promise<void> {
    return new Promise((r) => (this.server ? this.server.close(() => r()) : r()));
  }
}

describe('verify action', () => {
  it('annotates each drifted unit, result drift; fails the step unless fail-on-drift is false', async () => {
    const w = setup(ENV_DEV + checked('a') + checked('b') + checked('c'));
    expect((await action('reconcile', w, {})).code).toBe(0);

    const sync = await action('verify', w, {});
    expect(sync.stderr).toBe('');
    expect(sync.code, sync.stdout).toBe(0);
    expect(sync.outputs).toMatchObject({ result: 'success', 'exit-code': '0' });
    expect(counts(sync)).toEqual({ ...zero, 'in-sync': 3 });
    expect(warnings(sync)).toEqual([]);

    setState(w, 'a', 'bad');
    setState(w, 'c', 'gone');
    const drift = await action('verify', w, {});
    expect(drift.stderr).toBe('');
    expect(drift.code).toBe(1);
    expect(setFailed(drift)).toEqual([{ command: 'error', props: {}, message: 'nyl verify dev: drift (exit 3)' }]);
    expect(drift.outputs).toMatchObject({ result: 'drift', 'exit-code': '3' });
    expect(counts(drift)).toEqual({ ...zero, drifted: 2, 'in-sync': 1 });
    expect(unitsOf(drift)).toEqual({ a: 'drifted', b: 'in-sync', c: 'drifted' });
    expect(drift.outputs['drift-issue']).toBeUndefined();
    for (const [u, detail] of [
      ['a', 'a is bad'],
      ['c', 'c is gone'],
    ] as const) {
      const notes = titled(drift, `NYL-VERIFY-DRIFT (${u})`);
      expect(notes.length).toBeGreaterThan(0);
      for (const n of notes) expect(n).toMatchObject({ command: 'warning', message: expect.stringContaining(detail) });
      // One annotation per drifted unit (not one from the problem and another from the drift alert).
      expect.soft(notes, `annotations titled NYL-VERIFY-DRIFT (${u})`).toHaveLength(1);
    }
    expect(titled(drift, 'NYL-VERIFY-DRIFT (b)')).toEqual([]);
    // Drift is not a failed, uncertain or awaiting-approval unit: no NYL-UNIT-* annotation.
    expect(drift.annotations.filter((a) => String(a.props.title ?? '').startsWith('NYL-UNIT-'))).toEqual([]);
    expect(drift.summary).toContain('## nyl verify dev: 2 drifted, 1 in sync\n');
    expect(drift.summary).toContain('| a | Command | drifted | a is bad |');
    expect(drift.summary).toContain('| c | Command | drifted | c is gone |');
    expect(drift.summary).toContain('### Needs a person');
    for (const [u, detail] of [
      ['a', 'a is bad'],
      ['c', 'c is gone'],
    ] as const)
      expect(drift.summary).toMatch(
        new RegExp(
          `^- \\*\\*${u}\\*\\* \\(Command\\) drifted: ${detail}<br>.*<br>next: the next deploy repairs it: run the \\*\\*deploy\\*\\* workflow with \`environment: dev\` or push$`,
          'm',
        ),
      );
    expect(drift.summary).not.toMatch(/^- \*\*b\*\*/m);
    expect(drift.summary.match(/^#{2,3} .*$/gm)).toEqual([
      '## nyl verify dev: 2 drifted, 1 in sync',
      '### Needs a person',
      '### Units (3)',
      '### Run',
    ]);
    expect(drift.summary).toContain('- **exit code**: `3` (drift)');
    expect(drift.summary).toContain(`- **workflow run**: ${SERVER_URL}/${REPOSITORY}/actions/runs/1001`);

    const tolerated = await action('verify', w, { 'fail-on-drift': 'false' });
    expect(tolerated.stderr).toBe('');
    expect(tolerated.code, tolerated.stdout).toBe(0);
    expect(setFailed(tolerated)).toEqual([]);
    expect(errors(tolerated)).toEqual([]);
    expect(tolerated.outputs).toMatchObject({ result: 'drift', 'exit-code': '3' });
    expect(titled(tolerated, 'NYL-VERIFY-DRIFT (a)').length).toBeGreaterThan(0);
    expect(titled(tolerated, 'NYL-VERIFY-DRIFT (c)').length).toBeGreaterThan(0);

    const explicit = await action('verify', w, { 'fail-on-drift': 'TRUE' });
    expect(explicit.code).toBe(1);
    expect(explicit.outputs.result).toBe('drift');
  });

  it('drift-issue: opens one issue, leaves it alone while findings are unchanged, updates it with a comment when they change, closes it when drift is gone', async () => {
    const gh = new FakeGitHub();
    await gh.start();
    try {
      const w = setup(ENV_DEV + checked('a') + checked('b'));
      expect((await action('reconcile', w, {})).code).toBe(0);
      const verify = (runId: string) =>
        action(
          'verify',
          w,
          { 'drift-issue': 'true', token: TOKEN, 'fail-on-drift': 'false' },
          { runId, env: { GITHUB_API_URL: gh.url } },
        );
      const steps: Step[] = [];
      const expectTokenKept = (s: Step) => {
        // The runner learns the secret from ::add-mask:: and masks it; nothing else may show it.
        expect(s.stdout).toContain(`::add-mask::${TOKEN}\n`);
        const shown = s.stdout
          .split('\n')
          .filter((l) => !l.startsWith('::add-mask::'))
          .join('\n');
        expect(shown).not.toContain(TOKEN);
        expect(s.stderr).not.toContain(TOKEN);
        expect(s.summary).not.toContain(TOKEN);
        expect(Object.values(s.outputs).join('\n')).not.toContain(TOKEN);
        expect(Object.values(s.state).join('\n')).not.toContain(TOKEN);
      };

      // No drift, no issue: a look by label, then one by marker among all open issues; nothing written.
      const none = await verify('1');
      expect(none.code, none.stdout + none.stderr).toBe(0);
      expect(gh.calls()).toEqual([`GET /repos/${REPOSITORY}/issues`, `GET /repos/${REPOSITORY}/issues`]);
      expect(gh.requests[0]?.query).toMatchObject({ state: 'open', labels: 'nyl-drift' });
      expect(gh.requests[1]?.query).toMatchObject({ state: 'open' });
      expect(gh.requests[1]?.query).not.toHaveProperty('labels');
      expect(none.outputs['drift-issue']).toBe('');
      steps.push(none);

      // First drift: one issue opened.
      setState(w, 'a', 'bad');
      let from = gh.requests.length;
      const first = await verify('2');
      expect(first.code, first.stdout + first.stderr).toBe(0);
      expect(first.outputs).toMatchObject({ result: 'drift', 'drift-issue': '1' });
      expect(gh.calls(from)).toEqual([
        `GET /repos/${REPOSITORY}/issues`,
        `GET /repos/${REPOSITORY}/issues`,
        `POST /repos/${REPOSITORY}/issues`,
      ]);
      expect(gh.requests[from]?.query).toMatchObject({ state: 'open', labels: 'nyl-drift' });
      expect(gh.requests[from + 1]?.query).not.toHaveProperty('labels');
      expect(gh.issues).toHaveLength(1);
      const issue = gh.issues[0] as Issue;
      expect(issue).toMatchObject({ number: 1, title: 'Nyl drift: dev', state: 'open', comments: [] });
      expect(issue.labels).toEqual([{ name: 'nyl-drift' }]);
      expect(issue.body).toContain('| a | a is bad |');
      expect(issue.body).not.toContain('| b |');
      expect(issue.body).toContain(`${SERVER_URL}/${REPOSITORY}/actions/runs/2`);
      // The hidden marker that finds the issue again without its label, on a line of its own.
      expect(issue.body.split('\n')).toContain('<!-- nyl-drift: dev -->');
      expect(first.stdout).toContain('nyl: drift issue opened #1');
      steps.push(first);

      // The same drift again: no new issue, no comment, no body update.
      const bodyBefore = issue.body;
      from = gh.requests.length;
      const same = await verify('3');
      expect(same.code).toBe(0);
      expect(same.outputs['drift-issue']).toBe('1');
      expect(gh.calls(from)).toEqual([`GET /repos/${REPOSITORY}/issues`]);
      expect(gh.issues).toHaveLength(1);
      expect(issue.body).toBe(bodyBefore);
      expect(issue.comments).toEqual([]);
      expect(same.stdout).toContain('nyl: drift issue unchanged #1');
      steps.push(same);

      // Changed findings: the body updated, one comment.
      setState(w, 'b', 'gone');
      from = gh.requests.length;
      const changed = await verify('4');
      expect(changed.code).toBe(0);
      expect(changed.outputs['drift-issue']).toBe('1');
      expect(gh.calls(from)).toEqual([
        `GET /repos/${REPOSITORY}/issues`,
        `PATCH /repos/${REPOSITORY}/issues/1`,
        `POST /repos/${REPOSITORY}/issues/1/comments`,
      ]);
      expect(gh.issues).toHaveLength(1);
      expect(issue.state).toBe('open');
      expect(issue.body).toContain('| a | a is bad |');
      expect(issue.body).toContain('| b | b is gone |');
      expect(issue.body).toContain(`${SERVER_URL}/${REPOSITORY}/actions/runs/4`);
      expect(issue.comments).toHaveLength(1);
      expect(issue.comments[0]).toContain('a, b drifted');
      steps.push(changed);

      // Drift gone: a comment, then closed.
      setState(w, 'a', 'ok');
      setState(w, 'b', 'ok');
      from = gh.requests.length;
      const gone = await verify('5');
      expect(gone.code, gone.stdout + gone.stderr).toBe(0);
      expect(gone.outputs).toMatchObject({ result: 'success', 'drift-issue': '1' });
      expect(gh.calls(from)).toEqual([
        `GET /repos/${REPOSITORY}/issues`,
        `POST /repos/${REPOSITORY}/issues/1/comments`,
        `PATCH /repos/${REPOSITORY}/issues/1`,
      ]);
      expect(issue.comments).toHaveLength(2);
      expect(issue.comments[1]).toMatch(/^Drift is gone/);
      expect(issue).toMatchObject({ state: 'closed', state_reason: 'completed' });
      steps.push(gone);

      // Closed stays closed: a later clean verify finds no open issue (by label nor marker) and writes nothing.
      from = gh.requests.length;
      const clean = await verify('6');
      expect(clean.code).toBe(0);
      expect(gh.calls(from)).toEqual([`GET /repos/${REPOSITORY}/issues`, `GET /repos/${REPOSITORY}/issues`]);
      expect(gh.requests[from]?.query).toMatchObject({ state: 'open', labels: 'nyl-drift' });
      expect(gh.requests[from + 1]?.query).toMatchObject({ state: 'open' });
      expect(gh.requests[from + 1]?.query).not.toHaveProperty('labels');
      expect(clean.outputs['drift-issue']).toBe('');
      expect(gh.issues).toHaveLength(1);
      steps.push(clean);

      // Every request carried the token; no step showed it.
      expect(gh.requests.length).toBeGreaterThan(0);
      for (const r of gh.requests) expect(r.authorization).toBe(`token ${TOKEN}`);
      for (const s of steps) expectTokenKept(s);
    } finally {
      await gh.close();
    }
  });

  it('drift-issue the API refuses (403): a warning; the verify report, its outputs and its summary stand', async () => {
    const gh = new FakeGitHub();
    await gh.start();
    gh.forbidWrites = true;
    try {
      const w = setup(ENV_DEV + checked('a'));
      expect((await action('reconcile', w, {})).code).toBe(0);
      setState(w, 'a', 'bad');
      const s = await action(
        'verify',
        w,
        { 'drift-issue': 'true', token: TOKEN, 'fail-on-drift': 'false' },
        { env: { GITHUB_API_URL: gh.url } },
      );
      expect(s.code, s.stdout + s.stderr).toBe(0);
      expect(s.outputs).toMatchObject({ result: 'drift', 'exit-code': '3', drifted: '1', 'drift-issue': '' });
      const warned = titled(s, 'NYL-DRIFT-ISSUE');
      expect(warned).toHaveLength(1);
      expect(warned[0]?.command).toBe('warning');
      expect(warned[0]?.message).toMatch(
        /^the drift issue could not be opened or updated \(GitHub API answered 403\): .*issues: write/,
      );
      expect(s.stdout + s.stderr).not.toContain('NYL-INTERNAL');
      expect(s.summary).toContain('| a | Command | drifted |');
    } finally {
      await gh.close();
    }
  });

  it('drift-issue without a token: a warning, no request', async () => {
    const gh = new FakeGitHub();
    await gh.start();
    try {
      const w = setup(ENV_DEV + checked('a'));
      expect((await action('reconcile', w, {})).code).toBe(0);
      setState(w, 'a', 'bad');
      const s = await action(
        'verify',
        w,
        { 'drift-issue': 'true', 'fail-on-drift': 'false' },
        { env: { GITHUB_API_URL: gh.url } },
      );
      expect(s.code, s.stdout + s.stderr).toBe(0);
      expect(titled(s, 'NYL-DRIFT-ISSUE')).toEqual([
        {
          command: 'warning',
          props: { title: 'NYL-DRIFT-ISSUE' },
          message: 'drift-issue needs a token (input token or GITHUB_TOKEN) with issues: write',
        },
      ]);
      expect(gh.requests).toEqual([]);
    } finally {
      await gh.close();
    }
  });
});

// --- 4. lease-break and recover ------------------------------------------------------------------

describe('lease-break and recover actions', () => {
  it('after a reconcile SIGKILLed mid-unit: lease-break, recover imports, reconcile runs again', async () => {
    const w = setup(ENV_DEV + command('a', 'echo a') + blocking('slow', { idempotent: true, needs: ['a'] }));
    const main = await startBlocked('reconcile', w, 'slow', { runId: '7001' });
    main.child.kill('SIGKILL');
    killGroup(main.pgid);
    const killed = await main.done;
    expect(killed.signal).toBe('SIGKILL');
    expect(killed.state).toEqual({
      environment: 'dev',
      action: 'reconcile',
      'groups-file': expect.stringMatching(/\/nyl-[^/]+\/\d+-groups$/),
    });
    const [runRef] = runRefs(w);
    const dead = (runRef as string).slice('refs/nyl/dev/runs/'.length);
    expect(dead).toMatch(UUID);
    expect(lease(w)).toMatchObject({ state: 'held', run: dead });
    expect(runRecord(w, dead)).toMatchObject({ state: 'executing', phase: 'wave', executing: ['slow'] });

    // The lease still holds: another workflow run is refused.
    const held = await action('reconcile', w, {}, { runId: '7002' });
    expect(held.code).toBe(1);
    expect(held.outputs).toMatchObject({ result: 'refused', 'exit-code': '2' });
    expect(titled(held, 'NYL-LEASE-HELD')).toHaveLength(1);
    expect(titled(held, 'NYL-LEASE-HELD')[0]?.message).toContain(`held by run ${dead}`);
    expect(setFailed(held)[0]?.message).toMatch(/^NYL-LEASE-HELD: /);
    expect(held.summary).toContain('## nyl reconcile dev: refused');
    expectNoStackTrace(held);

    // lease-break needs a reason.
    const before = refs(w);
    expectInputError(
      await action('lease-break', w, {}, { runId: '7003' }),
      'input reason: reason is required: why the lease is broken',
    );
    expect(refs(w)).toEqual(before);

    const lb = await action('lease-break', w, { reason: 'runner was killed' }, { runId: '7003' });
    expect(lb.stderr).toBe('');
    expect(lb.code, lb.stdout).toBe(0);
    expect(setFailed(lb)).toEqual([]);
    expect(lb.outputs).toMatchObject({ result: 'success', 'exit-code': '0', run: dead, units: '[]' });
    expect(lb.summary).toMatch(/^## nyl lease-break dev: done\n/);
    expect(titled(lb, 'NYL-LEASE-HELD')).toEqual([
      {
        command: 'warning',
        props: { title: 'NYL-LEASE-HELD' },
        message: expect.stringContaining(`the lease of run ${dead} by `),
      },
    ]);
    expect(titled(lb, 'NYL-LEASE-HELD')[0]?.message).toContain('was broken');
    expect(lb.summary).toContain(`- **broken**: \`run ${dead}\``);
    expect(lb.summary).toContain(`- **workflow run**: ${SERVER_URL}/${REPOSITORY}/actions/runs/7003`);
    expect(lb.state).toMatchObject({ environment: 'dev', action: 'lease-break', main: 'finished' });
    expect(lease(w)).toMatchObject({
      state: 'broken',
      run: dead,
      broken: { reason: 'runner was killed', by: `${GIT_ENV.GIT_AUTHOR_NAME} <${GIT_ENV.GIT_AUTHOR_EMAIL}>` },
    });
    expectNoStackTrace(lb);

    // recover without a unit imports the dead run, executing nothing.
    const recover = await action('recover', w, { reason: 'import the killed run' }, { runId: '7004' });
    expect(recover.stderr).toBe('');
    expect(recover.code, recover.stdout).toBe(0);
    expect(recover.outputs).toMatchObject({ result: 'success', 'exit-code': '0', units: '[]' });
    expect(recover.outputs.observed).toBe(refs(w).get('refs/nyl/dev/observed'));
    expect(recover.outputs.desired).toBe(refs(w).get('refs/nyl/dev/desired'));
    expect(recover.summary).toContain('- **imported**: `["a"]`');
    expect(recover.summary).toContain('- **recovered**: `["slow"]`');
    expect(recover.summary).toContain('"reason":"runner was killed"');
    expect(recover.state).toMatchObject({ environment: 'dev', action: 'recover', main: 'finished' });
    expect(recover.summary).toMatch(/^## nyl recover dev: done\n/);
    expect(recover.summary).toContain(`- **workflow run**: ${SERVER_URL}/${REPOSITORY}/actions/runs/7004`);
    expect(runRefs(w)).toEqual([]);
    expect(lease(w)).toMatchObject({ state: 'released', operation: 'recover' });
    const msg = transitionMessage(w);
    expect(msg).toMatch(/^nyl: recover dev \(1 imported, 1 uncertain\)\n/);
    expect(msg).toContain(
      `slow: {"reason":"run ${dead} was executing it when its lease was broken","result":"uncertain"}`,
    );
    expect(msg).toMatch(/^imported: \[a\]$/m);
    expect(msg).toMatch(/^recovered: \[slow\]$/m);
    expect(msg).toContain('reason: "import the killed run"');

    // reconcile then runs: a was checkpointed by the dead run, slow (converge) runs again.
    const next = await action('reconcile', w, {}, { runId: '7005' });
    expect(next.stderr).toBe('');
    expect(next.code, next.stdout).toBe(0);
    expect(next.outputs).toMatchObject({ result: 'success', 'exit-code': '0' });
    expect(unitsOf(next)).toEqual({ a: 'current', slow: 'recovered' });
    expect(lease(w)).toMatchObject({ state: 'released', run: next.outputs.run });
    expect(runRefs(w)).toEqual([]);
  });
});

// --- 5. the runner's cancel sequence --------------------------------------------------------------

interface Cancelled {
  step: Step;
  sentAt: number;
  /** Signals the "runner" sent, with when (ms after the SIGINT). */
  sent: { signal: NodeJS.Signals; at: number }[];
}

/** SIGINT to the node process only, SIGTERM 7.5 s later, SIGKILL 2.5 s after that, while it lives. */
async function runnerCancel(r: Running): Promise<Cancelled> {
  const sentAt = Date.now();
  const sent: Cancelled['sent'] = [];
  let exited = false;
  r.child.on('exit', () => {
    exited = true;
  });
  const signal = (sig: NodeJS.Signals) => {
    if (exited || r.child.exitCode !== null || r.child.signalCode !== null) return;
    sent.push({ signal: sig, at: Date.now() - sentAt });
    process.kill(r.pid, sig);
  };
  signal('SIGINT');
  const term = setTimeout(() => signal('SIGTERM'), 7_500);
  const kill = setTimeout(() => signal('SIGKILL'), 10_000);
  const step = await r.done;
  clearTimeout(term);
  clearTimeout(kill);
  return { step, sentAt, sent };
}

describe("the runner's cancel sequence", () => {
  it('forwards SIGINT to the tool, finishes the run and releases the lease before the SIGTERM', {
    timeout: 60_000,
  }, async () => {
    const trap = `trap 'echo "$$ got INT" > ctl/t.int; exit 130' INT`;
    const w = setup(ENV_DEV + command('a', 'echo a') + blocking('t', { trap, needs: ['a'] }));
    const r = await startBlocked('reconcile', w, 't', { runId: '8001' });
    expect(alive(r.pid)).toBe(true);
    const { step: s, sentAt, sent } = await runnerCancel(r);

    // Done inside the SIGINT window: no SIGTERM, no kill.
    expect(sent.map((x) => x.signal)).toEqual(['SIGINT']);
    expect(s.exitedAt - sentAt).toBeLessThan(7_500);
    expect(s.signal).toBeNull();
    expect(s.code).toBe(1);
    // The tool got the SIGINT: nyl forwarded it to the tool's process group.
    expect(readFileSync(join(w.ctl, 't.int'), 'utf8')).toBe(`${r.pgid} got INT\n`);
    expect(groupAlive(r.pgid)).toBe(false);

    expect(warnings(s)[0]).toEqual({
      command: 'warning',
      props: {},
      message: 'received SIGINT: stopping, tools get 5s before their process groups are killed',
    });
    expect(s.outputs).toMatchObject({ result: 'uncertain', 'exit-code': '4' });
    expect(counts(s)).toMatchObject({ executed: 1, uncertain: 1 });
    expect(unitsOf(s)).toEqual({ a: 'executed', t: 'uncertain' });
    expect(titled(s, 'NYL-RUN-CANCELLED (dev)')).toEqual([
      {
        command: 'error',
        props: { title: 'NYL-RUN-CANCELLED (dev)' },
        message: expect.stringMatching(
          /^run \S+ of dev was cancelled \(SIGINT\); .*\nfix: the next `nyl reconcile -e dev` takes over at once and imports it$/,
        ),
      },
    ]);
    expect(setFailed(s)).toEqual([{ command: 'error', props: {}, message: 'nyl reconcile dev: uncertain (exit 4)' }]);
    // The uncertain unit gets its own annotation: NYL-RUN-CANCELLED names the environment, not t.
    expect(titled(s, 'NYL-UNIT-UNCERTAIN (t)')).toEqual([
      {
        command: 'error',
        props: { title: 'NYL-UNIT-UNCERTAIN (t)' },
        message: expect.stringMatching(
          /^t uncertain: run \S+ was cancelled while executing it\nnext: check what it did; once it is safe to run it again, run the recover workflow with environment: dev, action: retry, unit: t, reason: <why> and the next deploy runs it \(CLI: nyl recover -e dev --unit t --retry --reason <why>\)$/,
        ),
      },
    ]);
    expect(s.summary).toContain('## nyl reconcile dev: 1 uncertain, 1 executed (NYL-RUN-CANCELLED)\n');
    expect(s.summary).toContain('| t | Command | uncertain |');
    expect(s.summary).toContain('### Needs a person');
    expect(s.summary).toMatch(
      /^- \*\*t\*\* \(Command\) uncertain: run \S+ was cancelled while executing it<br>next: check what it did; once it is safe to run it again, run the \*\*recover\*\* workflow with `environment: dev`, `action: retry`, `unit: t`, `reason: <why>`/m,
    );
    expect(s.summary).toMatch(/^- \*\*error NYL-RUN-CANCELLED\*\* \(dev\): run \S+ of dev was cancelled \(SIGINT\)/m);
    expect(s.summary.match(/^#{2,3} .*$/gm)).toEqual([
      '## nyl reconcile dev: 1 uncertain, 1 executed (NYL-RUN-CANCELLED)',
      '### Needs a person',
      '### Units (2)',
      '### Run',
      '### Waves',
    ]);
    expect(s.summary).toContain('- **exit code**: `4` (uncertain)');
    expect(s.state).toMatchObject({ environment: 'dev', action: 'reconcile', run: s.outputs.run, main: 'finished' });

    // On the remote, written by nyl itself before it exited: lease released, run ref finished.
    const run = s.outputs.run as string;
    expect(run).toMatch(UUID);
    expect(lease(w)).toMatchObject({ state: 'released', run });
    expect(runRecord(w, run)).toMatchObject({ state: 'cancelled', phase: 'finished' });
    expect(runRecord(w, run).finishedAt).toMatch(/^\d{4}-/);

    // The next workflow run takes over at once and imports it (t, manual, stays uncertain).
    const next = await action('reconcile', w, {}, { runId: '8002' });
    expect(next.outputs['exit-code'], next.stdout + next.stderr).toBe('4');
    expect(unitsOf(next)).toEqual({ a: 'imported', t: 'uncertain' });
    expect(JSON.parse(next.outputs.units as string)[1].detail).toContain(`run ${run} was cancelled while executing it`);
    expect(titled(next, 'NYL-LEASE-HELD')).toEqual([]);
    expect(lease(w)).toMatchObject({ state: 'released', run: next.outputs.run });
  });

  it('a tool that ignores SIGINT is killed after the 5 s grace, still before the SIGTERM', {
    timeout: 60_000,
  }, async () => {
    const w = setup(ENV_DEV + blocking('deaf', { trap: "trap '' INT", idempotent: true }));
    const r = await startBlocked('reconcile', w, 'deaf', { runId: '8101' });
    const { step: s, sentAt, sent } = await runnerCancel(r);
    const took = s.exitedAt - sentAt;
    expect(sent.map((x) => x.signal)).toEqual(['SIGINT']);
    expect(took).toBeGreaterThanOrEqual(4_900);
    expect(took).toBeLessThan(7_500);
    expect(s.signal).toBeNull();
    expect(s.code).toBe(1);
    expect(groupAlive(r.pgid)).toBe(false);
    expect(s.outputs).toMatchObject({ result: 'uncertain', 'exit-code': '4' });
    expect(unitsOf(s)).toEqual({ deaf: 'uncertain' });
    const run = s.outputs.run as string;
    expect(lease(w)).toMatchObject({ state: 'released', run });
    expect(runRecord(w, run)).toMatchObject({ state: 'cancelled', phase: 'finished' });
  });
});

// --- 6. the post step -------------------------------------------------------------------------------

describe('post step', () => {
  it('after main was SIGKILLed: releases the lease and marks the run finished; the next run takes over at once', async () => {
    const w = setup(ENV_DEV + command('a', 'echo a') + blocking('slow', { idempotent: true, needs: ['a'] }));
    const main = await startBlocked('reconcile', w, 'slow', { runId: '9001' });
    main.child.kill('SIGKILL');
    killGroup(main.pgid);
    const killed = await main.done;
    expect(killed.signal).toBe('SIGKILL');
    // What the runner saved for the post step: no `main`, no `run`.
    expect(killed.state).toEqual({
      environment: 'dev',
      action: 'reconcile',
      'groups-file': expect.stringMatching(/\/nyl-[^/]+\/\d+-groups$/),
    });
    const [runRef] = runRefs(w);
    const dead = (runRef as string).slice('refs/nyl/dev/runs/'.length);
    expect(lease(w)).toMatchObject({ state: 'held', run: dead });
    const tips = refs(w);

    // A post step claiming main finished does nothing.
    const finished = await step('post', w, {
      runId: '9001',
      inputs: { environment: 'dev' },
      state: { ...killed.state, main: 'finished' },
    });
    expect(finished.code).toBe(0);
    expect(finished.stdout).toBe('');
    expect(finished.stderr).toBe('');
    expect(refs(w)).toEqual(tips);

    // The post step of another workflow run leaves a lease it does not hold alone.
    const other = await step('post', w, { runId: '9999', inputs: { environment: 'dev' }, state: killed.state });
    expect(other.code).toBe(0);
    expect(other.stdout).toContain('nyl: nothing of this job held the lease');
    expect(refs(w)).toEqual(tips);

    // The post step of the killed job releases its lease and finishes its run ref.
    const post = await step('post', w, { runId: '9001', inputs: { environment: 'dev' }, state: killed.state });
    expect(post.stderr).toBe('');
    expect(post.code, post.stdout).toBe(0);
    expect(titled(post, 'NYL-RUN-ABANDONED')).toEqual([
      {
        command: 'warning',
        props: { title: 'NYL-RUN-ABANDONED' },
        message: 'the main step did not finish: releasing its lease so the next run takes over at once',
      },
    ]);
    expect(post.stdout).toContain(`nyl: released the lease of run ${dead}`);
    expect(post.outputs).toEqual({});
    expect(lease(w)).toMatchObject({ state: 'released', run: dead });
    expect(lease(w).broken).toBeUndefined();
    expect(runRecord(w, dead)).toMatchObject({
      state: 'cancelled',
      phase: 'finished',
      executing: ['slow'],
      note: 'its main step was killed; the post step marked it finished',
    });
    expectNoStackTrace(post);

    // The next workflow run takes over at once, without a lease break.
    const next = await action('reconcile', w, {}, { runId: '9002' });
    expect(next.stderr).toBe('');
    expect(next.code, next.stdout).toBe(0);
    expect(titled(next, 'NYL-LEASE-HELD')).toEqual([]);
    expect(next.outputs).toMatchObject({ result: 'success', 'exit-code': '0' });
    expect(unitsOf(next)).toEqual({ a: 'imported', slow: 'recovered' });
    const msg = transitionMessage(w);
    expect(msg).not.toContain('leaseBroken');
    expect(msg).toMatch(/^recovered: \[slow\]$/m);
    expect(runRefs(w)).toEqual([]);
    expect(lease(w)).toMatchObject({ state: 'released', run: next.outputs.run });
  });

  it('after main was SIGKILLed with its tool running: the watchdog stops the tool, the post step waits for it before it releases the lease', {
    timeout: 60_000,
  }, async () => {
    // A tool that takes a second to stop on SIGTERM (it cleans up), and one that ignores SIGTERM.
    for (const [trap, grace, marks] of [
      [`trap 'echo term >> ctl/slow.term; sleep 1; exit 143' TERM`, '5s', true],
      [`trap '' TERM`, '2s', false],
    ] as const) {
      const w = setup(ENV_DEV + blocking('slow', { idempotent: true, trap }));
      const main = await startBlocked('reconcile', w, 'slow', { runId: '9101', inputs: { 'cancel-grace': grace } });
      main.child.kill('SIGKILL');
      const killed = await main.done;
      expect(killed.signal).toBe('SIGKILL');
      const killedAt = Date.now();
      if (marks) {
        await waitForFile(join(w.ctl, 'slow.term'), 1_000);
        expect(Date.now() - killedAt, 'SIGTERM within 1 s').toBeLessThan(1_000);
      }
      expect(groupAlive(main.pgid)).toBe(true);
      // The runner starts the post step at once: it releases the lease only once the tool is gone.
      const post = await step('post', w, {
        runId: '9101',
        inputs: { environment: 'dev', 'cancel-grace': grace },
        state: killed.state,
      });
      expect(post.code, post.stdout + post.stderr).toBe(0);
      expect(groupAlive(main.pgid)).toBe(false);
      expect(post.stdout).toMatch(
        /the main step's tools still run \(process groups \d+\): stopping them before the lease is released/,
      );
      expect(post.stdout).toContain("nyl: the main step's tools are gone");
      expect(lease(w)).toMatchObject({ state: 'released' });
      expect(Date.now() - killedAt).toBeLessThan(Number(grace.replace('s', '')) * 1000 + 2_000);
    }
  });
});

// --- 7. the root action ---------------------------------------------------------------------------

describe('root action (command input)', () => {
  it('command verify behaves like the verify action; an unknown command is an input error', async () => {
    const w = setup(ENV_DEV + checked('a'));
    const rec = await step('main', w, { inputs: { environment: 'dev' } });
    expect(rec.code, rec.stdout + rec.stderr).toBe(0);
    expect(rec.state).toMatchObject({ action: 'reconcile', main: 'finished' });
    expect(unitsOf(rec)).toEqual({ a: 'executed' });

    setState(w, 'a', 'bad');
    // One after the other: verify records its observations under the lease.
    const viaMain = await step('main', w, { inputs: { command: 'verify', environment: 'dev' } });
    const viaVerify = await step('verify', w, { inputs: { environment: 'dev' } });
    for (const s of [viaMain, viaVerify]) {
      expect(s.code).toBe(1);
      expect(s.outputs).toMatchObject({ result: 'drift', 'exit-code': '3', drifted: '1' });
      expect(titled(s, 'NYL-VERIFY-DRIFT (a)').length).toBeGreaterThan(0);
      expect(setFailed(s)).toEqual([{ command: 'error', props: {}, message: 'nyl verify dev: drift (exit 3)' }]);
    }
    expect(viaMain.state).toMatchObject({ environment: 'dev', action: 'verify', main: 'finished' });
    expect(viaMain.annotations).toEqual(viaVerify.annotations);
    expect(viaMain.outputs.units).toBe(viaVerify.outputs.units);

    expectInputError(
      await step('main', w, { inputs: { command: 'deploy', environment: 'dev' } }),
      'input command: "deploy" is not one of reconcile, recover, verify, lease-break, plan, site',
    );
  });
});
