import { resolve } from 'node:path';
import * as core from '@actions/core';
import { streamSite } from '../core/ops/site/gather.js';
import { type OpContext, openWorkspace } from '../core/ops/workspace/workspace.js';
import { endAll, endGently } from '../core/proc/children.js';
import { removeWorkdir } from '../core/proc/workdir.js';
import { parseDuration } from '../core/util/duration.js';
import { NylError, type Problem, problem } from '../core/util/errors.js';
import { masker } from '../core/util/mask.js';
import { workflowRepoUrl, writeSite } from '../site/pages.js';
import { annotate, setOutput, useToken, workflowRunUrl } from './face.js';
import { inputsOrFail, readSiteInputs } from './inputs.js';
import { siteFailureSummary, siteSummary } from './site-summary.js';

/**
 * The site action: fetches the state refs from the remote (as `nyl site` without --local) and
 * writes the static site into `out` in the workspace, for actions/upload-pages-artifact. It
 * takes no lease and writes no ref. Outputs the folder (absolute) and the number of pages.
 */
export async function runSiteAction(): Promise<void> {
  const inputs = inputsOrFail(readSiteInputs);
  if (!inputs) return;
  useToken(inputs.token);
  // The runner masks them in the log too; the pages are masked by the site's own writer.
  for (const s of masker.secrets) core.setSecret(s);
  const workspace = process.env.GITHUB_WORKSPACE || process.cwd();
  const folder = resolve(workspace, inputs.out);
  const left = { logs: inputs.logs, outputs: inputs.outputs };
  let ctx: OpContext | undefined;
  try {
    ctx = await openWorkspace(
      {
        cwd: workspace,
        config: inputs.config || undefined,
        local: false,
        remote: inputs.remote,
        networkTimeoutMs: inputs['network-timeout'] ? parseDuration(inputs['network-timeout']) : undefined,
      },
      { onEvent: (e) => e.type === 'note' && core.info(`nyl: ${e.text}`) },
    );
    const site = await streamSite(ctx, {
      environment: inputs.environment || undefined,
      group: inputs.group || undefined,
      ...left,
    });
    const { report, overview: data } = await writeSite({ ...site, ...workflowRepoUrl() }, folder, left);
    const pages = Number(report.facts.find(([k]) => k === 'pages')?.[1] ?? 0);
    setOutput('folder', folder);
    setOutput('pages', String(pages));
    annotate(report.problems);
    const n = data.environments.length;
    core.info(`nyl: ${pages} pages of ${n} environment${n === 1 ? '' : 's'} written to ${folder}`);
    if (process.env.GITHUB_STEP_SUMMARY)
      await core.summary.addRaw(masker.mask(siteSummary(data, { folder, pages, ...left }, workflowRunUrl()))).write();
  } catch (e) {
    await reportFailure(e);
  } finally {
    ctx?.repo.close();
    await endGently();
    endAll();
    removeWorkdir();
  }
}

/** A refusal or failure: its annotations (titled with their codes), summary, the step failed; never a stack trace. */
async function reportFailure(e: unknown): Promise<void> {
  const problems: Problem[] =
    e instanceof NylError ? e.problems : [problem('NYL-INTERNAL', (e as Error)?.message ?? String(e))];
  annotate(problems);
  const msg = masker.mask(problems.map((p) => `${p.code}: ${p.message}`).join('\n'));
  if (process.env.GITHUB_STEP_SUMMARY)
    await core.summary.addRaw(masker.mask(siteFailureSummary(problems, workflowRunUrl()))).write();
  core.setFailed(msg);
}
