/**
 * The drift issue found again by the hidden marker in its body when the token could not label it,
 * driven by the real `@actions/github` client against a small local stand-in for GitHub's issues API.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { getOctokit } from '@actions/github';
import { afterEach, describe, expect, it } from 'vitest';
import { DRIFT_LABEL, driftMarker, driftTitle, type Finding, syncDriftIssue } from '../src/actions/drift-issue.js';

const OWNER = 'o';
const REPO = 'r';
const TOKEN = 'ghs_drifttoken';

interface Issue {
  number: number;
  title: string;
  body: string;
  state: 'open' | 'closed';
  state_reason: string | null;
  labels: { name: string }[];
  comments: string[];
  pull_request?: object;
}

/**
 * What GitHub answers a token that may not label: `drop` an existing label silently (201, no
 * label); `refuse` a label that does not exist yet and may not be created (403, as below); `ok`
 * labels (creating the label). `forbid` refuses every write, as for a token without issues: write.
 */
type LabelMode = 'ok' | 'drop' | 'refuse' | 'forbid';

class IssuesApi {
  readonly issues: Issue[] = [];
  readonly calls: string[] = [];
  mode: LabelMode = 'ok';
  url = '';
  private server: Server | undefined;

  async start(): Promise<void> {
    const server = createServer((req, res) => {
      let text = '';
      req.on('data', (d) => {
        text += d;
      });
      req.on('end', () => {
        const u = new URL(req.url ?? '/', this.url);
        const body = text ? JSON.parse(text) : {};
        const page = Number(u.searchParams.get('page') ?? 1);
        this.calls.push(
          `${req.method} ${u.pathname}${u.searchParams.get('labels') ? ` labels=${u.searchParams.get('labels')}` : ''}${page > 1 ? ` page=${page}` : ''}${req.method === 'POST' && u.pathname.endsWith('/issues') ? ` labels=${JSON.stringify(body.labels ?? null)}` : ''}`,
        );
        const send = (status: number, data: unknown, headers: Record<string, string> = {}) => {
          res.writeHead(status, { 'content-type': 'application/json; charset=utf-8', ...headers });
          res.end(JSON.stringify(data));
        };
        if (req.headers.authorization !== `token ${TOKEN}`) return send(401, { message: 'Bad credentials' });
        const view = (i: Issue) => ({
          number: i.number,
          title: i.title,
          body: i.body,
          state: i.state,
          labels: i.labels,
          html_url: `https://github.example/${OWNER}/${REPO}/issues/${i.number}`,
          ...(i.pull_request ? { pull_request: i.pull_request } : {}),
        });
        const base = `/repos/${OWNER}/${REPO}/issues`;
        const one = new RegExp(`^${base}/(\\d+)$`).exec(u.pathname);
        const comments = new RegExp(`^${base}/(\\d+)/comments$`).exec(u.pathname);
        const find = (n: string | undefined) => this.issues.find((i) => i.number === Number(n));
        if (this.mode === 'forbid' && req.method !== 'GET')
          return send(403, {
            message: 'Resource not accessible by integration',
            documentation_url: 'https://docs.github.com/rest/issues/issues#create-an-issue',
            status: '403',
          });
        if (req.method === 'GET' && u.pathname === base) {
          const labels = (u.searchParams.get('labels') ?? '').split(',').filter(Boolean);
          const per = Number(u.searchParams.get('per_page') ?? 30);
          // Newest first, as GitHub lists them by default.
          const all = this.issues
            .filter((i) => i.state === (u.searchParams.get('state') ?? 'open'))
            .filter((i) => labels.every((l) => i.labels.some((x) => x.name === l)))
            .sort((a, b) => b.number - a.number);
          const slice = all.slice((page - 1) * per, page * per);
          const next = new URL(u);
          next.searchParams.set('page', String(page + 1));
          return send(200, slice.map(view), page * per < all.length ? { link: `<${next.href}>; rel="next"` } : {});
        }
        if (req.method === 'POST' && u.pathname === base) {
          const asked: string[] = body.labels ?? [];
          if (asked.length && this.mode === 'refuse')
            return send(403, {
              message: 'You do not have permission to create labels on this repository.',
              errors: [{ resource: 'Repository', field: 'label', code: 'unauthorized' }],
              documentation_url: 'https://docs.github.com/rest/issues/issues#create-an-issue',
              status: '403',
            });
          const issue: Issue = {
            number: this.issues.length + 1,
            title: body.title,
            body: body.body ?? '',
            state: 'open',
            state_reason: null,
            labels: this.mode === 'ok' ? asked.map((name) => ({ name })) : [],
            comments: [],
          };
          this.issues.push(issue);
          return send(201, view(issue));
        }
        if (req.method === 'PATCH' && one) {
          const issue = find(one[1]);
          if (!issue) return send(404, { message: 'Not Found' });
          if (body.body !== undefined) issue.body = body.body;
          if (body.state !== undefined) issue.state = body.state;
          if (body.state_reason !== undefined) issue.state_reason = body.state_reason;
          return send(200, view(issue));
        }
        if (req.method === 'POST' && comments) {
          const issue = find(comments[1]);
          if (!issue) return send(404, { message: 'Not Found' });
          issue.comments.push(body.body);
          return send(201, { id: issue.comments.length, body: body.body });
        }
        send(404, { message: 'Not Found' });
      });
    });
    this.server = server;
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    this.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  }

