import type { Config, UnitConfig } from '../config/model.js';
import { promotionOf } from '../config/promotion.js';
import { unitIn } from '../config/url.js';
import type { SourceFiles } from '../files/source-files.js';
import { DEFAULT_PREFIX } from '../state/state-fetch.js';
import { NylError, type Problem, problem } from '../util/errors.js';
import { expand, type Mapping } from './for-each.js';
import type { Outputs } from './outputs.js';

export { DEFAULT_PREFIX };

export interface Selection {
  environment: string;
  prefix: string;
  driftRepair: 'converge' | 'manual';
  /** Terraform/OpenTofu deletes and replaces: wait for a person (approve) or apply (allow); a unit may say otherwise. */
  destructiveChanges: 'approve' | 'allow';
  /** What a source commit diverged from the recorded one gets: applied with a warning, or refused. */
  sourceOrder: 'lenient' | 'strict';
  /** The promotion gate: environments that must have the source recorded (and verified) first. */
  promotion?: { after: string[]; verified: boolean };
  /** The environment's `url` template over its units' outputs (ops/status/environment-url.ts). */
  url?: string;
  /** GitHub's production_environment for this environment's deployments. */
  production: boolean;
  /** Units of the environment by name. */
  units: Map<string, UnitConfig>;
  /** Topological layers; names sorted within a wave. */
  waves: string[][];
  /** The groups (units with forEach) and the configuration before their expansion (resolve/for-each.ts). */
  mapping?: Mapping;
  /** The source commit's files the units use (files/snapshot.ts): resolution keys each unit by them. */
  sources?: SourceFiles;
}

/** Units selected for an environment, checked for dependencies outside it, ordered in waves. */
export function selectEnvironment(cfg: Config, environment: string): Selection {
  const env = cfg.environments.get(environment);
  if (!env) {
    const known = [...cfg.environments.keys()];
    throw new NylError(
      problem('NYL-ENV-UNKNOWN', `environment ${environment} is not defined in ${cfg.files.join(', ')}`, {
        subject: environment,
        fix: known.length
          ? `use one of: ${known.join(', ')}, or add a document \`kind: Environment\` named ${environment}`
          : `add a document \`kind: Environment\` with \`name: ${environment}\``,
      }),
    );
  }
  const group = env.doc.group ? cfg.groups.get(env.doc.group) : undefined;
  const units = new Map<string, UnitConfig>();
  for (const [name, u] of cfg.units) if (unitIn(u, environment, env.doc.group)) units.set(name, u);
  const problems: Problem[] = [];
  for (const [name, u] of units)
    for (const d of u.deps)
      if (!units.has(d))
        problems.push(
          problem(
            'NYL-CONFIG-REFERENCE',
            `${u.doc.kind} ${name} depends on unit ${d}, which is not part of environment ${environment}`,
            {
              subject: `${u.at.file}:${u.depAt(d).line} ${u.depAt(d).field}`,
              fix: `add ${environment} to the environments of ${d}, or remove the dependency`,
            },
          ),
        );
  if (problems.length) throw new NylError(problems);
  const mapping: Mapping = { config: units, waves: waves(units), groups: new Map() };
  const expanded = { units: new Map<string, UnitConfig>(), waves: [] as string[][] };
  // A group mapped from an output is expanded again once the recorded state is read (expandFrom).
  expand(mapping, expanded.units, expanded.waves, () => undefined);
  return {
    environment,
    prefix: env.doc.coordinationRefPrefix ?? group?.doc.coordinationRefPrefix ?? DEFAULT_PREFIX,
    driftRepair: env.doc.driftRepair ?? group?.doc.driftRepair ?? 'converge',
    destructiveChanges: env.doc.destructiveChanges ?? group?.doc.destructiveChanges ?? 'approve',
    sourceOrder: env.doc.sourceOrder ?? group?.doc.sourceOrder ?? 'lenient',
    ...(env.doc.url !== undefined ? { url: env.doc.url } : {}),
    production: env.doc.production ?? false,
    ...promotionOf(cfg, environment),
    ...expanded,
    mapping,
  };
}

/** Expands the selection's groups again from outputs known now: recorded receipts, or this run's. */
export function expandFrom(sel: Selection, outputsOf: (unit: string) => Outputs | undefined): void {
  if (sel.mapping?.groups.size) expand(sel.mapping, sel.units, sel.waves, outputsOf);
}

export function waves(units: Map<string, UnitConfig>): string[][] {
  const level = new Map<string, number>();
  const depth = (n: string): number => {
    const known = level.get(n);
    if (known !== undefined) return known;
    level.set(n, 0); // cycles were rejected at load time
    const deps = (units.get(n) as UnitConfig).deps;
    const d = deps.length ? Math.max(...deps.map(depth)) + 1 : 0;
    level.set(n, d);
    return d;
  };
  const out: string[][] = [];
  for (const n of [...units.keys()].sort()) {
    const d = depth(n);
    const layer = out[d] ?? [];
    layer.push(n);
    out[d] = layer;
  }
  for (const w of out) w.sort();
  return out.filter(Boolean);
}

/** Every unit that (transitively) depends on one of `names` (a name itself only if it does too). */
export function dependantsOf(units: Map<string, UnitConfig>, names: string | Iterable<string>): Set<string> {
  const dependants = new Map<string, string[]>();
  for (const [n, u] of units) for (const d of u.deps) dependants.set(d, [...(dependants.get(d) ?? []), n]);
  const out = new Set<string>();
  const todo = typeof names === 'string' ? [names] : [...names];
  for (let x = todo.pop(); x !== undefined; x = todo.pop())
    for (const m of dependants.get(x) ?? [])
      if (!out.has(m)) {
        out.add(m);
        todo.push(m);
      }
  return out;
}

/** Whether a unit's plan may delete or replace resources without a person approving it. */
export function allowsDestructive(sel: Selection, unit: string): boolean {
  const doc = sel.units.get(unit)?.doc as { destructiveChanges?: 'approve' | 'allow' } | undefined;
  return (doc?.destructiveChanges ?? sel.destructiveChanges) === 'allow';
}
