import deploy from '../../../../examples/workflows/deploy.yml';
import plan from '../../../../examples/workflows/plan.yml';
import recover from '../../../../examples/workflows/recover.yml';
import verify from '../../../../examples/workflows/verify.yml';

/**
 * The example workflows as shipped, embedded at build time (scripts/build.mjs loads `.yml` as
 * text): examples/workflows/ stays the one source of what `nyl init` writes, with no copy to keep
 * in step, and a nyl installed without that folder still has them.
 */
export const EXAMPLE_WORKFLOWS = { plan, deploy, verify, recover } as const;

export type WorkflowName = keyof typeof EXAMPLE_WORKFLOWS;
