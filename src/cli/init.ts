import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { type InitPlan, planInit } from '../core/ops/init/init.js';
import { actionsRef, branchOf, environmentList, toolOf } from '../core/ops/init/options.js';
import type { OpReport } from '../core/ops/workspace/report.js';
import { Exit, NylError, problem } from '../core/util/errors.js';
import type { Values } from './parse.js';

/** `nyl init`: the files the core planned, written (or printed with --dry-run), and what to do next. */

export interface InitDone {
  report: OpReport;
  text: string;
}

/** A file system refusal: NYL-INIT-WRITE; a file that appeared since the check (`wx`): NYL-INIT-EXISTS. */
function refused(plan: InitPlan, path: string, e: unknown, exists: boolean): NylError {
  return new NylError(
    problem(exists ? 'NYL-INIT-EXISTS' : 'NYL-INIT-WRITE', `${path} cannot be written: ${(e as Error).message}`, {
      subject: plan.root,
      exit: exists ? Exit.refused : Exit.failed,
      fix: exists
        ? 'another process made it meanwhile: look at it, then run `nyl init --force` to write over it'
        : 'clear the way (a file where a folder goes, a read-only folder, a full disk) and run `nyl init` again',
    }),
  );
}

/**
 * Writes each file: the folders first, so a path in the way writes nothing; then the files, `wx`
 * unless --force, so a file that appeared since the check is not written over either.
 */
function write(plan: InitPlan, force: boolean): void {
  for (const f of plan.files)
    try {
      mkdirSync(dirname(join(plan.root, f.path)), { recursive: true });
    } catch (e) {
      throw refused(plan, f.path, e, false);
    }
  for (const f of plan.files)
    try {
      writeFileSync(join(plan.root, f.path), f.content, { flag: force ? 'w' : 'wx' });
    } catch (e) {
      throw refused(plan, f.path, e, (e as NodeJS.ErrnoException).code === 'EEXIST');
    }
}

/** The three next steps: commit and push; the actions' reference and the environments' secrets; a pull request. */
export function nextSteps(plan: InitPlan): string[] {
  const paths = plan.files.map((f) => f.path.split('/')[0]).filter((p, i, all) => all.indexOf(p) === i);
  const branchFirst = plan.current === plan.branch ? 'git switch -c add-nyl && ' : '';
  const list = plan.environments.join(', ');
  return [
    `Commit and push: \`${branchFirst}git add ${paths.join(' ')} && git commit -m "Deploy with Nyl" && git push -u origin HEAD\`. Once committed, \`nyl plan -e ${plan.environments[0]} --local\` shows the first plan on this machine.`,
    `${plan.placeholder ? `Replace the placeholder ${plan.actions} in every \`uses:\` of .github/workflows/*.yml with the repository that publishes Nyl's actions and a ref of it (\`nyl init --force --actions-ref OWNER/REPO@REF\` writes them so). ` : ''}In GitHub, create the environment${plan.environments.length > 1 ? 's' : ''} ${list} (Settings > Environments) and give them the secrets your units need.`,
    `Open a pull request into ${plan.branch}: the plan workflow comments each environment's plan on it; merging it deploys ${plan.environments.join(', then ')}.`,
  ];
}

function render(plan: InitPlan, dryRun: boolean, steps: string[]): string {
  const lines: string[] = [];
  if (dryRun) {
    for (const f of plan.files) lines.push(`==> ${f.path} <==`, f.content.trimEnd(), '');
    lines.push(`dry run: nothing written; \`nyl init\` without --dry-run writes the ${plan.files.length} files above.`);
  } else for (const f of plan.files) lines.push(`${f.exists ? 'overwrote' : 'wrote'} ${f.path}`);
  const units = plan.units.map((u) =>
    u.module !== undefined ? `${u.name} (${u.kind} ${u.module || '.'})` : `${u.name} (${u.kind} example)`,
  );
  lines.push(
    '',
    `environments: ${plan.environments.join(', ')}`,
    `units: ${units.join(', ')}`,
    `branch: ${plan.branch}`,
    `actions: ${plan.actions}${plan.placeholder ? ' (a placeholder)' : ''}`,
  );
  lines.push('', 'next steps:', ...steps.map((s, i) => `  ${i + 1}. ${s}`));
  return `${lines.join('\n')}\n`;
}

/** Runs `nyl init` from its parsed options. */
export async function runInit(values: Values, cwd: string): Promise<InitDone> {
  const force = values.force === true;
  const dryRun = values['dry-run'] === true;
  const plan = await planInit({
    cwd,
    environments: environmentList(values.environments as string | undefined),
    tool: toolOf(values.tool as string | undefined),
    actions: actionsRef(values['actions-ref'] as string | undefined),
    branch: branchOf(values.branch as string | undefined),
    force,
  });
  if (!dryRun) write(plan, force);
  const steps = nextSteps(plan);
  const files = plan.files.map((f) => ({
    path: f.path,
    action: f.exists ? 'overwrite' : 'create',
    written: !dryRun,
    ...(dryRun ? { content: f.content } : {}),
  }));
  const report: OpReport = {
    operation: 'init',
    environment: '',
    outcome: dryRun ? 'dry run' : 'done',
    facts: [
      ['root', plan.root],
      ['branch', plan.branch],
      ['environments', plan.environments],
      ['units', plan.units],
      ['actions', plan.actions],
      ['placeholder', plan.placeholder],
      ['files', files],
      ['nextSteps', steps],
    ],
    problems: [],
    exit: Exit.ok,
  };
  return { report, text: render(plan, dryRun, steps) };
}
