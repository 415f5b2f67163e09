/**
 * What each built action step loads before it does anything: the files its entry imports
 * statically, parsed and evaluated at every start of a step. The GitHub API client and its HTTP
 * stack (undici, most of the actions' code) load only when a step calls the API; `@actions/core`'s
 * OIDC client, the other way undici came in, is left out by the build (scripts/build.mjs).
 */
import { readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

const DIST = resolve(__dirname, '../dist');
const ACTIONS = ['reconcile', 'plan', 'recover', 'verify', 'lease-break', 'site', 'main', 'post'];
const STATIC = /(?:from|import)\s*"(\.\.?\/[^"]+)"/g;

/** The files `file` loads with it: itself and what it imports statically, transitively. */
function loadedWith(file: string, seen = new Map<string, string>()): Map<string, string> {
  if (seen.has(file)) return seen;
  const text = readFileSync(file, 'utf8');
  seen.set(file, text);
  for (const m of text.matchAll(STATIC)) loadedWith(join(dirname(file), m[1] as string), seen);
  return seen;
}

describe('the action bundles', () => {
  it.each(ACTIONS)('%s loads no HTTP stack at start', (action) => {
    const files = loadedWith(join(DIST, action, 'index.js'));
    expect(files.size).toBeGreaterThan(1);
    // Without the OIDC stand-in, @actions/core's import of @actions/http-client brings undici here.
    expect([...files].filter(([, text]) => text.includes('undici')).map(([f]) => f)).toEqual([]);
  });

  it('a step that calls the API loads the client with its HTTP stack', () => {
    const lazy = new Set<string>();
    for (const action of ACTIONS)
      for (const [file, text] of loadedWith(join(DIST, action, 'index.js')))
        for (const m of text.matchAll(/import\("(\.\.?\/[^"]+)"\)/g)) lazy.add(join(dirname(file), m[1] as string));
    const withUndici = [...lazy].filter((f) => [...loadedWith(f).values()].some((t) => t.includes('undici')));
    expect(withUndici.length).toBeGreaterThan(0);
  });
});
