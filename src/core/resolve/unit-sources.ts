import type { Config, UnitConfig } from '../config/model.js';
import { type FileRule, rulesOf, usesFiles } from '../files/rules.js';
import { readSources } from '../files/snapshot.js';
import { type FileIds, SourceFiles } from '../files/source-files.js';
import type { GitRepo } from '../git/repo.js';
import { NylError, type Problem, problem } from '../util/errors.js';
import type { Selection } from './select.js';

/** The rules of a unit as configured (a group's: with its item's expressions still in them). */
const configuredRules = (u: UnitConfig): FileRule[] =>
  usesFiles(u.doc.kind) ? rulesOf(u.doc.kind, u.doc.spec as Record<string, unknown>) : [];

/** The rules whose paths are written out (no expression): the same array when all are. */
const fixedRules = (rules: FileRule[]): FileRule[] =>
  rules.some((r) => r.pattern.includes('$')) ? rules.filter((r) => !r.pattern.includes('$')) : rules;

/**
 * Reads the files an environment's units use from the source commit (files/snapshot.ts) into the
 * selection, so that resolution keys each unit by them. A path written out in the configuration
 * that names nothing in the commit is refused here, with its file and line (NYL-CONFIG-FILES); a
 * path an instance's item fills in is checked when the instance resolves.
 */
export async function withSources(
  repo: GitRepo,
  cfg: Config,
  sel: Selection,
  paths: 'strict' | 'lenient' = 'strict',
): Promise<Selection> {
  if (!cfg.tree) return sel;
  const configs = [...(sel.mapping?.config ?? sel.units).values()];
  const rules = configs.flatMap(configuredRules);
  // Every unit's module folder, of every environment: a unit's key is the same wherever it runs.
  const modules = [...cfg.units.values()]
    .flatMap((u) => fixedRules(configuredRules(u)))
    .filter((r) => r.kind === 'module')
    .map((r) => r.pattern);
  const sources = rules.length
    ? await readSources(repo, cfg.tree, rules, { exclude: cfg.files, modules })
    : SourceFiles.empty();
  sel.sources = sources;
  const problems = paths === 'strict' ? configs.flatMap((u) => staticProblems(u, sources)) : [];
  if (problems.length) throw new NylError(problems);
  return sel;
}

/**
 * The identities of the files a unit's configuration names outright (paths without an expression):
 * what a unit whose inputs are not known yet is known to use.
 */
export function configuredFiles(sel: Selection, u: UnitConfig): FileIds | undefined {
  if (!sel.sources || !usesFiles(u.doc.kind)) return undefined;
  return sel.sources.identity(fixedRules(configuredRules(u))).files;
}

function staticProblems(u: UnitConfig, sources: SourceFiles): Problem[] {
  const rules = fixedRules(configuredRules(u));
  if (!rules.length) return [];
  return sources.identity(rules).problems.map((p) => {
    const path = p.field.split('.').map((x) => (/^\d+$/.test(x) ? Number(x) : x));
    const line = u.lineAt(path);
    const called = / calls the module /.test(p.message);
    return problem('NYL-CONFIG-FILES', `${u.doc.kind} ${u.doc.name}: ${p.field}: ${p.message}`, {
      subject: `${u.at.file}:${line} ${p.field}`,
      fix: called
        ? 'correct the source of that module call, or commit the module it names (a local module lives in the repository)'
        : `correct ${p.field} (paths are relative to the repository root), or commit what it names`,
    });
  });
}
