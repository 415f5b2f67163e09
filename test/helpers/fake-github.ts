import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * The parts of the GitHub REST API nyl's actions use for pull requests, in memory, every request
 * recorded: issue comments (list, create, update) and the pull requests of a commit. The actions
 * under test drive it with the real @actions/github client (GITHUB_API_URL points here).
 */
export interface Comment {
  id: number;
  issue: number;
  body: string;
  /** Its author (default: the workflow token's bot) and their association with the repository. */
  user?: { login: string; type: 'User' | 'Bot' };
  association?: string;
}

const ACTIONS_BOT = { login: 'github-actions[bot]', type: 'Bot' as const };

export interface Deployment {
  id: number;
  sha: string;
  environment: string;
  payload: Record<string, unknown>;
  production_environment?: boolean;
  /** Its statuses, oldest first. */
  statuses: { state: string; environment_url?: string; log_url?: string; description?: string }[];
}

export class FakeGitHub {
  readonly requests: { method: string; path: string; body?: unknown }[] = [];
  readonly deployments: Deployment[] = [];
  /** Answer every Deployments API call with this status (403, 500, …) instead. */
  deploymentsFail: number | undefined;
  readonly comments: Comment[] = [];
  /** Pull requests by the commit sha that belongs to them (and, merged, the merge commit). */
  readonly pulls = new Map<string, { number: number; merge_commit_sha?: string }[]>();
  private server: Server | undefined;
  url = '';

  constructor(readonly repository = 'acme/app') {}

  async start(): Promise<this> {
    this.server = createServer((req, res) => {
      let text = '';
      req.on('data', (d) => {
        text += d;
      });
      req.on('end', () => {
        const u = new URL(req.url ?? '/', 'http://127.0.0.1');
        const body = text ? JSON.parse(text) : undefined;
        this.requests.push({ method: req.method ?? '', path: u.pathname, ...(body ? { body } : {}) });
        const send = (status: number, data: unknown) => {
          res.writeHead(status, { 'content-type': 'application/json; charset=utf-8' });
          res.end(JSON.stringify(data));
        };
        const base = `/repos/${this.repository}`;
        const view = (c: Comment) => ({
          id: c.id,
          body: c.body,
          user: c.user ?? ACTIONS_BOT,
          author_association: c.association ?? 'NONE',
          html_url: `https://github.example/${this.repository}/pull/${c.issue}#issuecomment-${c.id}`,
        });
        const list = new RegExp(`^${base}/issues/(\\d+)/comments$`).exec(u.pathname);
        const one = new RegExp(`^${base}/issues/comments/(\\d+)$`).exec(u.pathname);
        const pulls = new RegExp(`^${base}/commits/([0-9a-f]+)/pulls$`).exec(u.pathname);
        if (list && req.method === 'GET')
          return send(200, this.comments.filter((c) => c.issue === Number(list[1])).map(view));
        if (list && req.method === 'POST') {
          const c = { id: 1000 + this.comments.length, issue: Number(list[1]), body: body.body };
          this.comments.push(c);
          return send(201, view(c));
        }
        if (one && req.method === 'PATCH') {
          const c = this.comments.find((x) => x.id === Number(one[1]));
          if (!c) return send(404, { message: 'Not Found' });
          c.body = body.body;
          return send(200, view(c));
        }
        if (pulls && req.method === 'GET') return send(200, this.pulls.get(pulls[1] as string) ?? []);
        if (u.pathname.startsWith(`${base}/deployments`))
          return this.deploymentsApi(req.method ?? '', u, base, body, send);
        send(404, { message: 'Not Found' });
      });
    });
    await new Promise<void>((r) => this.server?.listen(0, '127.0.0.1', r));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
    return this;
  }

  /** The Deployments API: create, list (by sha and environment, newest first), statuses. */
  private deploymentsApi(
    method: string,
    u: URL,
    base: string,
    body: Record<string, unknown> | undefined,
    send: (status: number, data: unknown) => void,
  ): unknown {
    if (this.deploymentsFail) return send(this.deploymentsFail, { message: 'Resource not accessible by integration' });
    const view = (d: Deployment) => ({
      id: d.id,
      sha: d.sha,
      ref: d.sha,
      environment: d.environment,
      payload: d.payload,
    });
    if (u.pathname === `${base}/deployments` && method === 'POST') {
      const d: Deployment = {
        id: 500 + this.deployments.length,
        sha: String(body?.ref),
        environment: String(body?.environment),
        payload: (body?.payload ?? {}) as Record<string, unknown>,
        production_environment: body?.production_environment as boolean | undefined,
        statuses: [],
      };
      this.deployments.push(d);
      return send(201, view(d));
    }
    if (u.pathname === `${base}/deployments` && method === 'GET') {
      const sha = u.searchParams.get('sha');
      const env = u.searchParams.get('environment');
      const found = this.deployments.filter((d) => (!sha || d.sha === sha) && (!env || d.environment === env));
      return send(200, found.reverse().map(view));
    }
    const st = new RegExp(`^${base}/deployments/(\\d+)/statuses$`).exec(u.pathname);
    const d = st && this.deployments.find((x) => x.id === Number(st[1]));
    if (d && method === 'GET')
      return send(
        200,
        [...d.statuses].reverse().map((x, i) => ({ id: i + 1, ...x })),
      );
    if (d && method === 'POST') {
      const { state, environment_url, log_url, description } = body as Record<string, string>;
      d.statuses.push({
        state: String(state),
        ...(environment_url ? { environment_url } : {}),
        ...(log_url ? { log_url } : {}),
        ...(description ? { description } : {}),
      });
      // A success makes the environment's earlier deployments inactive (auto_inactive).
      if (state === 'success' && (body as { auto_inactive?: boolean }).auto_inactive !== false)
        for (const o of this.deployments)
          if (o !== d && o.environment === d.environment && o.statuses.at(-1)?.state === 'success')
            o.statuses.push({ state: 'inactive' });
      return send(201, { id: d.statuses.length, state });
    }
    send(404, { message: 'Not Found' });
  }

  /** The sha of the environment's latest deployment whose last status is success, as GitHub shows it. */
  deployedSha(environment: string): string | undefined {
    return this.deployments
      .filter((d) => d.environment === environment && d.statuses.at(-1)?.state === 'success')
      .at(-1)?.sha;
  }

  /** Method and path of each request, in order. */
  calls(): string[] {
    return this.requests.map((r) => `${r.method} ${r.path}`);
  }

  /** A comment written by someone else (for a planted one: a user with no access). */
  plant(issue: number, body: string, user: Comment['user'], association = 'NONE'): void {
    this.comments.push({ id: 1000 + this.comments.length, issue, body, user, association });
  }

  commentsOn(pr: number): Comment[] {
    return this.comments.filter((c) => c.issue === pr);
  }

  /** Stops listening and ends every connection, idle or not (a client killed mid-request must not hold the close). */
  close(): Promise<void> {
    const server = this.server;
    if (!server) return Promise.resolve();
    const closed = new Promise<void>((r) => server.close(() => r()));
    server.closeAllConnections();
    return closed;
  }
}
