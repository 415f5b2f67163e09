import { gunzipSync, gzipSync } from 'node:zlib';
import type { getOctokit } from '@actions/github';
import type { KeptChanges } from '../core/changes/model.js';
import { keptKey, type ReviewedPlan } from '../core/ops/plan/plan.js';
import { keptPlan, unitLevelResult } from '../core/ops/plan/reviewed.js';
import type { RunReport, UnitRow } from '../core/ops/workspace/report.js';
import { masker } from '../core/util/mask.js';
import { fittedChangesMd } from './changes-md.js';
import { inline } from './markdown.js';

/**
 * Plans on pull requests: one comment per environment, found again by a hidden marker and updated
 * in place, that shows what the deploy of the merge will execute and carries the plan's token
 * (and, hidden, its rows, so a stale plan can say which units changed). The deploy of the merge
 * commit finds the pull request of that commit, reads the token from the comment, and executes
 * exactly that plan, or refuses a stale one and posts the new plan as a reply.
 */
type Octokit = ReturnType<typeof getOctokit>;
export interface Repo {
  owner: string;
  repo: string;
}

/** GitHub refuses a comment body over 65,536 characters: stay under it. */
export const COMMENT_BUDGET = 65_000;

const marker = (env: string) => `<!-- nyl-plan: ${env} -->`;
const DATA = /<!-- nyl-plan-data: (\{.*?\}) -->/s;
/** The kept plan, gzipped and base64: 500 resources' addresses and digests fit beside the table. */
const DATA_Z = /<!-- nyl-plan-data-z: ([A-Za-z0-9+/=]+) -->/;
const TOKEN = /\*\*Token\*\*: `(v\d+\.[0-9a-f.]+)`/;

/** A plan row as the comment keeps it: unit, result, and a short digest of its execution key. */
export type KeptRow = [string, string, string];

const keep = (r: UnitRow): KeptRow => [r.unit, unitLevelResult(r), keptKey(r.executionKey) ?? ''];

/** What the comment keeps hidden: the token, the rows, each resource-level unit's changes. */
interface KeptData {
  token: string;
  rows: KeptRow[];
  changes?: Record<string, KeptChanges>;
}

function dataBlock(plan: RunReport, token: string): string {
  const changes = keptPlan(plan).changes;
  const data: KeptData = { token, rows: plan.rows.map(keep), ...(changes ? { changes } : {}) };
  // Masked before it is compressed: the masking of the whole comment cannot see into it.
  return `<!-- nyl-plan-data-z: ${gzipSync(masker.mask(JSON.stringify(data))).toString('base64')} -->`;
}

/** The rows of a kept plan as checkToken compares them. */
export function keptRows(rows: KeptRow[]): Pick<UnitRow, 'unit' | 'result' | 'executionKey'>[] {
  return rows.map(([unit, result, key]) => ({ unit, result, executionKey: key || undefined }));
}

const ATTENTION = [
  'execute',
  'maybe',
  'inspect',
  'awaiting-approval',
  'failed',
  'uncertain',
  'blocked',
  'held',
  'drifted',
];

function tokenOf(plan: RunReport): string {
  return String((plan.extra ?? []).find(([k]) => k === 'token')?.[1] ?? '');
}

function row(r: UnitRow): string {
  return `| ${inline(r.unit)} | ${r.kind} | ${r.result} | ${inline(r.detail)} |`;
}

/**
 * The comment for one environment's plan: counts, the units that execute and why, those awaiting
 * approval, the dead runs the deploy imports first, the token; long lists collapsed, then cut
 * (saying how many rows were left out) to stay under GitHub's limit.
 */
export function planComment(plan: RunReport, opts: { note?: string; budget?: number } = {}): string {
  const budget = opts.budget ?? COMMENT_BUDGET;
  const env = plan.environment;
  const token = tokenOf(plan);
  const summary = String((plan.extra ?? []).find(([k]) => k === 'plan')?.[1] ?? '');
  const acting = plan.rows.filter((r) => ATTENTION.includes(r.result));
  const quiet = plan.rows.filter((r) => !ATTENTION.includes(r.result));
  const imports = plan.problems.filter((p) => p.code === 'NYL-RUN-UNIMPORTED');
  const warnings = plan.problems.filter((p) => p.code !== 'NYL-RUN-UNIMPORTED');
  const head = [
    marker(env),
    `### nyl plan for \`${env}\`: ${summary || 'nothing to do'}`,
    '',
    ...(opts.note ? [opts.note, ''] : []),
    ...imports.map((p) => `- dead run imported first: ${inline(p.message)}`),
    ...warnings.map((p) => `- **${p.severity} ${p.code}**: ${inline(p.message)}`),
    ...(imports.length || warnings.length ? [''] : []),
  ];
  const tail = [
    '',
    `**Token**: \`${token}\``,
    '',
    `The deploy of the merge commit executes exactly this plan (reconcile with \`plan-from-pr: true\`), or refuses it if it went stale; the CLI: \`nyl reconcile -e ${env} --plan ${token}\`.`,
    '',
  ];
  const data = dataBlock(plan, token);
  const fits = (parts: string[]) => parts.join('\n').length + data.length + 1 < budget;
  const table = (rows: UnitRow[]) => ['| Unit | Kind | Plan | Why |', '| --- | --- | --- | --- |', ...rows.map(row)];
  const collapsed = (title: string, rows: UnitRow[]) =>
    rows.length ? ['', `<details><summary>${title}</summary>`, '', ...table(rows), '', '</details>'] : [];
  const changes = fittedChangesMd(
    plan.rows,
    (c) => fits([...head, ...table(acting), ...c, ...tail]),
    '_The resource changes are left out: the comment is kept under GitHub’s limit; the job summary has them._',
  );
  let body = [
    ...head,
    ...(acting.length ? table(acting) : ['Nothing executes.']),
    ...changes,
    ...collapsed(`${quiet.length} units unchanged`, quiet),
    ...tail,
  ];
  if (!fits(body))
    body = [...head, ...(acting.length ? table(acting) : []), ...changes, `- ${quiet.length} units unchanged`, ...tail];
  if (!fits(body)) {
    // Cut the table: keep what fits, say how many rows were left out.
    const lines = table(acting);
    let shown = lines.length;
    const attempt = () => [
      ...head,
      ...lines.slice(0, shown),
      `| … | | | ${acting.length - (shown - 2)} more rows not shown: the comment is kept under GitHub's limit; the job summary has them all |`,
      ...tail,
    ];
    while (shown > 2 && !fits(attempt())) shown--;
    body = attempt();
  }
  // The rows for a later staleness check, when they fit too.
  return fits(body) ? `${body.join('\n')}\n${data}\n` : `${body.join('\n')}\n`;
}

