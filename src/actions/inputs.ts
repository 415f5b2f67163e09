import * as core from '@actions/core';
import * as z from 'zod/mini';
import { parseDuration } from '../core/util/duration.js';
import '../core/util/zod.js';

/** Inputs as the runner passes them (INPUT_<NAME>), read once and validated with zod. */
const duration = (name: string) =>
  z.string().check(
    z.refine((s: string) => s === '' || parseDuration(s) !== undefined, {
      message: `${name} must be a duration such as 30s, 5m or 1h30m`,
    }),
  );
const bool = (name: string) =>
  z.pipe(
    z.string().check(
      z.refine((s: string) => ['', 'true', 'false', 'True', 'False', 'TRUE', 'FALSE'].includes(s), {
        message: `${name} must be true or false`,
      }),
    ),
    z.transform((s: string) => s.toLowerCase() === 'true'),
  );
const list = z.pipe(
  z.string(),
  z.transform((s: string) =>
    s
      .split(/[\n,]/)
      .map((x) => x.trim())
      .filter(Boolean),
  ),
);
const required = (message: string) => z.string().check(z.minLength(1, message));

/**
 * On cancel the runner sends SIGINT, then SIGTERM 7.5 s later, then kills the step 2.5 s after
 * that. Tools get the grace; nyl then still writes its checkpoints and releases the lease: a grace
 * that cannot leave time for that inside the 7.5 s is refused.
 */
export const MAX_CANCEL_GRACE_MS = 5_000;
const cancelGrace = duration('cancel-grace').check(
  z.refine((s: string) => s === '' || (parseDuration(s) ?? 0) <= MAX_CANCEL_GRACE_MS, {
    message: `cancel-grace cannot exceed 5s: on cancel the runner kills the step 7.5 s after its SIGINT, and nyl needs the rest of that window to checkpoint and release the lease`,
  }),
);

const common = {
  environment: required('environment is required: the environment to act on, e.g. dev'),
  config: z.string(),
  remote: z.string(),
  'wait-lease': duration('wait-lease'),
  'cancel-grace': cancelGrace,
  'network-timeout': duration('network-timeout'),
  token: z.string(),
};

export const SCHEMAS = {
  reconcile: z.object({
    ...common,
    units: list,
    reapply: bool('reapply'),
    reason: z.string(),
    approve: list,
    plan: z.string(),
    'allow-older-source': bool('allow-older-source'),
    'plan-from-pr': bool('plan-from-pr'),
    deployments: bool('deployments'),
    'deployment-environment': z.string(),
  }),
  recover: z.object({ ...common, unit: z.string(), retry: bool('retry'), accept: z.string(), reason: z.string() }),
  verify: z.object({ ...common, 'fail-on-drift': bool('fail-on-drift'), 'drift-issue': bool('drift-issue') }),
  'lease-break': z.object({ ...common, reason: required('reason is required: why the lease is broken') }),
  plan: z.object({
    ...common,
    environment: z.string(),
    environments: list,
    comment: bool('comment'),
    'resource-plans': bool('resource-plans'),
  }),
} as const;

export type ActionName = keyof typeof SCHEMAS;
export type Inputs<A extends ActionName> = z.infer<(typeof SCHEMAS)[A]>;

/**
 * The site action's inputs, apart from SCHEMAS: it only reads the state refs, taking no lease and
 * running no tool (so neither wait-lease nor cancel-grace), and `environment` is optional.
 */
export const SITE_SCHEMA = z.object({
  environment: z.string(),
  group: z.string(),
  out: required('out is required: the folder to write the site to, relative to the workspace, e.g. _site'),
  logs: bool('logs'),
  outputs: bool('outputs'),
  config: z.string(),
  remote: z.string(),
  'network-timeout': duration('network-timeout'),
  token: z.string(),
});
export type SiteInputs = z.infer<typeof SITE_SCHEMA>;

const DEFAULTS: Record<string, string> = {
  remote: 'origin',
  'cancel-grace': '5s',
  'fail-on-drift': 'true',
  'allow-older-source': 'false',
  'plan-from-pr': 'false',
  comment: 'true',
  'drift-issue': 'false',
  'resource-plans': 'false',
  deployments: 'false',
  out: '_site',
  logs: 'true',
  outputs: 'true',
};

export class InputError extends Error {}

/** Inputs of recover that go together: a unit with retry or accept, a reason always. */
function checkRecover(x: Inputs<'recover'>): void {
  if (x.unit && !x.retry && !x.accept) throw new InputError('input unit: set retry: true or accept: <run> with it');
  if (x.retry && x.accept) throw new InputError('inputs retry and accept: set one, not both');
  if (!x.unit && (x.retry || x.accept)) throw new InputError('inputs retry/accept need unit');
  if (!x.reason) throw new InputError('input reason is required: why (recorded with who asked)');
}

/** Inputs of reconcile that go together: one plan source, a reason where a decision is recorded. */
function checkReconcile(x: Inputs<'reconcile'>): void {
  if (x['plan-from-pr'] && x.plan) throw new InputError('inputs plan and plan-from-pr: set one, not both');
  if (x.reapply && (!x.units.length || !x.reason))
    throw new InputError('input reapply needs units (the units to execute again) and reason');
  if (x['allow-older-source'] && !x.reason)
    throw new InputError(
      'input allow-older-source needs reason: why this older commit is applied (recorded with who asked)',
    );
}

/** Reads every input of an action; one clear message per bad input, never a stack trace. */
export function readInputs<A extends ActionName>(action: A): Inputs<A> {
  const data = parsed(SCHEMAS[action]);
  if (action === 'recover') checkRecover(data as Inputs<'recover'>);
  if (action === 'reconcile') checkReconcile(data as Inputs<'reconcile'>);
  return data as Inputs<A>;
}

/** The site action's inputs: one environment or one group (as `nyl site -e` / `--group`), or neither: all. */
export function readSiteInputs(): SiteInputs {
  const data = parsed(SITE_SCHEMA);
  if (data.environment && data.group)
    throw new InputError('inputs environment and group: set one, not both (neither builds every environment)');
  return data;
}

/** Every input a schema names, as the runner passes it (or its default), validated. */
function parsed<S extends z.ZodMiniObject>(schema: S): z.infer<S> {
  const raw: Record<string, string> = {};
  for (const key of Object.keys(schema.shape)) raw[key] = core.getInput(key) || DEFAULTS[key] || '';
  const r = z.safeParse(schema, raw);
  if (!r.success)
    throw new InputError(r.error.issues.map((i) => `input ${String(i.path[0])}: ${i.message}`).join('\n'));
  return r.data;
}

/** What `read` gives, or the step failed with NYL-INPUT (annotated, no stack trace) and undefined. */
export function inputsOrFail<T>(read: () => T): T | undefined {
  try {
    return read();
  } catch (e) {
    const msg = e instanceof InputError ? e.message : String(e);
    core.error(msg, { title: 'NYL-INPUT' });
    core.setFailed(msg);
    return undefined;
  }
}
