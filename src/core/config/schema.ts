import * as z from 'zod/mini';
import { parseDuration } from '../util/duration.js';
import { isSafeName, SAFE_NAME } from '../util/safe-name.js';
import { described } from '../util/zod.js';

export { isSafeName, SAFE_NAME };

const SAFE_NAME_HINT = 'letters, digits, ".", "_" and "-", starting with a letter or digit, at most 100 characters';

const NAME_MESSAGE = `must be a safe git ref component (${SAFE_NAME_HINT})`;
const name = described(
  z.string().check(z.regex(SAFE_NAME, { message: NAME_MESSAGE }), z.refine(isSafeName, { message: NAME_MESSAGE })),
  'Unique name; a git ref component',
);

const DURATION_MESSAGE = 'is not a duration: write a number with a unit, e.g. 30s, 10m, 1h30m';
const duration = described(
  z.string().check(
    z.regex(/^(\d+(\.\d+)?(ms|s|m|h|d))+$/, { message: DURATION_MESSAGE }),
    z.refine((s: string) => parseDuration(s) !== undefined && (parseDuration(s) as number) > 0, {
      message: DURATION_MESSAGE,
    }),
  ),
  'A duration such as 30s, 10m or 1h30m',
);

/** The cap of one retry's delay (ops/reconcile/retry.ts); a longer backoff is refused, not cut. */
export const RETRY_DELAY_CAP_MS = 5 * 60_000;
export const RETRY_LIMIT_MAX = 10;
const RETRY_LIMIT_MESSAGE = `must be a whole number from 0 to ${RETRY_LIMIT_MAX}`;
const retries = described(
  z.strictObject({
    limit: described(
      z
        .number({ message: RETRY_LIMIT_MESSAGE })
        .check(
          z.int({ message: RETRY_LIMIT_MESSAGE }),
          z.gte(0, { message: RETRY_LIMIT_MESSAGE }),
          z.lte(RETRY_LIMIT_MAX, { message: RETRY_LIMIT_MESSAGE }),
        ),
      `How many times a retryable failure runs again in the same run (0 to ${RETRY_LIMIT_MAX})`,
    ),
    backoff: described(
      z.optional(
        duration.check(
          z.refine((s: string) => (parseDuration(s) ?? 0) <= RETRY_DELAY_CAP_MS, {
            message: 'must be at most 5m (the longest a retry waits)',
          }),
        ),
      ),
      'Wait before the first retry, doubled before each next one, at most 5m (default 10s)',
    ),
  }),
  'Retries inside a run: a retryable failure runs again after a backoff',
);

const driftRepair = described(
  z.enum(['converge', 'manual']),
  'What reconcile does with drifted units: converge re-executes safe ones, manual leaves them',
);

const destructiveChanges = described(
  z.enum(['approve', 'allow']),
  'Terraform/OpenTofu plans that delete or replace resources: approve (default) waits for --approve or a reviewed plan token, allow applies them',
);

const sourceOrder = described(
  z.enum(['lenient', 'strict']),
  'A source commit that diverged from the recorded one (neither older nor newer): lenient applies it with a warning, strict refuses it',
);

const refPrefix = described(
  z
    .string()
    .check(z.regex(/^refs\/[A-Za-z0-9_.\-/]+[A-Za-z0-9_-]$/, { message: 'must be a ref prefix such as refs/nyl' })),
  'Where Nyl keeps its refs (default refs/nyl)',
);

export const EnvironmentSchema = described(
  z.strictObject({
    kind: z.literal('Environment'),
    name,
    description: z.optional(z.string()),
    group: described(z.optional(name), 'EnvironmentGroup this environment belongs to'),
    driftRepair: z.optional(driftRepair),
    destructiveChanges: z.optional(destructiveChanges),
    sourceOrder: z.optional(sourceOrder),
    promotion: described(
      z.optional(
        z.strictObject({
          after: described(
            z.array(name).check(z.minLength(1)),
            'Environments that must have the source recorded first',
          ),
          verified: described(z.optional(z.boolean()), 'true: and a verify of them after it found no drift'),
        }),
      ),
      'A promotion gate: reconcile a source here only after these environments have it',
    ),
    coordinationRefPrefix: z.optional(refPrefix),
    url: described(
      z.optional(z.string().check(z.minLength(1))),
      "The environment's URL, a template over its units' outputs (https://${{ units.web.outputs.host }}), resolved from what is recorded after a run",
    ),
    production: described(
      z.optional(z.boolean()),
      "GitHub's production_environment for this environment's deployments (default false)",
    ),
  }),
  'A named target with its own lease and state refs',
);

