/**
 * The derived cache (src/core/git/derived-cache.ts): what nyl parses from objects is kept in the
 * clone, keyed by object ids, and a command that finds it reads the same state it would have read
 * from the objects. A broken entry is a miss, an unreadable document is never kept, and a clone
 * keeps a bounded number of entries.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { type CachedDocument, parseConfig } from '../src/core/config/load.js';
import { DerivedCache, jsonExact } from '../src/core/git/derived-cache.js';
import { command, commitFiles, ENV_DEV, git, makeRepo, nyl, nylJson, parseTable } from './helpers/repo.js';

const LOCAL = ['-e', 'dev', '--local'];
const cacheDir = (dir: string) => join(dir, '.git', 'nyl', 'cache');
const entries = (dir: string, kind?: string) =>
  existsSync(cacheDir(dir)) ? readdirSync(cacheDir(dir)).filter((f) => !kind || f.startsWith(`${kind}-`)) : [];

interface StatusJson {
  rows: { unit: string; result: string; detail: string; lastRun?: string }[];
  problems: { code: string }[];
}

describe('the derived cache, from the outside', () => {
  it('a second status reads the state the first one read from objects; a change of state misses', async () => {
    const dir = makeRepo({ 'nyl.yaml': ENV_DEV + command('a', 'echo one') + command('b', 'true', { needs: ['a'] }) });
    expect((await nyl(dir, ['reconcile', ...LOCAL])).code).toBe(0);
    rmSync(cacheDir(dir), { recursive: true, force: true });
    const uncached = await nylJson<StatusJson>(dir, ['status', ...LOCAL], { NYL_CACHE: '0' });
    expect(entries(dir)).toEqual([]);
    const first = await nylJson<StatusJson>(dir, ['status', ...LOCAL]);
    expect(entries(dir, 'config')).toHaveLength(1);
    expect(entries(dir, 'observed')).toHaveLength(1);
    const second = await nylJson<StatusJson>(dir, ['status', ...LOCAL]);
    expect(second.json).toEqual(uncached.json);
    expect(first.json).toEqual(uncached.json);

    // A new configuration and a new observed tree: both miss, and the new state is what is shown.
    commitFiles(dir, { 'nyl.yaml': ENV_DEV + command('a', 'echo two') + command('b', 'true', { needs: ['a'] }) });
    const pending = await nylJson<StatusJson>(dir, ['status', ...LOCAL]);
    expect(pending.json.rows.map((r) => [r.unit, r.result])).toEqual([
      ['a', 'pending'],
      ['b', 'current'],
    ]);
    expect((await nyl(dir, ['reconcile', ...LOCAL])).code).toBe(0);
    const after = await nylJson<StatusJson>(dir, ['status', ...LOCAL]);
    expect(after.json.rows.map((r) => [r.unit, r.result])).toEqual([
      ['a', 'current'],
      ['b', 'current'],
    ]);
    expect(after.json).toEqual((await nylJson<StatusJson>(dir, ['status', ...LOCAL], { NYL_CACHE: '0' })).json);
  });

  it('an entry that cannot be read is a miss, never an error', async () => {
    const dir = makeRepo({ 'nyl.yaml': ENV_DEV + command('a', 'true') });
    expect((await nyl(dir, ['reconcile', ...LOCAL])).code).toBe(0);
    const good = await nyl(dir, ['status', ...LOCAL]);
    for (const f of entries(dir)) writeFileSync(join(cacheDir(dir), f), '{"key": tru');
    const r = await nyl(dir, ['status', ...LOCAL]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toBe(good.stdout);
    // and it was written again, whole
    for (const f of entries(dir)) expect(() => JSON.parse(readFileSync(join(cacheDir(dir), f), 'utf8'))).not.toThrow();
  });

  it('an unreadable document is never kept: it is reported every time until it is repaired', async () => {
    const dir = makeRepo({ 'nyl.yaml': ENV_DEV + command('a', 'true') + command('b', 'true') });
    expect((await nyl(dir, ['reconcile', ...LOCAL])).code).toBe(0);
    const ref = 'refs/nyl/dev/observed';
    // Rewrite units/a.json on the observed ref as something that is not JSON.
    const bad = execGit(dir, ['hash-object', '-w', '--stdin'], '{"schema": bad');
    const tree = git(dir, 'rev-parse', `${ref}^{tree}`).trim();
    git(dir, 'read-tree', '--index-output=.git/nyl-tmp-index', tree);
    const env = { GIT_INDEX_FILE: join(dir, '.git', 'nyl-tmp-index') };
    execGit(dir, ['update-index', '--cacheinfo', `100644,${bad},units/a.json`], '', env);
    const newTree = execGit(dir, ['write-tree'], '', env);
    const commit = execGit(dir, ['commit-tree', newTree, '-p', ref, '-m', 'break a'], '');
    git(dir, 'update-ref', ref, commit);
    for (let i = 0; i < 2; i++) {
      const r = await nyl(dir, ['status', ...LOCAL]);
      expect(r.code).toBe(1);
      expect(r.stdout + r.stderr).toContain('NYL-STATE-UNREADABLE (refs/nyl/dev/observed:units/a.json)');
    }
    expect(entries(dir, 'observed')).toHaveLength(0);
  });

  it('keeps at most 8 entries of a kind, the newest', async () => {
    const dir = makeRepo({ 'nyl.yaml': `${ENV_DEV + command('a', 'echo 0')}` });
    for (let i = 1; i <= 10; i++) {
      commitFiles(dir, { 'nyl.yaml': ENV_DEV + command('a', `echo ${i}`) });
      expect((await nyl(dir, ['plan', ...LOCAL])).code).toBe(0);
    }
    expect(entries(dir, 'config')).toHaveLength(8);
    const table = parseTable((await nyl(dir, ['plan', ...LOCAL])).stdout);
    expect(table.map((r) => r.UNIT)).toEqual(['a']);
  });
});

describe('the derived cache, inside', () => {
  it('gives back what was set under the same key and build, and nothing for another key', () => {
    const dir = mkdtempSync(join(tmpdir(), 'nyl-cache-'));
    const c = DerivedCache.at(dir);
    expect(c.get('x', 'k')).toBeUndefined();
    c.set('x', 'k', { a: [1, 'b'] });
    expect(c.get('x', 'k')).toEqual({ a: [1, 'b'] });
    expect(DerivedCache.at(dir).get('x', 'k')).toEqual({ a: [1, 'b'] });
    expect(c.get('x', 'other')).toBeUndefined();
    expect(c.get('y', 'k')).toBeUndefined();
    rmSync(dir, { recursive: true, force: true });
  });

  it('keeps only values JSON gives back as they were', () => {
    expect(jsonExact({ a: [1, 'x', null, true, { b: 2.5 }] })).toBe(true);
    for (const v of [Number.NaN, Infinity, -0, { a: Number.NaN }, [undefined], JSON.parse('{"__proto__": 1}')])
      expect(jsonExact(v)).toBe(false);
  });

  it('configuration read from kept documents is the configuration read from the files', () => {
    const files = [
      {
        file: 'nyl.yaml',
        text: `${ENV_DEV}---\n${command('b', 'echo ${{ units.a.outputs.x }}', { needs: ['a'], timeout: '5m' })}---\n${command('a', 'true', { retries: { limit: 2, backoff: '1s' } })}`,
      },
    ];
    const kept: Record<string, CachedDocument[]> = {};
    const fresh = parseConfig('0'.repeat(40), files, { onValidated: (f, docs) => (kept[f] = docs) });
    expect(kept['nyl.yaml']).toHaveLength(3);
    const cached = parseConfig(
      '0'.repeat(40),
      files.map((f) => ({ ...f, cached: JSON.parse(JSON.stringify(kept[f.file])) })),
    );
    const view = (c: typeof fresh) =>
      JSON.stringify([...c.units].map(([n, u]) => [n, u.doc, u.at, u.refs, u.deps, u.lineAt(['spec', 'run'])]));
    expect(view(cached)).toBe(view(fresh));
    expect(JSON.stringify([...cached.environments].map(([n, e]) => [n, e.doc, e.at]))).toBe(
      JSON.stringify([...fresh.environments].map(([n, e]) => [n, e.doc, e.at])),
    );
  });

  it('a configuration file with a problem is not kept', () => {
    const kept: string[] = [];
    expect(() =>
      parseConfig('0'.repeat(40), [{ file: 'nyl.yaml', text: `${ENV_DEV}---\nkind: Command\nname: a\nspec: {}\n` }], {
        onValidated: (f) => kept.push(f),
      }),
    ).toThrow();
    expect(kept).toEqual([]);
  });
});

function execGit(cwd: string, args: string[], input: string, env: Record<string, string> = {}): string {
  return execFileSync('git', args, {
    cwd,
    input,
    encoding: 'utf8',
    env: {
      ...process.env,
      GIT_AUTHOR_NAME: 't',
      GIT_AUTHOR_EMAIL: 't@x',
      GIT_COMMITTER_NAME: 't',
      GIT_COMMITTER_EMAIL: 't@x',
      ...env,
    },
  }).trim();
}
