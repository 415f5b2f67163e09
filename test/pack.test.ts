/**
 * The packs nyl hands `git unpack-objects` (src/core/git/objects.ts): real git reads every object
 * back byte for byte, empty, small and larger than one stored deflate block (64 KiB) alike.
 */
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { buildPack, makeObject } from '../src/core/git/objects.js';
import { tempDir } from './helpers/repo.js';

describe('packs for unpack-objects', () => {
  it('git stores every object as given', () => {
    const dir = tempDir('nyl-pack-');
    execFileSync('git', ['init', '-q', dir]);
    const bodies = [
      Buffer.alloc(0),
      Buffer.from('hello\n'),
      randomBytes(65_535),
      randomBytes(65_536),
      randomBytes(200_001),
    ];
    const objects = bodies.map((b) => makeObject('sha1', 'blob', b));
    execFileSync('git', ['unpack-objects', '-q'], { cwd: dir, input: buildPack('sha1', objects).pack });
    for (const [i, o] of objects.entries()) {
      const back = execFileSync('git', ['cat-file', 'blob', o.oid], { cwd: dir, maxBuffer: 1 << 24 });
      expect(back.equals(bodies[i] as Buffer), `object ${i} (${bodies[i]?.length} bytes)`).toBe(true);
    }
    expect(execFileSync('git', ['fsck', '--strict', '--no-dangling'], { cwd: dir, encoding: 'utf8' })).toBe('');
  });
});