export const EnvironmentGroupSchema = described(
  z.strictObject({
    kind: z.literal('EnvironmentGroup'),
    name,
    description: z.optional(z.string()),
    driftRepair: z.optional(driftRepair),
    destructiveChanges: z.optional(destructiveChanges),
    sourceOrder: z.optional(sourceOrder),
    promote: described(
      z.optional(z.array(name).check(z.minLength(2))),
      'Environments in promotion order: each one after the one before it (shorthand for promotion.after)',
    ),
    coordinationRefPrefix: z.optional(refPrefix),
  }),
  'Settings shared by several environments',
);

/** A mapped unit's items: listed here, or one output reference whose value is a JSON list (resolve/for-each.ts). */
const forEach = described(
  z.union([
    z.array(z.union([z.string(), z.record(z.string(), z.unknown())])),
    z
      .string()
      .check(z.regex(/^\s*\$\{\{.*\}\}\s*$/, { message: 'must be a list, or one ${{ units.<name>.outputs.<key> }}' })),
  ]),
  'One instance NAME#KEY per item: a list (strings, or objects with an optional key), or ${{ units.U.outputs.K }} holding a JSON list',
);

const unitBase = {
  name,
  description: z.optional(z.string()),
  environments: described(
    z.optional(z.array(name)),
    'Environments (or EnvironmentGroups) this unit belongs to; default: all',
  ),
  needs: described(z.optional(z.array(name)), 'Units that must finish before this one'),
  timeout: described(z.optional(duration), 'Execution timeout (default 30m); past it the unit is uncertain'),
  forEach: z.optional(forEach),
  retries: z.optional(retries),
};

const script = () => z.string().check(z.minLength(1));

const relPath = z.string().check(
  z.minLength(1),
  z.refine((p: string) => !p.startsWith('/') && !p.split('/').includes('..'), {
    message: 'must be a path inside the repository (relative, without ..)',
  }),
);

