import type { GitResult } from '../git/exec.js';

/**
 * What a `git push --atomic --porcelain` ended with. Only a rejection that says another writer
 * got there first is a lost race; a push the server declines (hook, protection, permission) is
 * not, and is never retried blindly; a push that got no answer is unknown until the remote is
 * read again; one that surely never reached the server was not sent.
 */
export type PushVerdict =
  | { kind: 'accepted' }
  | { kind: 'lost-race'; refs: string[] }
  | { kind: 'declined'; refs: string[]; reason: string }
  | { kind: 'unknown'; detail: string }
  | { kind: 'not-sent'; detail: string };

/** Reasons that mean another writer moved one of our refs first (client or server side). */
const LOST_RACE =
  /stale info|fetch first|non-fast-forward|failed to lock|cannot lock ref|atomic transaction failed|incorrect old value|reference already exists|but expected/;
/** Reasons an atomic push gives the other refs of a push one ref of which was refused. */
const DEPENDENT = /atomic push fail(ed|ure)/;
/** HTTP answers and messages that mean the server refused the credentials or the request. */
const REFUSED =
  /returned error: (401|403)|Permission to .* denied|Authentication failed|permission denied|not allowed to push|access denied/i;
/** Failures before anything was sent: nothing can have landed. */
const NOT_SENT =
  /Could not resolve host|Failed to connect|Connection refused|does not appear to be a git repository|Repository not found|returned error: 404|No such file or directory/i;

interface PorcelainLine {
  flag: string;
  ref: string;
  summary: string;
}

function porcelain(stdout: string): PorcelainLine[] {
  const out: PorcelainLine[] = [];
  for (const line of stdout.split('\n')) {
    const m = /^([ +\-*!=])\t([^\t]*)\t(.*)$/.exec(line);
    if (m) out.push({ flag: m[1] as string, ref: (m[2] as string).replace(/^[^:]*:/, ''), summary: m[3] as string });
  }
  return out;
}

function lastError(stderr: string): string {
  const lines = stderr
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => /^(fatal|error):/.test(l));
  return lines.slice(-2).join('; ') || stderr.trim().split('\n').slice(-1)[0] || 'no answer';
}

export function classifyPush(r: GitResult): PushVerdict {
  if (r.ended)
    return { kind: 'unknown', detail: r.ended === 'timeout' ? 'it timed out' : 'it was stopped by the cancel' };
  const lines = porcelain(r.stdout.toString('utf8'));
  const rejected = lines.filter((l) => l.flag === '!');
  if (r.code === 0 && lines.length && !rejected.length) return { kind: 'accepted' };
  if (rejected.length) {
    const causes = rejected.filter((l) => !DEPENDENT.test(l.summary));
    // Every ref refused for a dependent reason only: the server gave no cause; read its message.
    if (!causes.length) {
      if (LOST_RACE.test(r.stderr)) return { kind: 'lost-race', refs: rejected.map((l) => l.ref) };
      return { kind: 'declined', refs: rejected.map((l) => l.ref), reason: rejected[0]?.summary ?? 'rejected' };
    }
    if (
      causes.every(
        (l) => LOST_RACE.test(l.summary) || (/failed to update ref/.test(l.summary) && LOST_RACE.test(r.stderr)),
      )
    )
      return { kind: 'lost-race', refs: causes.map((l) => l.ref) };
    const declined = causes.filter((l) => !LOST_RACE.test(l.summary));
    return { kind: 'declined', refs: declined.map((l) => l.ref), reason: declined.map((l) => l.summary).join('; ') };
  }
  if (REFUSED.test(r.stderr)) return { kind: 'declined', refs: [], reason: lastError(r.stderr) };
  if (NOT_SENT.test(r.stderr)) return { kind: 'not-sent', detail: lastError(r.stderr) };
  return { kind: 'unknown', detail: lastError(r.stderr) };
}

/** What the server said (`remote: …` lines), for NYL-REMOTE-REJECTED. */
export function remoteMessages(stderr: string): string[] {
  return stderr
    .split('\n')
    .filter((l) => l.startsWith('remote: '))
    .map((l) => l.slice(8).trimEnd())
    .filter((l) => l && !/^error: hook declined to update/.test(l))
    .slice(0, 10);
}
