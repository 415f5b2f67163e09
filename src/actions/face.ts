import * as core from '@actions/core';
import type { Problem } from '../core/util/errors.js';
import { masker } from '../core/util/mask.js';

/** What every action's main step shares: the workflow run, credentials, identity, outputs, annotations. */

export function workflowRunUrl(): string | undefined {
  const e = process.env;
  return e.GITHUB_RUN_ID
    ? `${e.GITHUB_SERVER_URL ?? 'https://github.com'}/${e.GITHUB_REPOSITORY}/actions/runs/${e.GITHUB_RUN_ID}`
    : undefined;
}

/** A token given as input authenticates git over HTTPS for this process (actions/checkout's way). */
export function useToken(token: string): void {
  if (!token) return;
  core.setSecret(token);
  const server = new URL(process.env.GITHUB_SERVER_URL ?? 'https://github.com');
  const basic = Buffer.from(`x-access-token:${token}`).toString('base64');
  core.setSecret(basic);
  // An empty value first resets the header list (actions/checkout persists its own header, and
  // two Authorization headers are refused), then ours.
  const n = Number(process.env.GIT_CONFIG_COUNT ?? 0);
  const key = `http.${server.origin}/.extraheader`;
  process.env.GIT_CONFIG_COUNT = String(n + 2);
  process.env[`GIT_CONFIG_KEY_${n}`] = key;
  process.env[`GIT_CONFIG_VALUE_${n}`] = '';
  process.env[`GIT_CONFIG_KEY_${n + 1}`] = key;
  process.env[`GIT_CONFIG_VALUE_${n + 1}`] = `AUTHORIZATION: basic ${basic}`;
}

/**
 * Who asked, on a runner (which has no git identity): the workflow's actor, unless an identity
 * is set. Recorded with lease breaks, recoveries and approvals.
 */
export function useActorIdentity(): void {
  const e = process.env;
  if (!e.GITHUB_ACTOR || e.GIT_COMMITTER_NAME || e.GIT_AUTHOR_NAME) return;
  const email = e.GITHUB_ACTOR_ID
    ? `${e.GITHUB_ACTOR_ID}+${e.GITHUB_ACTOR}@users.noreply.github.com`
    : `${e.GITHUB_ACTOR}@users.noreply.github.com`;
  e.GIT_COMMITTER_NAME = e.GITHUB_ACTOR;
  e.GIT_COMMITTER_EMAIL = email;
}

/** Every output, annotation and summary goes through the one masking step. */
export function setOutput(name: string, value: string): void {
  core.setOutput(name, masker.mask(value));
}

export function annotate(problems: Problem[]): void {
  for (const p of problems) {
    const text = masker.mask(`${p.message}${p.fix ? `\nfix: ${p.fix}` : ''}`);
    const props = { title: `${p.code}${p.subject ? ` (${p.subject})` : ''}` };
    if (p.severity === 'error') core.error(text, props);
    else core.warning(text, props);
  }
}