/** A path or glob of `files`: read from the source commit before anything runs, so an item's values only. */
const filePattern = relPath.check(
  z.refine((p: string) => !/\$\{\{(?!\s*each\.)/.test(p), {
    message: 'can use ${{ each.* }} but not unit outputs: the files a unit uses are known before anything runs',
  }),
);

export const CommandSpecSchema = z.strictObject({
  run: described(script(), 'bash script run in the repository root, in its own process group'),
  idempotent: described(z.optional(z.boolean()), 'true: safe to run again (converge recovery policy)'),
  check: described(z.optional(script()), 'verify: exit 0 in sync, 2 drifted (stdout is the detail), else unknown'),
  inspect: described(z.optional(script()), 'recovery: exit 0 applied, 2 not applied, else unknown'),
  retryable: described(
    z.optional(z.boolean()),
    'false: a failure waits for `nyl recover --retry` instead of running again (default true)',
  ),
  destroy: described(z.optional(script()), 'teardown script'),
  files: described(
    z.optional(z.array(filePattern).check(z.minLength(1))),
    'Files the scripts use, paths or globs relative to the repository root: a change to any of them in the source commit executes the unit (default: the repository file each script starts with)',
  ),
});

export const CommandSchema = described(
  z.strictObject({
    kind: z.literal('Command'),
    ...unitBase,
    spec: CommandSpecSchema,
  }),
  'A unit that runs a bash script',
);

/** OpenTofu and Terraform share one spec; only the default binary differs. */
const tfSpec = (binary: string) =>
  z.strictObject({
    module: described(relPath, 'Module directory, relative to the repository root'),
    variables: described(
      z.optional(z.record(z.string(), z.unknown())),
      'Input variables; passed in a var file, never on the command line',
    ),
    varFiles: described(z.optional(z.array(relPath)), 'Var files (relative to the repository root), before variables'),
    workspace: described(
      z.optional(z.string().check(z.regex(/^[A-Za-z0-9_-]+$/))),
      'Workspace, selected (or created) before apply',
    ),
    initArgs: described(z.optional(z.array(z.string())), 'Extra arguments for init'),
    applyArgs: described(z.optional(z.array(z.string())), 'Extra arguments for apply'),
    binary: described(z.optional(script()), `The CLI to run (default: ${binary}); a name on PATH or a path`),
  });

/** Not in the spec: a setting about approval, which must not change the execution key. */
const tfBase = {
  ...unitBase,
  destructiveChanges: described(
    z.optional(destructiveChanges),
    "This unit's deletes and replaces: approve waits for approval, allow applies them (default: the environment's)",
  ),
};

export const OpenTofuSchema = described(
  z.strictObject({ kind: z.literal('OpenTofu'), ...tfBase, spec: tfSpec('tofu') }),
  'A unit that applies an OpenTofu module',
);
export const TerraformSchema = described(
  z.strictObject({ kind: z.literal('Terraform'), ...tfBase, spec: tfSpec('terraform') }),
  'A unit that applies a Terraform module',
);

export const OciImageSchema = described(
  z.strictObject({
    kind: z.literal('OciImage'),
    ...unitBase,
    spec: z
      .strictObject({
        image: described(
          z.string().check(z.regex(/^[^\s@]+:[^\s@/:]+$/, { message: 'must be a target registry/repository:tag' })),
          'Target, registry/repository:tag',
        ),
        source: described(
          script(),
          'Image to copy: registry/repository@sha256:… (by digest, best), …:tag, or a transport such as oci:DIR:TAG',
        ),
        platforms: described(
          z.optional(
            z.array(
              z
                .string()
                .check(z.regex(/^[a-z0-9]+\/[a-z0-9_]+(\/[a-z0-9]+)?$/, { message: 'must be os/arch[/variant]' })),
            ),
          ),
          'Platforms to copy from a multi-platform source (default: all)',
        ),
        tool: described(z.optional(z.enum(['skopeo', 'docker-buildx'])), 'Copy tool (default: skopeo)'),
        tls: z.optional(
          z.strictObject({
            verify: described(
              z.optional(z.boolean()),
              'Verify TLS certificates (default true; false for a local registry)',
            ),
            certDir: described(z.optional(relPath), 'Directory with CA certificates (skopeo --*-cert-dir)'),
          }),
        ),
      })
      .check(
        z.refine(
          (spec: { tool?: string; platforms?: string[] }) =>
            spec.tool === 'docker-buildx' || (spec.platforms?.length ?? 0) <= 1,
          {
            message:
              'skopeo copies one platform or all of them: list one platform, leave platforms out for all, or use tool: docker-buildx',
            path: ['platforms'],
          },
        ),
      ),
  }),
  'A unit that copies (promotes) a container image to a tag',
);

export type EnvironmentDoc = z.infer<typeof EnvironmentSchema>;
export type EnvironmentGroupDoc = z.infer<typeof EnvironmentGroupSchema>;
export type CommandDoc = z.infer<typeof CommandSchema>;
export type UnitDoc =
  | CommandDoc
  | z.infer<typeof OpenTofuSchema>
  | z.infer<typeof TerraformSchema>
  | z.infer<typeof OciImageSchema>;

export const UNIT_KINDS = ['Command', 'OpenTofu', 'Terraform', 'OciImage'] as const;
export const KIND_SCHEMAS = {
  Environment: EnvironmentSchema,
  EnvironmentGroup: EnvironmentGroupSchema,
  Command: CommandSchema,
  OpenTofu: OpenTofuSchema,
  Terraform: TerraformSchema,
  OciImage: OciImageSchema,
} as const;
export type Kind = keyof typeof KIND_SCHEMAS;

/** The JSON Schema editors use for nyl.yaml (one document; multi-document files validate each). */
export function configJsonSchema(): unknown {
  const schema = z.toJSONSchema(
    z.union([
      EnvironmentSchema,
      EnvironmentGroupSchema,
      CommandSchema,
      OpenTofuSchema,
      TerraformSchema,
      OciImageSchema,
    ]),
    {
      target: 'draft-2020-12',
      unrepresentable: 'any',
    },
  ) as Record<string, unknown>;
  return {
    title: 'Nyl configuration document',
    ...schema,
  };
}
