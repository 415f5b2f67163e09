import type { getOctokit } from '@actions/github';
import { SYMBOL } from '../core/changes/counts.js';
import type { ResourceAction } from '../core/changes/model.js';
import { sha256Key } from '../core/util/canonical.js';
import { code, inline } from './markdown.js';

type Octokit = ReturnType<typeof getOctokit>;
type Issue = Awaited<ReturnType<Octokit['rest']['issues']['listForRepo']>>['data'][number];

export interface Finding {
  unit: string;
  detail: string;
  /** A Terraform/OpenTofu unit's drifted resources: address and the action that puts it back. */
  resources?: { address: string; action: ResourceAction }[];
}

/** Resources named per unit; the rest counted (an issue body holds 65,536 characters). */
const RESOURCES_MAX = 50;

/** Per unit with them, its drifted resources, Terraform's symbols. */
function resourceLines(findings: Finding[]): string[] {
  return findings.flatMap((f) => {
    if (!f.resources?.length) return [];
    const shown = f.resources.slice(0, RESOURCES_MAX).map((r) => `- ${code(SYMBOL[r.action])} ${code(r.address)}`);
    const left = f.resources.length - shown.length;
    return [
      `**${inline(f.unit)}**: ${f.resources.length} resource${f.resources.length === 1 ? '' : 's'} drifted`,
      '',
      ...shown,
      ...(left ? [`- … ${left} more`] : []),
      '',
    ];
  });
}

export interface DriftIssueResult {
  action: 'opened' | 'updated' | 'unchanged' | 'closed' | 'none';
  number?: number;
  url?: string;
  /** Whether the issue carries the nyl-drift label (false: the token could not set labels). */
  labelled?: boolean;
}

export const DRIFT_LABEL = 'nyl-drift';
const FINDINGS = /<!-- nyl-drift-findings: (sha256:[0-9a-f]+) -->/;
/**
 * Open issues read when looking for the marker (100 a page): an environment's drift issue is
 * found among the newest 1000 open issues when it has no label.
 */
const MARKER_PAGES = 10;

/** The hidden line that names the environment in the body: found again even without the label. */
export function driftMarker(env: string): string {
  return `<!-- nyl-drift: ${env} -->`;
}

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
    // Tool text made inert: a `<!--` in a detail would hide the rest of the issue.
    ...findings.map((f) => `| ${inline(f.unit)} | ${inline(f.detail)} |`),
    '',
    ...resourceLines(findings),
    `The next \`nyl reconcile -e ${env}\` repairs what its driftRepair setting allows; this issue is updated by each scheduled verify and closed when the drift is gone.`,
    '',
    driftMarker(env),
    `<!-- nyl-drift-findings: ${hash} -->`,
  ].join('\n');
}

const hasLabel = (i: { labels?: (string | { name?: string })[] }) =>
  (i.labels ?? []).some((l) => (typeof l === 'string' ? l : l.name) === DRIFT_LABEL);

/**
 * The open drift issue of an environment: first among the issues labelled nyl-drift (by title or
 * marker), else among all open issues by the marker in its body (an issue opened by a token that
 * could not set labels). The oldest match wins.
 */
async function findIssue(
  octokit: Octokit,
  repo: { owner: string; repo: string },
  env: string,
): Promise<Issue | undefined> {
  const marker = driftMarker(env);
  const ours = (i: Issue) => !i.pull_request && (i.body ?? '').split(/\r?\n/).some((l) => l.trim() === marker);
  const oldest = (list: Issue[]) => list.sort((a, b) => a.number - b.number)[0];
  const labelled = await octokit.rest.issues.listForRepo({
    ...repo,
    state: 'open',
    labels: DRIFT_LABEL,
    per_page: 100,
  });
  const byLabel = oldest(labelled.data.filter((i) => !i.pull_request && (i.title === driftTitle(env) || ours(i))));
  if (byLabel) return byLabel;
  let page = 0;
  for await (const r of octokit.paginate.iterator(octokit.rest.issues.listForRepo, {
    ...repo,
    state: 'open',
    per_page: 100,
  })) {
    const found = oldest(r.data.filter(ours));
    if (found) return found;
    if (++page >= MARKER_PAGES) break;
  }
  return undefined;
}

/**
 * GitHub's answers when a token may not label: an existing label is silently dropped (201, the
 * issue has no label); a label that does not exist yet and may not be created is refused with 403
 * `You do not have permission to create labels on this repository.` (errors: field `label`, code
 * `unauthorized`). Only the second is worth a retry without labels.
 */
function refusedForLabels(e: unknown): boolean {
  const err = e as { status?: number; message?: string; response?: { data?: unknown } };
  if (err?.status !== 403 && err?.status !== 422) return false;
  const data = err.response?.data as { message?: string; errors?: { field?: string; resource?: string }[] } | undefined;
  if (data?.errors?.some((x) => x.field === 'label' || x.field === 'labels' || x.resource === 'Label')) return true;
  return /\blabels?\b/i.test(`${data?.message ?? ''} ${err.message ?? ''}`);
}

/**
 * One issue per environment: opened on drift, its body updated (with a comment) only when the
 * findings change, closed when drift is gone. Found by its label or, failing that, by the marker
 * in its body, so a token that cannot set labels does not open a new issue on every run.
 */
export async function syncDriftIssue(
  octokit: Octokit,
  repo: { owner: string; repo: string },
  env: string,
  findings: Finding[],
  runUrl?: string,
): Promise<DriftIssueResult> {
  const sorted = [...findings].sort((a, b) => (a.unit < b.unit ? -1 : a.unit > b.unit ? 1 : 0));
  const issue = await findIssue(octokit, repo, env);
  const known = issue ? { number: issue.number, url: issue.html_url, labelled: hasLabel(issue) } : undefined;
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
    return { action: 'closed', ...known };
  }
  const text = body(env, sorted, runUrl);
  if (!issue) {
    const create = (labels: string[] | undefined) =>
      octokit.rest.issues.create({ ...repo, title: driftTitle(env), body: text, ...(labels ? { labels } : {}) });
    let created: Awaited<ReturnType<typeof create>>;
    try {
      created = await create([DRIFT_LABEL]);
    } catch (e) {
      if (!refusedForLabels(e)) throw e;
      created = await create(undefined);
    }
    return {
      action: 'opened',
      number: created.data.number,
      url: created.data.html_url,
      labelled: hasLabel(created.data),
    };
  }
  if (FINDINGS.exec(issue.body ?? '')?.[1] === sha256Key(sorted)) return { action: 'unchanged', ...known };
  await octokit.rest.issues.update({ ...repo, issue_number: issue.number, body: text });
  await octokit.rest.issues.createComment({
    ...repo,
    issue_number: issue.number,
    body: `The findings changed${runUrl ? ` (${runUrl})` : ''}: ${sorted.map((f) => f.unit).join(', ')} drifted.`,
  });
  return { action: 'updated', ...known };
}
