import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { DEFAULT_CONFIG_FILES } from '../../config/default-files.js';
import { Exit, NylError, problem } from '../../util/errors.js';
import { composeConfig, type InitUnit, unitsFor } from './config.js';
import type { ActionsRef, Tool } from './options.js';
import { initRepository } from './repository.js';
import { rootModules, tfFiles, unitNames } from './roots.js';
import { composeWorkflows, PLACEHOLDER } from './workflows.js';

/** `nyl init`: what to write where, as data; the face writes it (or prints it, --dry-run). */

export interface InitOptions {
  cwd: string;
  environments: string[];
  tool: Tool;
  actions?: ActionsRef;
  branch?: string;
  /** Write over files that exist. */
  force: boolean;
}

export interface InitFile {
  /** Relative to the repository's top, `/`-separated. */
  path: string;
  content: string;
  /** It exists: written over (--force). */
  exists: boolean;
}

export interface InitPlan {
  root: string;
  branch: string;
  /** The branch checked out (undefined: HEAD is detached, --branch named one). */
  current?: string;
  environments: string[];
  units: InitUnit[];
  /** The actions' reference the workflows use, or the examples' placeholder. */
  actions: string;
  placeholder: boolean;
  files: InitFile[];
}

/** Every file `nyl init` writes, or a refusal naming the ones that exist (NYL-INIT-EXISTS, exit 2). */
export async function planInit(opts: InitOptions): Promise<InitPlan> {
  const repo = await initRepository(opts.cwd, opts.branch);
  const modules = unitNames(rootModules(await tfFiles(repo.root)));
  const units = unitsFor(modules, opts.tool);
  const contents = [
    { path: 'nyl.yaml', content: composeConfig(opts.environments, units) },
    ...composeWorkflows({ environments: opts.environments, branch: repo.branch, actions: opts.actions }),
  ];
  const files = contents.map((f) => ({ ...f, exists: existsSync(join(repo.root, f.path)) }));
  // nyl.yml is a configuration too (read when nyl.yaml is absent): it counts as one that exists.
  const otherConfig = DEFAULT_CONFIG_FILES.filter((f) => f !== 'nyl.yaml' && existsSync(join(repo.root, f)));
  const existing = [...otherConfig, ...files.filter((f) => f.exists).map((f) => f.path)];
  if (existing.length && !opts.force)
    throw new NylError(
      problem(
        'NYL-INIT-EXISTS',
        `${existing.join(', ')} ${existing.length === 1 ? 'exists' : 'exist'} already: nothing written`,
        {
          subject: repo.root,
          exit: Exit.refused,
          fix: `move ${existing.length === 1 ? 'it' : 'them'} aside, or run \`nyl init --force\` to write over ${existing.length === 1 ? 'it' : 'them'} (see \`nyl init --dry-run\` for what it writes)`,
        },
      ),
    );
  return {
    root: repo.root,
    branch: repo.branch,
    ...(repo.current ? { current: repo.current } : {}),
    environments: opts.environments,
    units,
    actions: opts.actions ? `${opts.actions.repository}@${opts.actions.ref}` : `${PLACEHOLDER}@v1`,
    placeholder: !opts.actions,
    files,
  };
}
