import type { Document, Node, Pair, YAMLMap } from 'yaml';
import { yaml } from '../../config/yaml-lib.js';
import { NylError, problem } from '../../util/errors.js';
import { type Renames, renamer } from './rename.js';

/**
 * deploy.yml's jobs, one per environment, chained in promotion order. The example has one job per
 * environment of its own line (dev, staging, prod): the first (no `needs`, a verify for the next
 * one's gate), a middle one, the last (no verify). An environment's job is a copy of the one in
 * its place (the middle one for every environment between first and last), its names renamed as a
 * whole: the job's own, the one before it and the one after it — in values (`environment:`,
 * `if:`, the concurrency group, step names and inputs) and in its comments alike.
 */

/** A GitHub job id for each environment (`^[A-Za-z_][A-Za-z0-9_-]*$`): the name itself when it is one. */
export function jobIds(environments: string[]): Map<string, string> {
  const taken = new Set<string>();
  return new Map(
    environments.map((e) => {
      const base = /^[A-Za-z_][A-Za-z0-9_-]*$/.test(e) ? e : `env_${e.replace(/[^A-Za-z0-9_-]/g, '_')}`;
      let id = base;
      for (let i = 2; taken.has(id); i++) id = `${base}_${i}`;
      taken.add(id);
      return [e, id];
    }),
  );
}

export const drifted = (what: string) =>
  new NylError(
    problem('NYL-INTERNAL', `examples/workflows/${what}: nyl init does not know how to fill it in`, {
      fix: 'this is a bug in nyl (its example workflows changed shape); report it with the command you ran',
    }),
  );

/** Which example job an environment's job is made from: first, last, or the middle one. */
const templateIndex = (i: number, n: number, t: number) => (i === 0 ? 0 : i === n - 1 ? t - 1 : Math.min(1, t - 1));

/** The renames in the job of environment i made from example job t: its neighbours, then first and last. */
function jobRenames(from: string[], to: string[], t: number, i: number, extra: Renames): Renames {
  const names = new Map(extra.names);
  for (const d of [-1, 0, 1]) {
    const a = from[t + d];
    const b = to[i + d];
    if (a !== undefined && b !== undefined) names.set(a, b);
  }
  const first = from[0] as string;
  const last = from.at(-1) as string;
  // `(see dev)`: the first job, where the comments are.
  if (!names.has(first)) names.set(first, to[0] as string);
  if (!names.has(last)) names.set(last, to.at(-1) as string);
  return { ...extra, names, lists: { from, to } };
}

/** Every value and comment under a node, renamed. */
function renameUnder(node: Node, rename: (s: string) => string): void {
  const { visit, isScalar } = yaml();
  visit(node, {
    Node(_, n) {
      if (n.commentBefore) n.commentBefore = rename(n.commentBefore);
      if (n.comment) n.comment = rename(n.comment);
      if (isScalar(n) && typeof n.value === 'string') n.value = rename(n.value);
    },
  });
}

/** A job as made: its environment where the example had its own, in each place that names it. */
function checkJob(job: YAMLMap, env: string, key: string): void {
  const wrong = (what: string) => drifted(`deploy.yml: job ${key}'s ${what} does not name ${env}`);
  if (job.getIn(['environment', 'name']) !== env) throw wrong('environment');
  if (job.getIn(['concurrency', 'group']) !== `nyl-${env}`) throw wrong('concurrency group');
  const steps = job.get('steps') as { items?: YAMLMap[] } | undefined;
  for (const step of steps?.items ?? []) {
    const input = step.getIn(['with', 'environment']);
    if (input !== undefined && input !== env) throw wrong(`step ${step.get('name')}`);
  }
}

/** Replaces deploy.yml's jobs by one per environment. `from`: the example's environments, in order. */
export function deployJobs(doc: Document, from: string[], to: string[], extra: Renames): void {
  const { isMap, isScalar } = yaml();
  const jobs = doc.get('jobs', true);
  if (!isMap(jobs)) throw drifted('deploy.yml has no jobs');
  const templates = jobs.items as Pair<Node, Node>[];
  const keys = templates.map((p) => (isScalar(p.key) ? p.key.value : undefined));
  if (keys.join(',') !== from.join(','))
    throw drifted(`deploy.yml: its jobs ${keys.join(', ')} are not ${from.join(', ')}`);
  const ids = jobIds(to);
  jobs.items = to.map((env, i) => {
    const t = templateIndex(i, to.length, from.length);
    const pair = (templates[t] as Pair<Node, Node>).clone();
    const id = ids.get(env) as string;
    if (isScalar(pair.key)) pair.key.value = id;
    const job = pair.value as YAMLMap;
    renameUnder(job, renamer({ ...jobRenames(from, to, t, i, extra), jobs: ids }));
    if (i > 0) job.set('needs', ids.get(to[i - 1] as string));
    else job.delete('needs');
    checkJob(job, env, id);
    return pair;
  });
}
