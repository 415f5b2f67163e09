import { type Problem, problem } from '../util/errors.js';
import type { Config, UnitConfig } from './model.js';
import { promotionOf } from './promotion.js';
import { checkUrls } from './url.js';

/**
 * Every name the configuration uses names something defined, in one pass (every problem at once):
 * a unit's dependencies and the groups whose outputs it reads, the environments units belong to,
 * promotion gates and `promote` lists, environments' groups and the units their `url` reads.
 */
export function checkReferences(cfg: Config, problems: Problem[]): void {
  for (const [name, u] of cfg.units) unitReferences(cfg, name, u, problems);
  environmentsNamed(cfg, problems);
  promotionsNamed(cfg, problems);
  checkPromotionCycles(cfg, problems);
  checkUrls(cfg, problems);
  for (const [name, e] of cfg.environments) {
    const g = e.doc.group;
    if (g && !cfg.groups.has(g))
      problems.push(
        problem('NYL-CONFIG-REFERENCE', `Environment ${name}: group ${g} is not defined`, {
          subject: `${e.at.file}:${e.lineAt(['group'])} group`,
          fix: `add a document \`kind: EnvironmentGroup\` named ${g}, or remove group`,
        }),
      );
  }
}

/** A unit's dependencies exist, it reads no group's outputs (each instance has its own), and it does not need itself. */
function unitReferences(cfg: Config, name: string, u: UnitConfig, problems: Problem[]): void {
  for (const dep of u.deps) {
    if (cfg.units.has(dep) || cfg.invalid.has(dep)) continue;
    const viaRef = u.refs.find((r) => r.unit === dep);
    problems.push(
      problem(
        'NYL-CONFIG-REFERENCE',
        viaRef
          ? `${u.doc.kind} ${name}: ${viaRef.text} refers to unit ${dep}, which is not defined`
          : `${u.doc.kind} ${name}: needs unit ${dep}, which is not defined`,
        {
          subject: `${u.at.file}:${u.depAt(dep).line} ${u.depAt(dep).field}`,
          fix: `define a unit named ${dep} or correct the name (units: ${[...cfg.units.keys()].join(', ')})`,
        },
      ),
    );
  }
  const grouped = [...u.refs, ...(u.forEach && 'from' in u.forEach ? [u.forEach.from] : [])].find(
    (r) => cfg.units.get(r.unit)?.forEach,
  );
  if (grouped)
    problems.push(
      problem(
        'NYL-CONFIG-FOREACH-OUTPUT',
        `${u.doc.kind} ${name}: ${grouped.text} refers to the outputs of ${grouped.unit}, which has forEach: each of its instances has its own`,
        {
          subject: `${u.at.file}:${u.depAt(grouped.unit).line} ${u.depAt(grouped.unit).field}`,
          fix: `use needs: [${grouped.unit}] to run after all its instances, and read what they produced from where they write it`,
        },
      ),
    );
  if (u.deps.includes(name))
    problems.push(
      problem('NYL-CONFIG-CYCLE', `${u.doc.kind} ${name} depends on itself`, {
        subject: `${u.at.file}:${u.depAt(name).line} ${u.depAt(name).field}`,
        fix: `remove ${name} from its own needs and references`,
      }),
    );
}

/** A misspelt environment would silently drop the unit everywhere: names must exist. */
function environmentsNamed(cfg: Config, problems: Problem[]): void {
  for (const [name, u] of cfg.units)
    (u.doc.environments ?? []).forEach((env, i) => {
      if (cfg.environments.has(env) || cfg.groups.has(env)) return;
      problems.push(
        problem(
          'NYL-CONFIG-REFERENCE',
          `${u.doc.kind} ${name}: environments names ${env}, which is neither an Environment nor an EnvironmentGroup`,
          {
            subject: `${u.at.file}:${u.lineAt(['environments', i])} environments`,
            fix: `use one of: ${[...cfg.environments.keys(), ...cfg.groups.keys()].join(', ') || '(none defined)'}, or define ${env}`,
          },
        ),
      );
    });
}

