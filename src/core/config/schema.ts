import { z } from 'zod';
import { parseDuration } from '../util/duration.js';

/** A name that can be one component of a git ref (units and environments name refs and tree paths). */
export const SAFE_NAME = /^[A-Za-z0-9](?:[A-Za-z0-9_.-]{0,98}[A-Za-z0-9_-])?$/;
export function isSafeName(s: string): boolean {
  return SAFE_NAME.test(s) && !s.includes('..') && !s.endsWith('.lock');
}
const SAFE_NAME_HINT = 'letters, digits, ".", "_" and "-", starting with a letter or digit, at most 100 characters';

const NAME_MESSAGE = `must be a safe git ref component (${SAFE_NAME_HINT})`;
const name = z
  .string()
  .regex(SAFE_NAME, { message: NAME_MESSAGE })
  .refine(isSafeName, { message: NAME_MESSAGE })
  .describe('Unique name; a git ref component');

const DURATION_MESSAGE = 'is not a duration: write a number with a unit, e.g. 30s, 10m, 1h30m';
const duration = z
  .string()
  .regex(/^(\d+(\.\d+)?(ms|s|m|h|d))+$/, { message: DURATION_MESSAGE })
  .refine((s) => parseDuration(s) !== undefined && (parseDuration(s) as number) > 0, {
    message: DURATION_MESSAGE,
  })
  .describe('A duration such as 30s, 10m or 1h30m');

/** The cap of one retry's delay (ops/reconcile/retry.ts); a longer backoff is refused, not cut. */
export const RETRY_DELAY_CAP_MS = 5 * 60_000;
export const RETRY_LIMIT_MAX = 10;
const RETRY_LIMIT_MESSAGE = `must be a whole number from 0 to ${RETRY_LIMIT_MAX}`;
const retries = z
  .strictObject({
    limit: z
      .number({ message: RETRY_LIMIT_MESSAGE })
      .int({ message: RETRY_LIMIT_MESSAGE })
      .min(0, { message: RETRY_LIMIT_MESSAGE })
      .max(RETRY_LIMIT_MAX, { message: RETRY_LIMIT_MESSAGE })
      .describe(`How many times a retryable failure runs again in the same run (0 to ${RETRY_LIMIT_MAX})`),
    backoff: duration
      .refine((s) => (parseDuration(s) ?? 0) <= RETRY_DELAY_CAP_MS, {
        message: 'must be at most 5m (the longest a retry waits)',
      })
      .optional()
      .describe('Wait before the first retry, doubled before each next one, at most 5m (default 10s)'),
  })
  .describe('Retries inside a run: a retryable failure runs again after a backoff');

const driftRepair = z
  .enum(['converge', 'manual'])
  .describe('What reconcile does with drifted units: converge re-executes safe ones, manual leaves them');

const sourceOrder = z
  .enum(['lenient', 'strict'])
  .describe(
    'A source commit that diverged from the recorded one (neither older nor newer): lenient applies it with a warning, strict refuses it',
  );

const refPrefix = z
  .string()
  .regex(/^refs\/[A-Za-z0-9_.\-/]+[A-Za-z0-9_-]$/, { message: 'must be a ref prefix such as refs/nyl' })
  .describe('Where Nyl keeps its refs (default refs/nyl)');

export const EnvironmentSchema = z
  .strictObject({
    kind: z.literal('Environment'),
    name,
    description: z.string().optional(),
    group: name.optional().describe('EnvironmentGroup this environment belongs to'),
    driftRepair: driftRepair.optional(),
    sourceOrder: sourceOrder.optional(),
    promotion: z
      .strictObject({
        after: z.array(name).min(1).describe('Environments that must have the source recorded first'),
        verified: z.boolean().optional().describe('true: and a verify of them after it found no drift'),
      })
      .optional()
      .describe('A promotion gate: reconcile a source here only after these environments have it'),
    coordinationRefPrefix: refPrefix.optional(),
  })
  .describe('A named target with its own lease and state refs');

export const EnvironmentGroupSchema = z
  .strictObject({
    kind: z.literal('EnvironmentGroup'),
    name,
    description: z.string().optional(),
    driftRepair: driftRepair.optional(),
    sourceOrder: sourceOrder.optional(),
    promote: z
      .array(name)
      .min(2)
      .optional()
      .describe('Environments in promotion order: each one after the one before it (shorthand for promotion.after)'),
    coordinationRefPrefix: refPrefix.optional(),
  })
  .describe('Settings shared by several environments');

