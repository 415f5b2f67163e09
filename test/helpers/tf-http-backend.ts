import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * A Terraform `http` state backend with locking, in the test process
 * (https://developer.hashicorp.com/terraform/language/backend/http):
 *
 * - `GET /state`: 200 with the state, or 404 when there is none; `POST /state[?ID=lock]` stores
 *   it (refused with 423 and the lock's info while another holds the lock); `DELETE /state` drops it.
 * - `LOCK /lock` with the lock info (JSON): 200 and held, or 423 Locked with the holder's info.
 * - `UNLOCK /lock`: with the holder's lock info, 200 and released (another ID: 409 with the
 *   holder's info); with an empty body, as `force-unlock` of Terraform 1.11 sends it, a forced
 *   unlock: whatever lock is held goes. Not locked: 200.
 *
 * The lock is the server's: it outlives the process that took it, as in every remote backend.
 */
export interface TfHttpBackend {
  /** The module's `terraform { backend "http" { … } }` block. */
  hcl: string;
  /** The lock held now, or undefined. */
  lock(): LockInfo | undefined;
  /** The state stored now (JSON), or undefined. */
  state(): string | undefined;
  /** Every request, in order. */
  requests: { method: string; path: string; body: string; status: number }[];
  close(): Promise<void>;
}

export interface LockInfo {
  ID: string;
  Operation: string;
  Info: string;
  Who: string;
  Version: string;
  Created: string;
  Path: string;
}

const bodyOf = (req: IncomingMessage) =>
  new Promise<string>((resolve, reject) => {
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (d) => {
      body += d;
    });
    req.on('end', () => resolve(body));
    req.on('error', reject);
  });

export async function startTfHttpBackend(): Promise<TfHttpBackend> {
  let state: string | undefined;
  let lock: LockInfo | undefined;
  const requests: TfHttpBackend['requests'] = [];
  const server: Server = createServer(async (req, res) => {
    const body = await bodyOf(req);
    const url = new URL(req.url ?? '/', 'http://backend');
    const reply = (status: number, text = '') => {
      requests.push({ method: req.method ?? '', path: url.pathname + url.search, body, status });
      res.writeHead(status, text ? { 'content-type': 'application/json' } : {});
      res.end(text);
    };
    const locked = () => reply(423, JSON.stringify(lock));
    if (url.pathname === '/state') {
      if (req.method === 'GET') return state === undefined ? reply(404) : reply(200, state);
      if (req.method === 'POST') {
        if (lock && url.searchParams.get('ID') !== lock.ID) return locked();
        state = body;
        return reply(200);
      }
      if (req.method === 'DELETE') {
        state = undefined;
        return reply(200);
      }
    }
    if (url.pathname === '/lock') {
      if (req.method === 'LOCK') {
        if (lock) return locked();
        try {
          lock = JSON.parse(body) as LockInfo;
        } catch {
          return reply(400);
        }
        return reply(200);
      }
      if (req.method === 'UNLOCK') {
        if (!lock || !body.trim()) {
          lock = undefined;
          return reply(200);
        }
        let id: string | undefined;
        try {
          id = (JSON.parse(body) as Partial<LockInfo>).ID;
        } catch {
          return reply(400);
        }
        if (id !== lock.ID) return reply(409, JSON.stringify(lock));
        lock = undefined;
        return reply(200);
      }
    }
    reply(405);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    hcl: [
      'terraform {',
      '  backend "http" {',
      `    address        = "${base}/state"`,
      `    lock_address   = "${base}/lock"`,
      `    unlock_address = "${base}/lock"`,
      '  }',
      '}',
      '',
    ].join('\n'),
    lock: () => lock,
    state: () => state,
    requests,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