/** Promotion gates name environments that exist, and never the environment itself; so do `promote` lists. */
function promotionsNamed(cfg: Config, problems: Problem[]): void {
  for (const [name, e] of cfg.environments)
    (e.doc.promotion?.after ?? []).forEach((a, i) => {
      if (cfg.environments.has(a) && a !== name) return;
      problems.push(
        problem(
          'NYL-CONFIG-REFERENCE',
          a === name
            ? `Environment ${name}: promotion.after names ${name} itself`
            : `Environment ${name}: promotion.after names ${a}, which is not an Environment`,
          {
            subject: `${e.at.file}:${e.lineAt(['promotion', 'after', i])} promotion.after`,
            fix: `use the environments that must have a source first: ${[...cfg.environments.keys()].filter((x) => x !== name).join(', ') || '(none defined)'}`,
          },
        ),
      );
    });
  for (const [name, g] of cfg.groups)
    (g.doc.promote ?? []).forEach((a, i) => {
      if (cfg.environments.has(a)) return;
      problems.push(
        problem('NYL-CONFIG-REFERENCE', `EnvironmentGroup ${name}: promote names ${a}, which is not an Environment`, {
          subject: `${g.at.file}:${g.lineAt(['promote', i])} promote`,
          fix: `list defined environments in promotion order: ${[...cfg.environments.keys()].join(', ') || '(none defined)'}`,
        }),
      );
    });
}

/**
 * Promotion gates that wait on each other (dev after prod, prod after dev) would refuse every
 * source forever: refused at load, naming the environments in order.
 */
function checkPromotionCycles(cfg: Config, problems: Problem[]): void {
  const done = new Set<string>();
  const visit = (e: string, stack: string[]): void => {
    if (done.has(e)) return;
    const at = stack.indexOf(e);
    if (at >= 0) {
      const cycle = [...stack.slice(at), e];
      const env = cfg.environments.get(cycle[0] as string);
      const own = env?.doc.promotion;
      problems.push(
        problem('NYL-CONFIG-CYCLE', `promotion cycle: ${cycle.join(' after ')}`, {
          subject: own && env ? `${env.at.file}:${env.lineAt(['promotion', 'after'])} promotion.after` : cycle[0],
          fix: 'promotion runs one way: remove one of these environments from the others’ promotion.after (or promote list)',
        }),
      );
      for (const c of cycle) done.add(c);
      return;
    }
    for (const a of promotionOf(cfg, e).promotion?.after ?? []) if (cfg.environments.has(a)) visit(a, [...stack, e]);
    done.add(e);
  };
  for (const e of [...cfg.environments.keys()].sort()) visit(e, []);
}

export function checkCycles(cfg: Config, problems: Problem[]): void {
  const state = new Map<string, 'visiting' | 'done'>();
  const stack: string[] = [];
  const reported = new Set<string>();
  const visit = (n: string): void => {
    state.set(n, 'visiting');
    stack.push(n);
    for (const d of cfg.units.get(n)?.deps ?? []) {
      if (d === n || !cfg.units.has(d)) continue;
      const s = state.get(d);
      if (s === 'visiting') {
        const cycle = [...stack.slice(stack.indexOf(d)), d];
        const key = [...cycle].slice(0, -1).sort().join(',');
        if (!reported.has(key)) {
          reported.add(key);
          const u = cfg.units.get(d) as UnitConfig;
          const edge = u.depAt(cycle[1] as string);
          problems.push(
            problem('NYL-CONFIG-CYCLE', `dependency cycle: ${cycle.join(' -> ')}`, {
              subject: `${u.at.file}:${edge.line} ${edge.field}`,
              fix: 'remove one of these needs or output references to break the cycle',
            }),
          );
        }
      } else if (!s) visit(d);
    }
    stack.pop();
    state.set(n, 'done');
  };
  for (const n of cfg.units.keys()) if (!state.has(n)) visit(n);
}
