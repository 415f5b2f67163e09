import type { Document, Node, YAMLMap } from 'yaml';
import { yaml } from '../../config/yaml-lib.js';
import { deployJobs, drifted } from './deploy-jobs.js';
import { EXAMPLE_WORKFLOWS, type WorkflowName } from './examples.js';
import type { ActionsRef } from './options.js';
import { type Renames, renamer } from './rename.js';

/**
 * The workflows `nyl init` writes, made from the shipped examples (examples/workflows/*.yml) as
 * YAML documents, comments kept: the environments in the manual runs' choices and in deploy.yml's
 * jobs (one per environment), the branch in the `branches:` filters, the actions' repository and
 * ref in every `uses:` of a Nyl action (or the examples' placeholder `your-org/nyl@v1`). What they
 * say of permissions and concurrency groups stays as the examples have it.
 */

export interface WorkflowOptions {
  environments: string[];
  branch: string;
  actions?: ActionsRef;
}

/** A Nyl action of the examples: `your-org/nyl/actions/plan@v1`, `your-org/nyl@v1`. */
const NYL_ACTION = /^[A-Za-z0-9_.-]+\/nyl((?:\/[^@\s]*)?)@\S+$/;
export const PLACEHOLDER = 'your-org/nyl';
const FORMAT = { flowCollectionPadding: false, lineWidth: 0 } as const;

const DISPATCH_CHOICE = ['on', 'workflow_dispatch', 'inputs', 'environment', 'options'];

function flowList(doc: Document, items: string[]): Node {
  const node = doc.createNode(items) as Node & { flow?: boolean };
  node.flow = true;
  return node;
}

/** The example's own environments, in order: the choices of deploy.yml's manual run. */
function exampleEnvironments(): string[] {
  const doc = yaml().parseDocument(EXAMPLE_WORKFLOWS.deploy);
  const list = doc.getIn(DISPATCH_CHOICE);
  const names = (list as { toJSON?: () => unknown } | undefined)?.toJSON?.();
  if (!Array.isArray(names) || !names.length) throw drifted('deploy.yml has no environment choices');
  return names as string[];
}

/** The example's branch: the first of deploy.yml's push filter. */
function exampleBranch(): string {
  const doc = yaml().parseDocument(EXAMPLE_WORKFLOWS.deploy);
  const b = doc.getIn(['on', 'push', 'branches', 0]);
  if (typeof b !== 'string') throw drifted('deploy.yml has no push branch');
  return b;
}

/** The header comment: above the first key, where a file's leading comment is kept. */
function header(doc: Document): { get: () => string; set: (s: string) => void } {
  const first = (doc.contents as YAMLMap | null)?.items?.[0]?.key as Node | undefined;
  const holder: { commentBefore?: string | null } = first ?? doc;
  return { get: () => holder.commentBefore ?? '', set: (s) => (holder.commentBefore = s) };
}

/** Structure: the branch filters, the environments of a manual run, each Nyl action's reference. */
function fillIn(doc: Document, opts: WorkflowOptions): void {
  const { isMap, isScalar, visit } = yaml();
  const on = doc.get('on', true);
  if (isMap(on))
    for (const event of on.items)
      if (isMap(event.value) && event.value.has('branches')) event.value.set('branches', flowList(doc, [opts.branch]));
  if (doc.hasIn(DISPATCH_CHOICE)) doc.setIn(DISPATCH_CHOICE, flowList(doc, opts.environments));
  const actions = opts.actions;
  if (!actions) return;
  visit(doc, {
    Pair(_, pair) {
      if (!isScalar(pair.key) || pair.key.value !== 'uses' || !isScalar(pair.value)) return;
      const m = NYL_ACTION.exec(String(pair.value.value));
      if (m) pair.value.value = `${actions.repository}${m[1]}@${actions.ref}`;
    },
  });
}

/** The header says where the file came from; with --actions-ref, no longer that the reference is a placeholder. */
function note(doc: Document, name: WorkflowName, opts: WorkflowOptions): void {
  const h = header(doc);
  let text = h.get();
  if (opts.actions)
    text = text.replace(
      /`your-org\/nyl` is a placeholder[^.]*\./,
      `Nyl's actions come from ${opts.actions.repository}@${opts.actions.ref} (nyl init --actions-ref).`,
    );
  const made = ` Written by \`nyl init\` from Nyl's examples/workflows/${name}.yml: environments ${opts.environments.join(', ')}; branch ${opts.branch}.`;
  h.set(`${made}\n\n${text}`);
}

/** No value may still name an example environment the new line does not have: that one was not filled in. */
function checkNoLeftover(doc: Document, name: WorkflowName, from: string[], to: string[]): void {
  const { visit, isScalar } = yaml();
  const left = from.filter((e) => !to.includes(e));
  if (!left.length) return;
  const word = new RegExp(`(?<![\\w])(?:${left.join('|')})(?![\\w])`);
  visit(doc, {
    Scalar(_, s) {
      if (isScalar(s) && typeof s.value === 'string' && word.test(s.value))
        throw drifted(`${name}.yml: the value ${JSON.stringify(s.value)} names an example environment`);
    },
  });
}

/** Every comment of a document but those under `skip` (deploy.yml's jobs, renamed with their jobs). */
function renameComments(doc: Document, rename: (s: string) => string, skip?: unknown): void {
  const { visit } = yaml();
  if (doc.commentBefore) doc.commentBefore = rename(doc.commentBefore);
  if (doc.comment) doc.comment = rename(doc.comment);
  visit(doc, {
    Node(_, n) {
      if (n === skip) return visit.SKIP;
      if (n.commentBefore) n.commentBefore = rename(n.commentBefore);
      if (n.comment) n.comment = rename(n.comment);
      return undefined;
    },
  });
}

/** One workflow's text. */
function workflow(name: WorkflowName, opts: WorkflowOptions, from: string[], branch: string): string {
  const doc = yaml().parseDocument(EXAMPLE_WORKFLOWS[name]);
  const to = opts.environments;
  const branches: [string, string][] = branch !== opts.branch ? [[branch, opts.branch]] : [];
  // Outside the jobs: the first, the second and the last environment of the example are those of the new line.
  const renames: Renames = {
    lists: { from, to },
    names: new Map([
      ...branches,
      ...from.slice(1, -1).map((e): [string, string] => [e, to[Math.min(1, to.length - 1)] as string]),
      [from[0] as string, to[0] as string],
      [from.at(-1) as string, to.at(-1) as string],
    ]),
  };
  const jobs = name === 'deploy' ? doc.get('jobs', true) : undefined;
  // deploy.yml's jobs are made (and their comments renamed) one per environment; the rest here.
  renameComments(doc, renamer(renames), jobs);
  if (jobs) deployJobs(doc, from, to, { names: new Map(branches) });
  fillIn(doc, opts);
  note(doc, name, opts);
  checkNoLeftover(doc, name, from, to);
  return doc.toString(FORMAT);
}

/** The four workflows, by their path in the repository. */
export function composeWorkflows(opts: WorkflowOptions): { path: string; content: string }[] {
  const from = exampleEnvironments();
  const branch = exampleBranch();
  return (Object.keys(EXAMPLE_WORKFLOWS) as WorkflowName[]).map((name) => ({
    path: `.github/workflows/${name}.yml`,
    content: workflow(name, opts, from, branch),
  }));
}