/** A mapped unit's items: listed here, or one output reference whose value is a JSON list (resolve/for-each.ts). */
const forEach = z
  .union([
    z.array(z.union([z.string(), z.record(z.string(), z.unknown())])),
    z.string().regex(/^\s*\$\{\{.*\}\}\s*$/, { message: 'must be a list, or one ${{ units.<name>.outputs.<key> }}' }),
  ])
  .describe(
    'One instance NAME#KEY per item: a list (strings, or objects with an optional key), or ${{ units.U.outputs.K }} holding a JSON list',
  );

const unitBase = {
  name,
  description: z.string().optional(),
  environments: z
    .array(name)
    .optional()
    .describe('Environments (or EnvironmentGroups) this unit belongs to; default: all'),
  needs: z.array(name).optional().describe('Units that must finish before this one'),
  timeout: duration.optional().describe('Execution timeout (default 30m); past it the unit is uncertain'),
  forEach: forEach.optional(),
  retries: retries.optional(),
};

export const CommandSpecSchema = z.strictObject({
  run: z.string().min(1).describe('bash script run in the repository root, in its own process group'),
  idempotent: z.boolean().optional().describe('true: safe to run again (converge recovery policy)'),
  check: z
    .string()
    .min(1)
    .optional()
    .describe('verify: exit 0 in sync, 2 drifted (stdout is the detail), else unknown'),
  inspect: z.string().min(1).optional().describe('recovery: exit 0 applied, 2 not applied, else unknown'),
  retryable: z
    .boolean()
    .optional()
    .describe('false: a failure waits for `nyl recover --retry` instead of running again (default true)'),
  destroy: z.string().min(1).optional().describe('teardown script'),
});

export const CommandSchema = z
  .strictObject({
    kind: z.literal('Command'),
    ...unitBase,
    spec: CommandSpecSchema,
  })
  .describe('A unit that runs a bash script');

const relPath = z
  .string()
  .min(1)
  .refine((p) => !p.startsWith('/') && !p.split('/').includes('..'), {
    message: 'must be a path inside the repository (relative, without ..)',
  });

/** OpenTofu and Terraform share one spec; only the default binary differs. */
const tfSpec = (binary: string) =>
  z.strictObject({
    module: relPath.describe('Module directory, relative to the repository root'),
    variables: z
      .record(z.string(), z.unknown())
      .optional()
      .describe('Input variables; passed in a var file, never on the command line'),
    varFiles: z.array(relPath).optional().describe('Var files (relative to the repository root), before variables'),
    workspace: z
      .string()
      .regex(/^[A-Za-z0-9_-]+$/)
      .optional()
      .describe('Workspace, selected (or created) before apply'),
    initArgs: z.array(z.string()).optional().describe('Extra arguments for init'),
    applyArgs: z.array(z.string()).optional().describe('Extra arguments for apply'),
    binary: z.string().min(1).optional().describe(`The CLI to run (default: ${binary}); a name on PATH or a path`),
  });

export const OpenTofuSchema = z
  .strictObject({ kind: z.literal('OpenTofu'), ...unitBase, spec: tfSpec('tofu') })
  .describe('A unit that applies an OpenTofu module');
export const TerraformSchema = z
  .strictObject({ kind: z.literal('Terraform'), ...unitBase, spec: tfSpec('terraform') })
  .describe('A unit that applies a Terraform module');

export const OciImageSchema = z
  .strictObject({
    kind: z.literal('OciImage'),
    ...unitBase,
    spec: z
      .strictObject({
        image: z
          .string()
          .regex(/^[^\s@]+:[^\s@/:]+$/, { message: 'must be a target registry/repository:tag' })
          .describe('Target, registry/repository:tag'),
        source: z
          .string()
          .min(1)
          .describe(
            'Image to copy: registry/repository@sha256:… (by digest, best), …:tag, or a transport such as oci:DIR:TAG',
          ),
        platforms: z
          .array(z.string().regex(/^[a-z0-9]+\/[a-z0-9_]+(\/[a-z0-9]+)?$/, { message: 'must be os/arch[/variant]' }))
          .optional()
          .describe('Platforms to copy from a multi-platform source (default: all)'),
        tool: z.enum(['skopeo', 'docker-buildx']).optional().describe('Copy tool (default: skopeo)'),
        tls: z
          .strictObject({
            verify: z
              .boolean()
              .optional()
              .describe('Verify TLS certificates (default true; false for a local registry)'),
            certDir: relPath.optional().describe('Directory with CA certificates (skopeo --*-cert-dir)'),
          })
          .optional(),
      })
      .refine((spec) => spec.tool === 'docker-buildx' || (spec.platforms?.length ?? 0) <= 1, {
        message:
          'skopeo copies one platform or all of them: list one platform, leave platforms out for all, or use tool: docker-buildx',
        path: ['platforms'],
      }),
  })
  .describe('A unit that copies (promotes) a container image to a tag');

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
