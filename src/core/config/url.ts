import { type Problem, problem } from '../util/errors.js';
import type { Config, UnitConfig } from './model.js';
import { scanReferences } from './references.js';

/** Whether a unit is selected for an environment: no `environments` (all), the environment, or its group. */
export function unitIn(u: UnitConfig, environment: string, group?: string): boolean {
  const sel = u.doc.environments;
  return !sel || sel.includes(environment) || (group !== undefined && sel.includes(group));
}

/**
 * An Environment's `url` reads only `${{ units.U.outputs.K }}` of units of that environment, each
 * without forEach (an instance has outputs of its own): anything else is refused at load.
 */
export function checkUrls(cfg: Config, problems: Problem[]): void {
  for (const [name, e] of cfg.environments) {
    if (e.doc.url === undefined) continue;
    const subject = `${e.at.file}:${e.lineAt(['url'])} url`;
    const say = (code: string, message: string, fix: string) =>
      problems.push(problem(code, `Environment ${name}: url ${message}`, { subject, fix }));
    const scan = scanReferences(e.doc.url);
    for (const b of [...scan.bad, ...scan.each.map((x) => x.text)])
      say('NYL-CONFIG-REFERENCE', `has an unsupported expression ${b}`, URL_EXPRESSION);
    for (const ref of scan.refs) {
      const u = cfg.units.get(ref.unit);
      if (!u && cfg.invalid.has(ref.unit)) continue;
      if (!u)
        say(
          'NYL-CONFIG-REFERENCE',
          `${ref.text} refers to unit ${ref.unit}, which is not defined`,
          `define a unit named ${ref.unit} or correct the name (units: ${[...cfg.units.keys()].join(', ')})`,
        );
      else if (!unitIn(u, name, e.doc.group))
        say(
          'NYL-CONFIG-REFERENCE',
          `${ref.text} refers to unit ${ref.unit}, which is not part of environment ${name}`,
          `add ${name} to the environments of ${ref.unit}, or refer to a unit of ${name}`,
        );
      else if (u.forEach)
        say(
          'NYL-CONFIG-FOREACH-OUTPUT',
          `${ref.text} refers to the outputs of ${ref.unit}, which has forEach: each of its instances has its own`,
          'refer to the output of a unit without forEach',
        );
    }
  }
}

const URL_EXPRESSION = 'the only expression in url is ${{ units.<name>.outputs.<key> }}';
