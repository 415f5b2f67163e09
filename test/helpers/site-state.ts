/**
 * Real state for the `nyl site` tests, made with the built CLI: a succeeded run on dev, then a
 * failed unit and an uncertain one (timed out), a held unit, and staging waiting at its promotion
 * gate; then the site built into a fresh folder. Shared by site.test.ts and site-browser.test.ts.
 */
import { join } from 'node:path';
import { expect } from 'vitest';
import { command, commitFiles, makeRepo, nyl, nylJson, tempDir } from './repo.js';

export const SECRET = 'DEPLOY_TOKEN';
export const VALUE = 's3cr3tvalue99';
export const ENV = { [SECRET]: VALUE };
export const LOCAL = ['--local'];

const ENVS =
  'kind: Environment\nname: dev\nurl: https://${{ units.web.outputs.host }}/app\n' +
  '---\nkind: Environment\nname: staging\npromotion: {after: [dev]}\n';
const WEB = command(
  'web',
  `echo "host=web.example" >> "$NYL_OUTPUT"; echo "token is $${SECRET}"; echo "tok=$${SECRET}" >> "$NYL_OUTPUT"`,
);
const KEEP = command('keep', 'echo keep-ran');

export interface SiteState {
  /** The repository. */
  dir: string;
  /** The site's folder. */
  out: string;
  /** dev's runs, as `nyl runs` lists them. */
  devRuns: { run: string; state: string }[];
}

/** Makes the state and builds the site from it (asserting each step's exit code). */
export async function makeSiteState(): Promise<SiteState> {
  // 1. a succeeded run on dev
  const dir = makeRepo({ 'nyl.yaml': ENVS + WEB + KEEP });
  const first = await nyl(dir, ['reconcile', '-e', 'dev', ...LOCAL], ENV);
  expect(first.code, first.stdout + first.stderr).toBe(0);
  // 2. a failed unit and an uncertain one (timed out, not idempotent, no inspect)
  commitFiles(dir, {
    'nyl.yaml':
      ENVS + WEB + KEEP + command('bad', 'echo failing-now; exit 3') + command('slow', 'sleep 5', { timeout: '1s' }),
  });
  const second = await nyl(dir, ['reconcile', '-e', 'dev', ...LOCAL], ENV);
  expect(second.code, second.stdout + second.stderr).toBe(4);
  // 3. a held unit
  const held = await nyl(dir, ['hold', '-e', 'dev', '--unit', 'keep', '--reason', 'maintenance', ...LOCAL], ENV);
  expect(held.code, held.stdout + held.stderr).toBe(0);
  // 4. staging waits at its promotion gate
  const gated = await nyl(dir, ['reconcile', '-e', 'staging', ...LOCAL], ENV);
  expect(gated.code, gated.stdout + gated.stderr).toBe(2);
  const runs = await nylJson<{ facts: { runs: { run: string; state: string }[] } }>(dir, [
    'runs',
    '-e',
    'dev',
    ...LOCAL,
  ]);
  const out = join(tempDir('nyl-site-'), 'site');
  const site = await nyl(dir, ['site', '--out', out, ...LOCAL], ENV);
  expect(site.code, site.stdout + site.stderr).toBe(0);
  expect(site.stdout).toMatch(/^site: \d+ pages written\n {2}folder: /);
  return { dir, out, devRuns: runs.json.facts.runs };
}
