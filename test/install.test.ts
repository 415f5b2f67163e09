/**
 * The CLI as a user gets it: `npm pack`, then `npm install -g` of the tarball into a throwaway
 * prefix with no network and an empty npm cache (the bundles in dist/ hold every library, so there
 * is nothing to fetch), then `nyl` run from its bin directory in a repository elsewhere.
 */
import { type SpawnSyncReturns, spawnSync } from 'node:child_process';
import { lstatSync, mkdirSync, readdirSync, readFileSync, readlinkSync, statSync, writeFileSync } from 'node:fs';
import { builtinModules } from 'node:module';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';
import { beforeAll, describe, expect, it } from 'vitest';
import { command, ENV_DEV, GIT_ENV, git, makeRepo, tempDir } from './helpers/repo.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const VERSION = (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string }).version;

const tmp = tempDir('nyl-install-');
const prefix = join(tmp, 'prefix');
const installed = join(prefix, 'lib', 'node_modules', 'nyl');
let packed: string[] = [];

/** npm with no config but ours: offline, an empty cache, a registry nothing listens on. */
function npm(args: string[], cwd: string): SpawnSyncReturns<string> {
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env)) if (v !== undefined && !/^npm_/i.test(k)) env[k] = v; // `npm test` exports its own config
  writeFileSync(join(tmp, 'user-npmrc'), '');
  writeFileSync(join(tmp, 'global-npmrc'), '');
  Object.assign(env, {
    npm_config_offline: 'true',
    npm_config_cache: join(tmp, 'cache'),
    npm_config_registry: 'http://127.0.0.1:9/',
    npm_config_userconfig: join(tmp, 'user-npmrc'),
    npm_config_globalconfig: join(tmp, 'global-npmrc'),
    npm_config_update_notifier: 'false',
  });
  const r = spawnSync('npm', args, { cwd, env, encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`npm ${args.join(' ')} exited ${r.status}:\n${r.stdout}\n${r.stderr}`);
  return r;
}

/** The installed `nyl`, found on PATH as a user's shell finds it (its shebang runs it). */
function nylInstalled(cwd: string, args: string[]) {
  const env = { ...process.env, ...GIT_ENV, NYL_PROGRESS: '0', PATH: `${join(prefix, 'bin')}:${process.env.PATH}` };
  return spawnSync('nyl', args, { cwd, env, encoding: 'utf8' });
}

function filesUnder(dir: string): string[] {
  return readdirSync(dir, { recursive: true })
    .map(String)
    .filter((f) => statSync(join(dir, f)).isFile())
    .sort();
}

beforeAll(() => {
  mkdirSync(join(tmp, 'pack'));
  const pack = npm(['pack', '--json', '--pack-destination', join(tmp, 'pack')], ROOT);
  const [info] = JSON.parse(pack.stdout) as { filename: string; files: { path: string }[] }[];
  packed = info!.files.map((f) => f.path).sort();
  const tgz = join(tmp, 'pack', info!.filename);
  npm(['install', '-g', '--prefix', prefix, tgz, '--offline', '--no-audit', '--no-fund'], tmp);
}, 120_000);

