import { parseConfig } from '../../config/load.js';
import { yaml } from '../../config/yaml-lib.js';
import { NylError, problem } from '../../util/errors.js';
import type { Tool } from './options.js';

/** The `nyl.yaml` `nyl init` writes: the environments in a promotion line, a unit per root module. */

export interface InitUnit {
  name: string;
  kind: 'Terraform' | 'OpenTofu' | 'Command';
  /** The module folder of a Terraform/OpenTofu unit ('' for the repository's top). */
  module?: string;
}

/** A comment of several lines, as the `yaml` library takes it (each line after its `#`). */
const comment = (...lines: string[]) => lines.map((l) => (l ? ` ${l}` : '')).join('\n');

const HEADER = (environments: string[]) =>
  comment(
    'Nyl configuration, written by `nyl init`. Every command reads it from the commit checked out',
    '(HEAD), so commit a change before `nyl plan -e ENV --local` shows it. Kinds and fields:',
    'docs/configuration.md and docs/kinds.md of Nyl; `nyl schema` prints the JSON Schema for editors.',
    '',
    ...(environments.length > 1
      ? [
          `Promotion: ${environments.join(', then ')}. Each environment reconciles a commit only once the`,
          'one before it has it recorded without failed or uncertain units; `verified: true` in a',
          'promotion also asks for a verify in sync since (deploy.yml verifies after each reconcile).',
        ]
      : ['One environment; more follow it with `promotion: {after: [previous]}`.']),
  );

const MODULE_NOTE = (folder: string) =>
  comment(
    `The root module ${folder || 'at the top of the repository'}. Every environment applies it with this spec:`,
    'keep their states apart (a backend key per environment through spec.initArgs, or',
    'spec.workspace), e.g. with one unit per environment (`environments: [dev]`) each naming its own.',
    'Variables go in spec.variables or spec.varFiles; `needs: [unit]` orders units.',
  );

const EXAMPLE_NOTE = comment(
  'An example unit, so that `nyl plan -e ENV --local` and `nyl reconcile -e ENV --local` have',
  'something to show: replace it with your own. A Command runs its bash script in the repository',
  'root; `key=value` lines written to $NYL_OUTPUT become its outputs. A Terraform or OpenTofu root',
  'module is a unit too: `kind: Terraform`, `spec: {module: infra/network}`.',
);

/** Units for the root modules found, or the Command example when there are none. */
export function unitsFor(modules: Map<string, string>, tool: Tool): InitUnit[] {
  const kind = tool === 'tofu' ? 'OpenTofu' : 'Terraform';
  if (!modules.size) return [{ name: 'hello', kind: 'Command' }];
  return [...modules].map(([module, name]) => ({ name, kind, module }));
}

type Doc = InstanceType<ReturnType<typeof yaml>['Document']>;

function environmentDoc(name: string, previous: string | undefined): Doc {
  const doc = new (yaml().Document)({
    kind: 'Environment',
    name,
    ...(previous ? { promotion: { after: [previous] } } : {}),
  });
  const after = doc.getIn(['promotion', 'after'], true) as { flow?: boolean } | undefined;
  if (after) after.flow = true;
  return doc;
}

function unitDoc(u: InitUnit): Doc {
  const { Document } = yaml();
  if (u.kind === 'Command') {
    const doc = new Document({
      kind: 'Command',
      name: u.name,
      timeout: '1m',
      spec: { run: 'echo "hello from $NYL_ENVIRONMENT" && echo "greeting=hello" >> "$NYL_OUTPUT"', idempotent: true },
    });
    (doc.contents as { commentBefore?: string }).commentBefore = EXAMPLE_NOTE;
    return doc;
  }
  const doc = new Document({ kind: u.kind, name: u.name, spec: { module: u.module || '.' } });
  (doc.contents as { commentBefore?: string }).commentBefore = MODULE_NOTE(u.module ?? '');
  return doc;
}

/** The file's text, checked by the loader every command uses: what `nyl init` writes must load. */
export function composeConfig(environments: string[], units: InitUnit[]): string {
  const docs = [...environments.map((e, i) => environmentDoc(e, environments[i - 1])), ...units.map(unitDoc)];
  (docs[0] as Doc).commentBefore = HEADER(environments);
  const text = docs.map((d) => d.toString({ flowCollectionPadding: false, lineWidth: 0 })).join('---\n');
  try {
    parseConfig('init', [{ file: 'nyl.yaml', text }]);
  } catch (e) {
    const why = e instanceof NylError ? e.problems.map((p) => p.message).join('; ') : String(e);
    throw new NylError(
      problem('NYL-INTERNAL', `nyl init composed a nyl.yaml that does not load: ${why}`, {
        fix: 'this is a bug in nyl; report it with the command you ran',
      }),
    );
  }
  return text;
}
