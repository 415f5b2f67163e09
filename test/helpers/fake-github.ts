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

export class FakeGitHub {
  readonly requests: { method: string; path: string; body?: unknown }[] = [];
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
        send(404, { message: 'Not Found' });
      });
    });
    await new Promise<void>((r) => this.server?.listen(0, '127.0.0.1', r));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
    return this;
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

  close(): Promise<void> {
    return new Promise((r) => this.server?.close(() => r()));
  }
}