  /** Other open issues, older than anything the test opens (so they fill the later pages). */
  noise(n: number, make: (i: number) => Partial<Issue> = () => ({})): void {
    for (let i = 0; i < n; i++)
      this.issues.push({
        number: this.issues.length + 1,
        title: `unrelated ${i}`,
        body: 'nothing',
        state: 'open',
        state_reason: null,
        labels: [],
        comments: [],
        ...make(i),
      });
  }

  since(from: number): string[] {
    return this.calls.slice(from);
  }

  async close(): Promise<void> {
    await new Promise<void>((r) => this.server?.close(() => r()));
  }
}

let api: IssuesApi | undefined;
afterEach(async () => {
  await api?.close();
  api = undefined;
});

async function world(mode: LabelMode) {
  api = new IssuesApi();
  api.mode = mode;
  await api.start();
  const gh = getOctokit(TOKEN, { baseUrl: api.url });
  const sync = (findings: Finding[], env = 'dev', run = 'https://github.example/run/1') =>
    syncDriftIssue(gh, { owner: OWNER, repo: REPO }, env, findings, run);
  return { api, sync };
}

const ISSUES = `/repos/${OWNER}/${REPO}/issues`;

describe('drift issue without the label', () => {
  it('GitHub refuses to create the label (403): opened without it, then found by its marker, not opened again', async () => {
    const { api, sync } = await world('refuse');
    const first = await sync([{ unit: 'a', detail: 'a is bad' }]);
    expect(first).toEqual({
      action: 'opened',
      number: 1,
      url: `https://github.example/${OWNER}/${REPO}/issues/1`,
      labelled: false,
    });
    expect(api.since(0)).toEqual([
      `GET ${ISSUES} labels=${DRIFT_LABEL}`,
      `GET ${ISSUES}`,
      `POST ${ISSUES} labels=["${DRIFT_LABEL}"]`,
      `POST ${ISSUES} labels=null`,
    ]);
    const issue = api.issues[0] as Issue;
    expect(issue).toMatchObject({ title: driftTitle('dev'), labels: [] });
    expect(issue.body.split('\n')).toContain(driftMarker('dev'));

    // 150 newer issues push it to the second page: found there by the marker, left alone.
    api.noise(150);
    let from = api.calls.length;
    const same = await sync([{ unit: 'a', detail: 'a is bad' }]);
    expect(same).toMatchObject({ action: 'unchanged', number: 1, labelled: false });
    expect(api.since(from)).toEqual([`GET ${ISSUES} labels=${DRIFT_LABEL}`, `GET ${ISSUES}`, `GET ${ISSUES} page=2`]);
    expect(api.issues.filter((i) => i.title === driftTitle('dev'))).toHaveLength(1);

    // Changed findings: updated in place, with a comment.
    from = api.calls.length;
    const changed = await sync([
      { unit: 'b', detail: 'b is gone' },
      { unit: 'a', detail: 'a is bad' },
    ]);
    expect(changed).toMatchObject({ action: 'updated', number: 1 });
    expect(api.since(from).slice(-2)).toEqual([`PATCH ${ISSUES}/1`, `POST ${ISSUES}/1/comments`]);
    expect(issue.body).toContain('| b | b is gone |');
    expect(issue.body.split('\n')).toContain(driftMarker('dev'));
    expect(issue.comments).toEqual(['The findings changed (https://github.example/run/1): a, b drifted.']);

    // Gone: closed, by the marker too.
    const gone = await sync([]);
    expect(gone).toMatchObject({ action: 'closed', number: 1 });
    expect(issue).toMatchObject({ state: 'closed', state_reason: 'completed' });
    expect(await sync([])).toEqual({ action: 'none' });
  });

  it('GitHub drops the label silently (201 without it): found by its marker next time', async () => {
    const { api, sync } = await world('drop');
    expect(await sync([{ unit: 'a', detail: 'x' }])).toMatchObject({ action: 'opened', number: 1, labelled: false });
    expect(api.calls.filter((c) => c.startsWith('POST'))).toEqual([`POST ${ISSUES} labels=["${DRIFT_LABEL}"]`]);
    expect(await sync([{ unit: 'a', detail: 'x' }])).toMatchObject({ action: 'unchanged', number: 1 });
    expect(api.issues).toHaveLength(1);
  });

  it("only this environment's marker, in an issue, counts; a labelled issue is found by its title", async () => {
    const { api, sync } = await world('ok');
    api.noise(1, () => ({ title: 'Nyl drift: dev2', body: `x\n${driftMarker('dev2')}` }));
    api.noise(1, () => ({ title: 'a pull request', body: driftMarker('dev'), pull_request: {} }));
    api.noise(1, () => ({ title: 'quoted', body: `see \`${driftMarker('dev')}\`` }));
    // An issue from before the marker: labelled, found by its title.
    api.noise(1, () => ({ title: driftTitle('prod'), body: 'old body', labels: [{ name: DRIFT_LABEL }] }));
    const dev = await sync([{ unit: 'a', detail: 'x' }]);
    expect(dev).toMatchObject({ action: 'opened', number: 5, labelled: true });
    expect(api.issues[4]?.labels).toEqual([{ name: DRIFT_LABEL }]);
    const from = api.calls.length;
    expect(await sync([{ unit: 'a', detail: 'x' }], 'prod')).toMatchObject({
      action: 'updated',
      number: 4,
      labelled: true,
    });
    expect(api.since(from)[0]).toBe(`GET ${ISSUES} labels=${DRIFT_LABEL}`);
    expect(api.since(from)).not.toContain(`GET ${ISSUES}`);
    expect(api.issues[3]?.body.split('\n')).toContain(driftMarker('prod'));
  });

  it('a token without issues: write is refused once, not retried without labels', async () => {
    const { api, sync } = await world('forbid');
    await expect(sync([{ unit: 'a', detail: 'x' }])).rejects.toMatchObject({ status: 403 });
    expect(api.calls.filter((c) => c.startsWith('POST'))).toHaveLength(1);
  });

  it('keeps tool text inert in the issue body', async () => {
    const { api, sync } = await world('ok');
    await sync([{ unit: 'a', detail: 'bad <!-- hides the rest | and breaks the table\nline' }]);
    const body = api.issues[0]?.body ?? '';
    expect(body).toContain('| a | bad &lt;!-- hides the rest \\| and breaks the table<br>line |');
    expect(body.match(/<!--/g)).toHaveLength(2); // the two markers, nothing else
  });

  it('names the resources a Terraform unit drifted in (50 a unit, the rest counted); new resources update it', async () => {
    const { api, sync } = await world('ok');
    const resources = Array.from({ length: 60 }, (_, i) => ({
      address: `terraform_data.r[${i}]`,
      action: 'update' as const,
    }));
    await sync([{ unit: 'net', detail: 'Plan: 0 to add, 60 to change, 0 to destroy.', resources }]);
    const body = api.issues[0]?.body ?? '';
    expect(body).toContain('**net**: 60 resources drifted');
    expect(body).toContain('- `~` `terraform_data.r[0]`');
    expect(body).toContain('- `~` `terraform_data.r[49]`');
    expect(body).not.toContain('terraform_data.r[50]');
    expect(body).toContain('- … 10 more');
    const again = await sync([
      {
        unit: 'net',
        detail: 'Plan: 0 to add, 60 to change, 0 to destroy.',
        resources: [...resources.slice(1), { address: 'x.y', action: 'create' }],
      },
    ]);
    expect(again).toMatchObject({ action: 'updated' });
  });
});