describe('the packed CLI', () => {
  it('holds what the CLI runs and its license, nothing else', () => {
    expect(packed).toEqual(
      expect.arrayContaining(['LICENSE', 'README.md', 'package.json', 'dist/cli.js', 'dist/cli.cjs']),
    );
    for (const f of packed)
      expect(f).toMatch(/^(LICENSE|README\.md|package\.json|dist\/(cli\.js|cli\.cjs|yaml\.cjs|package\.json))$/);
    const manifest = JSON.parse(readFileSync(join(installed, 'package.json'), 'utf8'));
    expect(manifest.dependencies).toBeUndefined();
    expect(manifest.private).toBeUndefined();
    expect(manifest.bin).toEqual({ nyl: 'dist/cli.js' });
  });

  it('installs offline from an empty cache with no dependency, small, its bin executable', () => {
    // Only the package itself: no node_modules in it, nothing beside it.
    expect(readdirSync(join(prefix, 'lib', 'node_modules'))).toEqual(['nyl']);
    const files = filesUnder(installed);
    expect(files.filter((f) => f.includes('node_modules'))).toEqual([]);
    // 1.5 MB installed (it was 36 MB when the runtime libraries were dependencies installed again
    // next to the bundles that already hold them); 5 MB fails if a dependency comes back.
    const bytes = files.reduce((n, f) => n + statSync(join(installed, f)).size, 0);
    expect(bytes).toBeLessThan(5_000_000);
    expect(readlinkSync(join(prefix, 'bin', 'nyl'))).toMatch(/nyl[\\/]dist[\\/]cli\.js$/);
    expect(lstatSync(join(installed, 'dist', 'cli.js')).mode & 0o111).toBe(0o111);
    expect(readFileSync(join(installed, 'dist', 'cli.js'), 'utf8').split('\n')[0]).toBe('#!/usr/bin/env node');
  });

  it('imports only Node built-ins from its bundles', async () => {
    // esbuild follows every static import, literal import() and require() of the installed bundles
    // and leaves a bare specifier external: each must be a built-in, or it needs a node_modules.
    const entries = ['cli.js', 'cli.cjs', 'yaml.cjs'].map((f) => join(installed, 'dist', f));
    const r = await build({
      entryPoints: entries,
      bundle: true,
      write: false,
      splitting: true,
      format: 'esm',
      platform: 'node',
      packages: 'external',
      metafile: true,
      outdir: join(tmp, 'scan'),
      entryNames: '[name]-[hash]', // cli.js and cli.cjs
      logLevel: 'silent',
    });
    expect(Object.keys(r.metafile.inputs).length).toBe(3); // the CLI loads nothing else of its own
    const bare = Object.values(r.metafile.inputs).flatMap((i) =>
      i.imports.filter((m) => m.external).map((m) => m.path),
    );
    expect(bare.length).toBeGreaterThan(0);
    expect([...new Set(bare)].filter((p) => !p.startsWith('node:') && !builtinModules.includes(p))).toEqual([]);
  });

  it('says its version from any directory', () => {
    const r = nylInstalled(tempDir('nyl-anywhere-'), ['--version']);
    expect(r.stderr).toBe('');
    expect(r.stdout.trim()).toBe(`nyl ${VERSION}`);
    expect(r.status).toBe(0);
  });

  it('reconciles a Command unit in a fresh repository elsewhere, --local', () => {
    const repo = makeRepo({
      'nyl.yaml': `${ENV_DEV}${command('hello', 'echo "greeting=hello from $NYL_ENVIRONMENT" >> "$NYL_OUTPUT"', { spec: { idempotent: true } })}`,
    });
    expect(relative(ROOT, repo).startsWith('..')).toBe(true);
    const r = nylInstalled(repo, ['reconcile', '-e', 'dev', '--local', '--json']);
    expect(r.status, r.stderr).toBe(0);
    const report = JSON.parse(r.stdout);
    expect(report.result).toBe('success');
    expect(report.rows).toEqual([expect.objectContaining({ unit: 'hello', result: 'executed' })]);
    const shown = JSON.parse(
      nylInstalled(repo, ['state', 'show', '-e', 'dev', '--local', '--unit', 'hello', '--json']).stdout,
    );
    expect(shown.facts.units.hello.observed.receipt.outputs).toEqual({ greeting: 'hello from dev' });
    expect(git(repo, 'for-each-ref', '--format=%(refname)', 'refs/nyl/dev/observed')).toBe('refs/nyl/dev/observed');
  });

  it('starts a repository with `nyl init` and plans dev, with no clone of Nyl in reach', () => {
    // The workflows init writes are embedded in the bundle (examples/ is not in the package).
    const repo = makeRepo({ 'README.md': '# app\n' });
    const init = nylInstalled(repo, ['init']);
    expect(init.status, init.stderr).toBe(0);
    for (const f of ['nyl.yaml', ...['plan', 'deploy', 'verify', 'recover'].map((w) => `.github/workflows/${w}.yml`)]) {
      expect(init.stdout).toContain(`wrote ${f}`);
      expect(readFileSync(join(repo, f), 'utf8').length).toBeGreaterThan(0);
    }
    git(repo, 'add', '-A');
    git(repo, 'commit', '-q', '-m', 'Deploy with Nyl');
    const plan = nylInstalled(repo, ['plan', '-e', 'dev', '--local', '--json']);
    expect(plan.status, plan.stderr).toBe(0);
    const report = JSON.parse(plan.stdout);
    expect(report.result).toBe('success');
    expect(report.rows.length).toBeGreaterThan(0);
  });
});
