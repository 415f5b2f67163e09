import { Exit, NylError, problem } from '../../util/errors.js';
import { isSafeName } from '../../util/safe-name.js';

/** What `nyl init` is asked for, checked: bad input is NYL-USAGE (exit 1), before anything is read or written. */

export const DEFAULT_ENVIRONMENTS = ['dev', 'staging', 'prod'];

export type Tool = 'terraform' | 'tofu';

/** `--actions-ref OWNER/REPO@REF`: where the workflows take Nyl's actions from. */
export interface ActionsRef {
  repository: string;
  ref: string;
}

const usage = (message: string, fix: string) => new NylError(problem('NYL-USAGE', message, { fix, exit: Exit.failed }));

/** `--environments dev,staging,prod`: names as the configuration takes them, each once, in promotion order. */
export function environmentList(text: string | undefined): string[] {
  if (text === undefined) return DEFAULT_ENVIRONMENTS;
  const names = text.split(',').map((n) => n.trim());
  const example = '`--environments dev,staging,prod`';
  if (names.some((n) => !n))
    throw usage(
      `init --environments ${JSON.stringify(text)} has an empty name`,
      `pass names separated by commas, e.g. ${example}`,
    );
  const bad = names.filter((n) => !isSafeName(n));
  if (bad.length)
    throw usage(
      `init --environments: ${bad.map((n) => JSON.stringify(n)).join(', ')} ${bad.length === 1 ? 'is not a valid environment name' : 'are not valid environment names'}`,
      `use letters, digits, ".", "_" and "-", starting with a letter or digit, at most 100 characters, without ".." or a final ".lock" (the configuration's name rules), e.g. ${example}`,
    );
  const twice = names.filter((n, i) => names.indexOf(n) !== i);
  if (twice.length)
    throw usage(
      `init --environments names ${[...new Set(twice)].join(', ')} more than once`,
      `name each environment once, in promotion order, e.g. ${example}`,
    );
  return names;
}

/** `--actions-ref OWNER/REPO@REF`; undefined keeps the examples' placeholder `your-org/nyl@v1`. */
export function actionsRef(text: string | undefined): ActionsRef | undefined {
  if (text === undefined) return undefined;
  const m = /^([A-Za-z0-9-]+\/[A-Za-z0-9_.-]+)@([^\s@]+)$/.exec(text.trim());
  if (!m)
    throw usage(
      `init --actions-ref ${JSON.stringify(text)} is not OWNER/REPO@REF`,
      'name the repository that publishes Nyl’s actions and a ref of it, e.g. `--actions-ref acme/nyl@v1` (or a full commit SHA)',
    );
  return { repository: m[1] as string, ref: m[2] as string };
}

/** `--tool terraform|tofu`: the kind of the units made for root modules (default Terraform). */
export function toolOf(text: string | undefined): Tool {
  if (text === undefined || text === 'terraform') return 'terraform';
  if (text === 'tofu' || text === 'opentofu') return 'tofu';
  throw usage(
    `init --tool ${JSON.stringify(text)} is not terraform or tofu`,
    'pass --tool terraform (the default) or --tool tofu (OpenTofu units)',
  );
}

/** `--branch NAME`: the branch pull requests go into and deploys come from. */
export function branchOf(text: string | undefined): string | undefined {
  if (text === undefined) return undefined;
  // What git accepts as a branch name, as far as a workflow's `branches:` filter needs it.
  if (!text || /[\s~^:?*[\\]|\.\.|@\{|^[-/.]|[/.]$|\.lock$/.test(text))
    throw usage(
      `init --branch ${JSON.stringify(text)} is not a branch name`,
      'pass the branch deploys come from, e.g. `--branch main`',
    );
  return text;
}
