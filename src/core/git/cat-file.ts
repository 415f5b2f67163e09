import type { ChildProcess } from 'node:child_process';
import { spawnGroup } from '../proc/children.js';
import { gitEnv, gitStats } from './exec.js';

export interface CatFileObject {
  oid: string;
  type: string;
  body: Buffer;
}

interface Pending {
  resolve: (o: CatFileObject | undefined) => void;
  reject: (e: Error) => void;
}

/**
 * One long-lived `git cat-file --batch`: every object read of a command goes through it,
 * pipelined, so reading N state documents costs one process, not N.
 */
export class CatFile {
  private child: ChildProcess | undefined;
  private closed = false;
  private buf: Buffer = Buffer.alloc(0);
  private queue: Pending[] = [];
  private failed: Error | undefined;

  constructor(private readonly cwd: string) {}

  private start(): ChildProcess {
    if (this.child) return this.child;
    gitStats.spawns++;
    gitStats.commands.push('cat-file');
    const child = spawnGroup('git', ['cat-file', '--batch'], { cwd: this.cwd, env: gitEnv(), stdio: 'pipe' });
    child.stdout?.on('data', (d: Buffer) => {
      this.buf = this.buf.length ? Buffer.concat([this.buf, d]) : d;
      this.drain();
    });
    const fail = (e: Error) => {
      this.failed = e;
      for (const p of this.queue.splice(0)) p.reject(e);
    };
    child.on('error', fail);
    child.on('exit', (code) => {
      if (this.queue.length) fail(new Error(`git cat-file exited with ${code}`));
      this.child = undefined;
    });
    child.stdin?.on('error', () => {});
    child.stderr?.resume();
    this.child = child;
    return child;
  }

  private drain(): void {
    while (this.queue.length) {
      const nl = this.buf.indexOf(0x0a);
      if (nl < 0) return;
      const header = this.buf.toString('utf8', 0, nl);
      const parts = header.split(' ');
      // `<name> missing`: the name is what was asked, and may itself contain spaces.
      if (!/^[0-9a-f]{40,64} \S+ \d+$/.test(header) && / (missing|ambiguous)$/.test(header)) {
        this.buf = this.buf.subarray(nl + 1);
        this.queue.shift()?.resolve(undefined);
        continue;
      }
      const size = Number(parts[2]);
      if (this.buf.length < nl + 1 + size + 1) return;
      const body = Buffer.from(this.buf.subarray(nl + 1, nl + 1 + size));
      this.buf = this.buf.subarray(nl + 1 + size + 1);
      this.queue.shift()?.resolve({ oid: parts[0] as string, type: parts[1] as string, body });
    }
  }

  /** Reads an object by name (`oid`, `ref`, `rev:path`); undefined when it does not exist. */
  read(name: string): Promise<CatFileObject | undefined> {
    if (this.failed) return Promise.reject(this.failed);
    // A read after close would start a reader nobody ends (and keep the process alive).
    if (this.closed) return Promise.reject(new Error('the repository was closed'));
    if (/[\n]/.test(name)) return Promise.resolve(undefined);
    const child = this.start();
    return new Promise((resolve, reject) => {
      this.queue.push({ resolve, reject });
      // Reads asked in one go (a tree's thousand documents) leave in one write, not one each.
      if (!this.pending) queueMicrotask(() => this.send(child));
      this.pending += `${name}\n`;
    });
  }

  private pending = '';

  private send(child: ReturnType<CatFile['start']>): void {
    const names = this.pending;
    this.pending = '';
    if (names) child.stdin?.write(names);
  }

  close(): void {
    this.closed = true;
    if (this.child) {
      this.child.stdin?.end();
      this.child = undefined;
    }
  }
}
