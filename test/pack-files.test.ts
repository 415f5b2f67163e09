/**
 * Packs nyl writes into a repository itself (src/core/git/pack-files.ts): git reads them like its
 * own — the index is byte for byte the one `git index-pack` makes of the same pack, `verify-pack`
 * and `fsck --strict` accept them, every object reads back — in SHA-1 and SHA-256 repositories;
 * where git must place packs itself (GIT_OBJECT_DIRECTORY, a shared repository) a write runs
 * `git index-pack` as before.
 */
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { gitStats } from '../src/core/git/exec.js';
import { buildPack, type HashAlgo, makeObject, serializeTree } from '../src/core/git/objects.js';
import { crc32, packDirOf, packIndex, writePackFiles } from '../src/core/git/pack-files.js';
import { GitRepo } from '../src/core/git/repo.js';
import { tempDir } from './helpers/repo.js';

const opened: GitRepo[] = [];
afterEach(() => {
  for (const r of opened.splice(0)) r.close();
});

function init(format: HashAlgo): string {
  const dir = tempDir('nyl-packfiles-');
  execFileSync('git', ['init', '-q', `--object-format=${format}`, dir]);
  return dir;
}

const git = (dir: string, args: string[], input?: Buffer) =>
  execFileSync('git', args, { cwd: dir, input, encoding: 'utf8', maxBuffer: 1 << 26 });

/** Documents of every size a write meets: empty, tiny (stored), small, past one stored block, random. */
function bodies(): Buffer[] {
  return [
    Buffer.alloc(0),
    Buffer.from('{}\n'),
    Buffer.from(JSON.stringify({ schema: 'nyl.checkpoint/v1', name: 'u1', outputs: { a: 'b' } }, null, 2)),
    Buffer.from('x'.repeat(70_000)),
    randomBytes(65_537),
    ...Array.from({ length: 300 }, (_, i) => Buffer.from(`unit ${i}\n${'line\n'.repeat(i % 40)}`)),
  ];
}

async function writeDocuments(dir: string): Promise<{ repo: GitRepo; commit: string; files: Map<string, Buffer> }> {
  const repo = await GitRepo.open(dir);
  opened.push(repo);
  const files = new Map(bodies().map((b, i) => [`units/u${i}/doc.json`, b]));
  const batch = repo.batch();
  const tree = batch.tree(files);
  const commit = batch.commit({ tree, parents: [], author: { name: 'n', email: 'n@x' }, message: 'nyl: test\n' });
  await batch.flush();
  return { repo, commit, files };
}

const packsOf = (dir: string) =>
  readdirSync(join(dir, '.git', 'objects', 'pack'))
    .filter((f) => f.endsWith('.pack'))
    .map((f) => join(dir, '.git', 'objects', 'pack', f));

