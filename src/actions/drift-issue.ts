import type { getOctokit } from '@actions/github';
import { sha256Key } from '../core/util/canonical.js';

type Octokit = ReturnType<typeof getOctokit>;

export interface Finding {
  unit: string;
  detail: string;
}

export const DRIFT_LABEL = 'nyl-drift';
const MARKER = /<!-- nyl-drift-findings: (sha256:[0-9a-f]+) -->/;

export function driftTitle(env: string): string {
  return `Nyl drift: ${env}`;
}

function body(env: string, findings: Finding[], runUrl?: string): string {
  const hash = sha256Key(findings);
  return [
    `\`nyl verify -e ${env}\` found drift${runUrl ? ` in ${runUrl}` : ''}:`,
    '',
    '| Unit | Detail |',
    '| --- | --- |',
    ...findings.map((f) => `| ${f.unit} | ${f.detail.replace(/\|/g, '\\|').replace(/\r?\n/g, '<br>')} |`),
    '',
    `The next \`nyl reconcile -e ${env}\` repairs what its driftRepair setting allows; this issue is updated by each scheduled verify and closed when the drift is gone.`,
    '',
    `<!-- nyl-drift-findings: ${hash} -->`,
  ].join('\n');
}

/**
 * One issue per environment: opened on drift, its body updated (with a comment) only when the
 * findings change, closed when drift is gone.
 */
export async function syncDriftIssue(
  octokit: Octokit,
  repo: { owner: string; repo: string },
  env: string,
  findings: Finding[],
  runUrl?: string,
): Promise<{ action: 'opened' | 'updated' | 'unchanged' | 'closed' | 'none'; number?: number }> {
  const sorted = [...findings].sort((a, b) => (a.unit < b.unit ? -1 : 1));
  const open = await octokit.rest.issues.listForRepo({ ...repo, state: 'open', labels: DRIFT_LABEL, per_page: 100 });
  const issue = open.data.find((i) => i.title === driftTitle(env) && !i.pull_request);
  if (!sorted.length) {
    if (!issue) return { action: 'none' };
    await octokit.rest.issues.createComment({
      ...repo,
      issue_number: issue.number,
      body: `Drift is gone${runUrl ? ` (${runUrl})` : ''}.`,
    });
    await octokit.rest.issues.update({
      ...repo,
      issue_number: issue.number,
      state: 'closed',
      state_reason: 'completed',
    });
    return { action: 'closed', number: issue.number };
  }
  const text = body(env, sorted, runUrl);
  if (!issue) {
    const created = await octokit.rest.issues.create({
      ...repo,
      title: driftTitle(env),
      body: text,
      labels: [DRIFT_LABEL],
    });
    return { action: 'opened', number: created.data.number };
  }
  if (MARKER.exec(issue.body ?? '')?.[1] === sha256Key(sorted)) return { action: 'unchanged', number: issue.number };
  await octokit.rest.issues.update({ ...repo, issue_number: issue.number, body: text });
  await octokit.rest.issues.createComment({
    ...repo,
    issue_number: issue.number,
    body: `The findings changed${runUrl ? ` (${runUrl})` : ''}: ${sorted.map((f) => f.unit).join(', ')} drifted.`,
  });
  return { action: 'updated', number: issue.number };
}
