/**
 * How a write stores its objects (src/core/git/repo.ts): only what the repository lacks goes into
 * the pack, the lookups that decide it skip trees and commits above an object just found missing,
 * and a document's blob id is computed once per buffer — but again when the masking learned a
 * value since (the blob written is then the masked text).
 */
import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { GitRepo } from '../src/core/git/repo.js';
import { Masker } from '../src/core/util/mask.js';
import { tempDir } from './helpers/repo.js';

const opened: GitRepo[] = [];
afterEach(() => {
  for (const r of opened.splice(0)) r.close();
});

async function open(dir: string): Promise<{ repo: GitRepo; asked: string[] }> {
  const repo = await GitRepo.open(dir);
  opened.push(repo);
  const asked: string[] = [];
  const read = repo.cat.read.bind(repo.cat);
  repo.cat.read = (name: string) => {
    asked.push(name);
    return read(name);
  };
  return { repo, asked };
}

function packedIds(dir: string, known: Set<string>): string[] {
  const packs = readdirSync(join(dir, '.git', 'objects', 'pack')).filter((f) => f.endsWith('.idx'));
  const ids = packs.flatMap((p) =>
    execFileSync('git', ['show-index'], {
      cwd: dir,
      input: readFileSync(join(dir, '.git', 'objects', 'pack', p)),
      encoding: 'utf8',
    })
      .trim()
      .split('\n')
      .map((l) => l.split(' ')[1] as string),
  );
  return ids.filter((id) => !known.has(id));
}

const who = { name: 'nyl test', email: 'test@localhost' };

describe('a write of objects', () => {
  it('stores what git lacks, looking up blobs but not the trees and commit above a missing one', async () => {
    const dir = tempDir('nyl-store-');
    execFileSync('git', ['init', '-q', dir]);
    const first = await open(dir);
    const b1 = first.repo.batch();
    const written: [string, Buffer][] = [
      ['a.json', Buffer.from('{"a":1}\n')],
      ['d/b.json', Buffer.from('{"b":2}\n')],
    ];
    const before = b1.tree(new Map(written));
    b1.commit({ tree: before, parents: [], author: who, message: 'first' });
    await b1.flush();
    const stored = new Set(packedIds(dir, new Set()));

    // A new process: it knows nothing of what the first wrote.
    const second = await open(dir);
    const b2 = second.repo.batch();
    // The same documents in new buffers (nothing remembered of the first write's), and one more.
    const again = written.map(([p, body]): [string, Buffer] => [p, Buffer.from(body)]);
    const root = b2.tree(new Map([...again, ['c.json', Buffer.from('{"c":3}\n')]]));
    const commit = b2.commit({ tree: root, parents: [], author: who, message: 'second' });
    // Existing blobs in a new arrangement: a new tree whose children are all there.
    const moved = b2.tree(new Map([['x.json', Buffer.from('{"a":1}\n')]]));
    await b2.flush();

    const blobC = execFileSync('git', ['rev-parse', `${root}:c.json`], { cwd: dir, encoding: 'utf8' }).trim();
    const subD = execFileSync('git', ['rev-parse', `${root}:d`], { cwd: dir, encoding: 'utf8' }).trim();
    expect(stored.has(subD)).toBe(true);
    // Every blob and the unchanged subtree were asked about; the root (it names c.json) and the commit were not.
    expect(second.asked).toContain(blobC);
    expect(second.asked).toContain(subD);
    expect(second.asked).toContain(moved);
    expect(second.asked).not.toContain(root);
    expect(second.asked).not.toContain(commit);
    // Stored: exactly the objects git lacked.
    expect(packedIds(dir, stored).sort()).toEqual([blobC, root, commit, moved].sort());
    const fsck = execFileSync('git', ['fsck', '--strict', '--no-dangling'], {
      cwd: dir,
      encoding: 'utf8',
      stdio: 'pipe',
    });
    expect(fsck).toBe('');
  });

  it('hashes a document again once the masking learned a value it holds: the masked text is written', async () => {
    const dir = tempDir('nyl-store-');
    execFileSync('git', ['init', '-q', dir]);
    const { repo } = await open(dir);
    const masker = new Masker();
    repo.textFilter = masker;
    const doc = Buffer.from('{"token":"s3cret-value-4711"}\n');
    const batch = repo.batch();
    const plain = batch.add('blob', doc);
    expect(batch.add('blob', doc)).toBe(plain);
    masker.add('s3cret-value-4711');
    const masked = batch.add('blob', doc);
    expect(masked).not.toBe(plain);
    await batch.flush();
    expect(execFileSync('git', ['cat-file', 'blob', masked], { cwd: dir, encoding: 'utf8' })).toBe('{"token":"***"}\n');
  });
});

describe('a write whose lookups fail', () => {
  it('fails with the reader’s error and stores nothing (its objects were compressed meanwhile)', async () => {
    const dir = tempDir('nyl-store-');
    execFileSync('git', ['init', '-q', dir]);
    const { repo } = await open(dir);
    const batch = repo.batch();
    const tree = batch.tree(new Map([['a.json', Buffer.from('{"a":1}\n')]]));
    repo.close();
    await expect(batch.flush()).rejects.toThrow(/closed/);
    expect(() => execFileSync('git', ['cat-file', '-e', tree], { cwd: dir, stdio: 'pipe' })).toThrow();
    expect(repo.isKnown(tree)).toBe(false);
  });
});