/** The token, rows and resource changes of an environment's plan comment. */
export function readPlanComment(body: string): {
  token?: string;
  rows?: KeptRow[];
  changes?: Record<string, KeptChanges>;
} {
  const z = DATA_Z.exec(body)?.[1];
  if (z)
    try {
      const parsed = JSON.parse(gunzipSync(Buffer.from(z, 'base64')).toString('utf8')) as KeptData;
      if (parsed.token) return parsed;
    } catch {
      /* fall back to the other forms */
    }
  const data = DATA.exec(body)?.[1];
  if (data)
    try {
      const parsed = JSON.parse(data) as { token?: string; rows?: KeptRow[] };
      if (parsed.token) return parsed;
    } catch {
      /* fall back to the visible token */
    }
  return { token: TOKEN.exec(body)?.[1] };
}

/** People who may write to the repository; anyone else's comment is not a plan, whatever it says. */
const TRUSTED = new Set(['OWNER', 'MEMBER', 'COLLABORATOR']);

/**
 * The environment's plan comment: the first with its marker written by a bot (the workflow's token,
 * an app installed on the repository) or by someone with write access. A comment planted by anyone
 * else could show one table and hide rows (or a token) that approve more.
 */
async function planCommentOf(octokit: Octokit, repo: Repo, pr: number, env: string) {
  const all = await octokit.paginate(octokit.rest.issues.listComments, { ...repo, issue_number: pr, per_page: 100 });
  return all.find(
    (c) => c.body?.includes(marker(env)) && (c.user?.type === 'Bot' || TRUSTED.has(c.author_association ?? '')),
  );
}

/** Creates the environment's plan comment on the pull request, or updates the one there (by its marker). */
export async function upsertPlanComment(
  octokit: Octokit,
  repo: Repo,
  pr: number,
  env: string,
  body: string,
): Promise<{ id: number; url: string; action: 'created' | 'updated' | 'unchanged' }> {
  const found = await planCommentOf(octokit, repo, pr, env);
  if (found?.body === body) return { id: found.id, url: found.html_url, action: 'unchanged' };
  if (found) {
    const r = await octokit.rest.issues.updateComment({ ...repo, comment_id: found.id, body });
    return { id: r.data.id, url: r.data.html_url, action: 'updated' };
  }
  const r = await octokit.rest.issues.createComment({ ...repo, issue_number: pr, body });
  return { id: r.data.id, url: r.data.html_url, action: 'created' };
}

/** A new comment (a reply, in GitHub's conversation) with the plan as it is now. */
export async function replyWithPlan(octokit: Octokit, repo: Repo, pr: number, body: string): Promise<void> {
  await octokit.rest.issues.createComment({ ...repo, issue_number: pr, body });
}

/**
 * The reviewed plan of a pushed merge commit: its pull request (the one merged as that commit,
 * else the first that holds it) and the environment's plan comment there.
 */
export async function reviewedPlan(
  octokit: Octokit,
  repo: Repo,
  sha: string,
  env: string,
): Promise<{ pr?: number; token?: string; rows?: KeptRow[]; changes?: Record<string, KeptChanges> }> {
  const prs = (await octokit.rest.repos.listPullRequestsAssociatedWithCommit({ ...repo, commit_sha: sha })).data;
  const pr = prs.find((p) => p.merge_commit_sha === sha) ?? prs[0];
  if (!pr) return {};
  const comment = await planCommentOf(octokit, repo, pr.number, env);
  return { pr: pr.number, ...(comment?.body ? readPlanComment(comment.body) : {}) };
}

/** What the deploy passes to reconcile of a reviewed plan: its token, its rows, its resource changes. */
export function reviewedOf(r: {
  token: string;
  rows?: KeptRow[];
  changes?: Record<string, KeptChanges>;
}): ReviewedPlan {
  return {
    token: r.token,
    ...(r.rows ? { rows: keptRows(r.rows) } : {}),
    ...(r.changes ? { changes: r.changes } : {}),
  };
}