describe.skipIf(!crc32)('packs written by nyl itself', () => {
  for (const format of ['sha1', 'sha256'] as const)
    it(`git reads them as its own (${format})`, async () => {
      const dir = init(format);
      const before = gitStats.commands.length;
      const { commit, files } = await writeDocuments(dir);
      expect(gitStats.commands.slice(before).some((c) => c.startsWith('index-pack'))).toBe(false);
      const [pack] = packsOf(dir);
      expect(packsOf(dir)).toHaveLength(1);
      // The same pack indexed by git: the very same index.
      const theirs = join(dir, 'theirs.idx');
      git(dir, ['index-pack', '-o', theirs, pack as string]);
      expect(readFileSync((pack as string).replace(/\.pack$/, '.idx')).equals(readFileSync(theirs))).toBe(true);
      git(dir, ['verify-pack', (pack as string).replace(/\.pack$/, '.idx')]);
      git(dir, ['update-ref', 'refs/nyl/test', commit]);
      expect(git(dir, ['fsck', '--strict', '--no-dangling'])).toBe('');
      const out = execFileSync('git', ['cat-file', '--batch'], {
        cwd: dir,
        input: [...files.keys()].map((p) => `${commit}:${p}\n`).join(''),
        maxBuffer: 1 << 26,
      });
      let at = 0;
      for (const [path, body] of files) {
        const nl = out.indexOf(10, at);
        const size = Number(out.toString('latin1', at, nl).split(' ')[2]);
        expect(out.subarray(nl + 1, nl + 1 + size).equals(body), path).toBe(true);
        at = nl + 1 + size + 1;
      }
      // Read-only, as git makes them; no temporary file left behind.
      expect(statSync(pack as string).mode & 0o222).toBe(0);
      expect(readdirSync(join(dir, '.git', 'objects', 'pack')).filter((f) => f.startsWith('tmp_'))).toEqual([]);
    });

  it('a write that adds to a repository leaves every earlier pack readable', async () => {
    const dir = init('sha1');
    await writeDocuments(dir);
    const repo = await GitRepo.open(dir);
    opened.push(repo);
    const batch = repo.batch();
    const tree = batch.tree(new Map([['later.json', Buffer.from('{"later":true}\n')]]));
    const commit = batch.commit({ tree, parents: [], author: { name: 'n', email: 'n@x' }, message: 'later\n' });
    await batch.flush();
    expect(packsOf(dir)).toHaveLength(2);
    expect(git(dir, ['cat-file', '-p', `${commit}:later.json`])).toBe('{"later":true}\n');
    expect(git(dir, ['count-objects', '-v'])).toMatch(/^garbage: 0$/m);
  });

  it('an empty blob and an empty tree, their entries straight from packEntryData: the index git makes', () => {
    const dir = init('sha1');
    const objects = [
      makeObject('sha1', 'blob', Buffer.alloc(0)),
      makeObject('sha1', 'tree', serializeTree([])),
      makeObject('sha1', 'blob', Buffer.from('after the empty ones\n')),
    ];
    const packDir = join(dir, '.git', 'objects', 'pack');
    expect(writePackFiles(packDir, 'sha1', buildPack('sha1', objects, undefined, crc32))).toBe(true);
    const [pack] = packsOf(dir);
    git(dir, ['index-pack', '-o', join(dir, 'theirs.idx'), pack as string]);
    expect(
      readFileSync((pack as string).replace(/\.pack$/, '.idx')).equals(readFileSync(join(dir, 'theirs.idx'))),
    ).toBe(true);
    git(dir, ['fsck', '--full', '--strict']);
  });

  it('offsets past 2 GiB go to the table of large offsets', () => {
    const oid = (c: string) => c.repeat(40);
    const idx = packIndex(
      'sha1',
      [
        { oid: oid('b'), offset: 12, crc: 7 },
        { oid: oid('a'), offset: 2 ** 31 + 5, crc: 9 },
      ],
      Buffer.alloc(20, 1),
    );
    const n = 2;
    const offAt = 8 + 1024 + n * 20 + n * 4;
    // Sorted: aaaa… first, its offset in the large table (entry 0), bbbb… at 12.
    expect(idx.readUInt32BE(8 + 0xaa * 4)).toBe(1);
    expect(idx.readUInt32BE(8 + 0xbb * 4)).toBe(2);
    expect(idx.readUInt32BE(offAt)).toBe(0x80000000);
    expect(idx.readUInt32BE(offAt + 4)).toBe(12);
    expect(idx.readBigUInt64BE(offAt + 8)).toBe(BigInt(2 ** 31 + 5));
    expect(idx.readUInt32BE(8 + 1024 + n * 20)).toBe(9);
  });

  it('refuses an object twice in one index', () => {
    const o = makeObject('sha1', 'blob', Buffer.from('same'));
    const built = buildPack('sha1', [o, o], undefined, crc32);
    expect(() => packIndex('sha1', built.entries, built.hash)).toThrow(/twice in one pack/);
  });
});

describe('where git places packs itself', () => {
  it('an object directory of its own, a shared repository: nyl leaves it to git', () => {
    const gitDir = join(init('sha1'), '.git');
    expect(packDirOf(gitDir, '', { GIT_OBJECT_DIRECTORY: '/elsewhere' })).toBeUndefined();
    const own = crc32 ? join(gitDir, 'objects', 'pack') : undefined;
    for (const unshared of ['', 'umask', 'false', 'FALSE', 'no', 'off', '0'])
      expect(packDirOf(gitDir, unshared, {})).toBe(own);
    for (const shared of ['group', 'true', 'all', 'world', 'everybody', '0660', '1'])
      expect(packDirOf(gitDir, shared, {})).toBeUndefined();
  });

  for (const where of ['the repository’s config', 'the environment (git -c)'] as const)
    it(`core.sharedRepository set in ${where}: index-pack writes the pack`, async () => {
      const dir = init('sha1');
      const saved = { ...process.env };
      if (where === 'the repository’s config') git(dir, ['config', 'core.sharedRepository', 'group']);
      else
        Object.assign(process.env, {
          GIT_CONFIG_COUNT: '1',
          GIT_CONFIG_KEY_0: 'core.sharedRepository',
          GIT_CONFIG_VALUE_0: 'group',
        });
      try {
        const before = gitStats.commands.length;
        const { commit } = await writeDocuments(dir);
        expect(gitStats.commands.slice(before).filter((c) => c.startsWith('index-pack'))).toHaveLength(1);
        git(dir, ['update-ref', 'refs/nyl/test', commit]);
        expect(git(dir, ['fsck', '--strict', '--no-dangling'])).toBe('');
      } finally {
        for (const k of ['GIT_CONFIG_COUNT', 'GIT_CONFIG_KEY_0', 'GIT_CONFIG_VALUE_0'])
          if (!(k in saved)) delete process.env[k];
      }
    });
});
