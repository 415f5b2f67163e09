/**
 * What the commit holds is what gets deployed: every unit is keyed by the files it uses, read from
 * the source commit (a Terraform module and the local modules it calls, its var files; a Command's
 * `spec.files` or the script its lines start with). Real git repositories and the built CLI; the
 * real `terraform` where it is on PATH; the previous release's dist/ from this repository's history
 * for the upgrade.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, symlinkSync, unlinkSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { scriptPaths, staticPrefix } from '../src/core/files/rules.js';
import { localSources, toolMade } from '../src/core/files/tf-calls.js';
import {
  CLI,
  commitFiles,
  ENV_DEV,
  GIT_ENV,
  git,
  makeRepo,
  nyl,
  nylJson,
  parseTable,
  tempDir,
} from './helpers/repo.js';

// biome-ignore lint/suspicious/noExplicitAny: JSON documents read back from the refs and reports
type Json = any;

const LOCAL = ['-e', 'dev', '--local'];
const out = (r: { stdout: string; stderr: string }) => `${r.stdout}\n${r.stderr}`;
const results = (stdout: string) => Object.fromEntries(parseTable(stdout).map((r) => [r.UNIT, r.RESULT]));
const details = (stdout: string) => Object.fromEntries(parseTable(stdout).map((r) => [r.UNIT, r.DETAIL]));
const show = (dir: string, spec: string): Json => JSON.parse(git(dir, 'show', spec));

/** A script that counts its runs in `$COUNTS/<name>` (outside the repository). */
const counter = (name: string) => `#!/bin/bash\necho run >> "$COUNTS/${name}"\n`;
const runsOf = (counts: string, name: string) =>
  existsSync(join(counts, name)) ? readFileSync(join(counts, name), 'utf8').split('\n').filter(Boolean).length : 0;

describe('what a unit key covers', () => {
  it('a script line: the repository file it starts with (a path, or an interpreter’s script), never a PATH command', () => {
    expect(scriptPaths('./scripts/migrate.sh "${{ units.db.outputs.url }}"')).toEqual(['scripts/migrate.sh']);
    expect(scriptPaths('bash deploy/run.sh --fast')).toEqual(['deploy/run.sh']);
    expect(scriptPaths('python3 -u tools/seed.py')).toEqual(['tools/seed.py']);
    expect(scriptPaths('FOO=1 ./a/b.sh x')).toEqual(['a/b.sh']);
    expect(scriptPaths('set -e\n# ./not/this.sh\n./one.sh \\\n  ./argument.sh\ncd sub && ./two.sh\n./one.sh')).toEqual([
      'one.sh',
    ]);
    expect(scriptPaths('echo hi')).toEqual([]);
    expect(scriptPaths('make deploy')).toEqual([]);
    expect(scriptPaths('$HOME/x.sh')).toEqual([]);
    expect(scriptPaths('/usr/bin/env true')).toEqual([]);
    expect(scriptPaths('../outside.sh')).toEqual([]);
    // An item's value is known per instance (kept, to be filled in); an output is not.
    expect(scriptPaths('./regions/${{ each.key }}.sh --all')).toEqual(['regions/${{each.key}}.sh']);
    expect(scriptPaths('./regions/${{ units.a.outputs.b }}.sh')).toEqual([]);
  });

  it('a module’s local calls: `./` and `../` sources, in HCL and JSON; registry and remote sources are not files', () => {
    const hcl = [
      'module "net" {',
      '  source = "../modules/net"',
      '}',
      'module "vpc" {',
      '  source  = "terraform-aws-modules/vpc/aws"',
      '  version = "5.0.0"',
      '}',
      'module "here" {',
      '  source = "./sub"',
      '}',
      'terraform {',
      '  required_providers {',
      '    aws = { source = "hashicorp/aws" }',
      '  }',
      '}',
    ].join('\n');
    expect(localSources('main.tf', hcl)).toEqual(['../modules/net', './sub']);
    // One-line blocks, as `terraform fmt` keeps them.
    expect(localSources('x.tf', 'module "o" { source = "../modules/oneliner" }\nmodule "p" {source="./p"}')).toEqual([
      '../modules/oneliner',
      './p',
    ]);
    const json = JSON.stringify({ module: { a: { source: './a' }, b: { source: 'git::https://x/y.git' } } });
    expect(localSources('main.tf.json', json)).toEqual(['./a']);
    expect(localSources('broken.tf.json', '{')).toEqual([]);
  });

  it('what the tools make in a module folder is left out; a glob is read from its fixed folder', () => {
    for (const p of [
      '.terraform/modules/x.json',
      'terraform.tfstate',
      'terraform.tfstate.backup',
      'x/.terraform.tfstate.lock.info',
      'terraform.tfstate.d/prod/terraform.tfstate',
    ])
      expect(toolMade(p), p).toBe(true);
    for (const p of ['main.tf', '.terraform.lock.hcl', 'templates/a.tpl']) expect(toolMade(p), p).toBe(false);
    expect(staticPrefix({ kind: 'glob', pattern: 'lib/**/*.sh', field: '' })).toBe('lib');
    expect(staticPrefix({ kind: 'glob', pattern: '**/*.sh', field: '' })).toBe('');
    expect(staticPrefix({ kind: 'module', pattern: 'envs/${{ each.key }}', field: '' })).toBe('envs');
  });
});

/** A repository of Command units: a script each, a glob of files, and one that uses no file. */
function commandRepo() {
  const counts = tempDir('nyl-counts-');
  const dir = makeRepo({
    'nyl.yaml': [
      ENV_DEV,
      '---\nkind: Command\nname: a\nspec:\n  run: ./scripts/a.sh\n',
      '---\nkind: Command\nname: b\nspec:\n  run: bash scripts/b.sh --quiet\n  idempotent: true\n',
      '---\nkind: Command\nname: c\nspec:\n  run: echo run >> "$COUNTS/c"\n  files: ["lib/**/*.sh", config/c.json]\n',
      '---\nkind: Command\nname: d\nspec:\n  run: echo run >> "$COUNTS/d"\n',
    ].join(''),
    'scripts/a.sh': counter('a'),
    'scripts/b.sh': counter('b'),
    'lib/x/helper.sh': 'true\n',
    'lib/readme.txt': 'not a script\n',
    'config/c.json': '{"v":1}\n',
    'README.md': '# app\n',
  });
  const env = { COUNTS: counts };
  const runs = () => Object.fromEntries(['a', 'b', 'c', 'd'].map((u) => [u, runsOf(counts, u)]));
  return { dir, env, runs };
}

describe('Command units keyed by their files', () => {
  it('a changed script executes its unit only, saying which files changed; a change to any other file executes nothing', async () => {
    const { dir, env, runs } = commandRepo();
    const first = await nyl(dir, ['reconcile', ...LOCAL], env);
    expect(first.code, out(first)).toBe(0);
    expect(runs()).toEqual({ a: 1, b: 1, c: 1, d: 1 });
    // The receipt names the files it applied, by their ids in the source commit.
    expect(show(dir, 'refs/nyl/dev/observed:units/a.json').receipt.files).toEqual({
      'scripts/a.sh': git(dir, 'rev-parse', 'HEAD:scripts/a.sh'),
    });
    expect(show(dir, 'refs/nyl/dev/observed:units/c.json').receipt.files).toEqual({
      'config/c.json': git(dir, 'rev-parse', 'HEAD:config/c.json'),
      'lib/x/helper.sh': git(dir, 'rev-parse', 'HEAD:lib/x/helper.sh'),
    });
    expect(show(dir, 'refs/nyl/dev/observed:units/d.json').receipt.files).toEqual({});

    commitFiles(dir, { 'README.md': '# app, described\n', 'lib/readme.txt': 'still not a script\n' });
    const unrelated = await nyl(dir, ['reconcile', ...LOCAL], env);
    expect(unrelated.code, out(unrelated)).toBe(0);
    expect(results(unrelated.stdout)).toEqual({ a: 'current', b: 'current', c: 'current', d: 'current' });
    expect(unrelated.stdout).not.toMatch(/^ {2}run:/m); // no run, no lease: nothing to do
    expect(runs()).toEqual({ a: 1, b: 1, c: 1, d: 1 });

    commitFiles(dir, { 'scripts/b.sh': `${counter('b')}# v2\n`, 'lib/x/y/new.sh': 'true\n' });
    const plan = await nyl(dir, ['plan', ...LOCAL], env);
    expect(plan.code, out(plan)).toBe(0);
    expect(results(plan.stdout)).toEqual({ a: 'current', b: 'execute', c: 'execute', d: 'current' });
    expect(details(plan.stdout)).toMatchObject({
      b: 'files changed: scripts/b.sh',
      c: 'files changed: lib/x/y/new.sh',
    });
    const status = await nyl(dir, ['status', ...LOCAL], env);
    expect(parseTable(status.stdout).find((r) => r.UNIT === 'b')).toMatchObject({
      STATE: 'pending',
      RECEIPT: 'outdated',
      DETAIL: 'files changed: scripts/b.sh',
    });
    const r = await nyl(dir, ['reconcile', ...LOCAL], env);
    expect(r.code, out(r)).toBe(0);
    expect(results(r.stdout)).toEqual({ a: 'current', b: 'executed', c: 'executed', d: 'current' });
    expect(runs()).toEqual({ a: 1, b: 2, c: 2, d: 1 });
  });

  it('a document and its files changed together say both; more than a few files are counted', async () => {
    const { dir, env } = commandRepo();
    expect((await nyl(dir, ['reconcile', ...LOCAL], env)).code).toBe(0);
    const files = Object.fromEntries([1, 2, 3, 4, 5, 6].map((i) => [`lib/m${i}.sh`, `true # ${i}\n`]));
    commitFiles(dir, files);
    const plan = await nyl(dir, ['plan', ...LOCAL], env);
    expect(details(plan.stdout).c).toBe('files changed: lib/m1.sh, lib/m2.sh, lib/m3.sh and 3 more');
    const yaml = readFileSync(join(dir, 'nyl.yaml'), 'utf8').replace('run: ./scripts/a.sh', 'run: ./scripts/a.sh --v2');
    commitFiles(dir, { 'nyl.yaml': yaml, 'scripts/a.sh': `${counter('a')}# v2\n` });
    expect(details((await nyl(dir, ['plan', ...LOCAL], env)).stdout).a).toBe(
      'desired document changed; files changed: scripts/a.sh',
    );
  });

  it('plan --json names each unit’s files by their ids in the source commit, and its token changes with any of them', async () => {
    const { dir, env } = commandRepo();
    expect((await nyl(dir, ['reconcile', ...LOCAL], env)).code).toBe(0);
    const before = await nylJson<Json>(dir, ['plan', ...LOCAL], env);
    const row = (j: Json, u: string) => j.json.rows.find((x: Json) => x.unit === u);
    expect(row(before, 'a').files).toEqual({ 'scripts/a.sh': git(dir, 'rev-parse', 'HEAD:scripts/a.sh') });
    expect(row(before, 'a').filesChanged).toBeUndefined();
    commitFiles(dir, { 'config/c.json': '{"v":2}\n' });
    const after = await nylJson<Json>(dir, ['plan', ...LOCAL], env);
    expect(row(after, 'c')).toMatchObject({
      result: 'execute',
      filesChanged: ['config/c.json'],
      files: { 'config/c.json': git(dir, 'rev-parse', 'HEAD:config/c.json') },
    });
    expect(after.json.facts.token).not.toBe(before.json.facts.token);
    // The reviewed token executes exactly that; once the file changes again, it is stale.
    commitFiles(dir, { 'config/c.json': '{"v":3}\n' });
    const stale = await nyl(dir, ['reconcile', ...LOCAL, '--plan', after.json.facts.token], env);
    expect(stale.code, out(stale)).toBe(2);
    expect(stale.stderr).toMatch(/^error NYL-PLAN-STALE/m);
  });

  it('an uncommitted edit is refused before anything runs, naming the files; plan warns and plans the commit; a stash lets it run', async () => {
    const { dir, env, runs } = commandRepo();
    expect((await nyl(dir, ['reconcile', ...LOCAL], env)).code).toBe(0);
    commitFiles(dir, { 'config/c.json': '{"v":2}\n' });
    writeFileSync(join(dir, 'config/c.json'), '{"v":"edited"}\n');
    writeFileSync(join(dir, 'lib/x/untracked.sh'), 'true\n');
    writeFileSync(join(dir, 'scripts/a.sh'), `${counter('a')}# edited, but a is current\n`);
    const tips = git(dir, 'for-each-ref', 'refs/nyl/');

    const r = await nyl(dir, ['reconcile', ...LOCAL], env);
    expect(r.code, out(r)).toBe(2);
    expect(r.stdout).toBe('');
    expect(r.stderr).toMatch(
      /^error NYL-FILES-UNCOMMITTED \(c\)\n {2}c uses files that differ from the source commit [0-9a-f]{12}: config\/c\.json \(modified\), lib\/x\/untracked\.sh \(not committed\);/m,
    );
    expect(r.stderr).toMatch(
      /fix: commit them \(`git add config\/c\.json lib\/x\/untracked\.sh && git commit`\) or set them aside \(`git stash --include-untracked`\)/,
    );
    expect(r.stderr).not.toMatch(/\(a\)/); // a runs nothing: its edit is nobody's business yet
    expect(runs().c).toBe(1);
    expect(git(dir, 'for-each-ref', 'refs/nyl/')).toBe(tips); // no lease taken, nothing written

    const plan = await nyl(dir, ['plan', ...LOCAL], env);
    expect(plan.code, out(plan)).toBe(0);
    expect(results(plan.stdout)).toMatchObject({ c: 'execute' });
    expect(plan.stdout).toMatch(/^warning NYL-FILES-UNCOMMITTED \(c\)\n.*this plan is of the commit/m);
    expect(plan.stdout).toMatch(/^warning NYL-FILES-UNCOMMITTED \(a\)\n.*scripts\/a\.sh \(modified\)/m);

    git(dir, 'stash', '--include-untracked');
    const after = await nyl(dir, ['reconcile', ...LOCAL], env);
    expect(after.code, out(after)).toBe(0);
    expect(results(after.stdout)).toMatchObject({ a: 'current', c: 'executed' });
  });

  it('an instance’s files come from its item; a change to one executes that instance only', async () => {
    const dir = makeRepo({
      'nyl.yaml': `${ENV_DEV}---\nkind: Command\nname: svc\nforEach: [eu, us]\nspec:\n  run: bash "regions/$NYL_EACH_KEY.sh"\n  files: ["regions/\${{ each.key }}.sh"]\n`,
      'regions/eu.sh': 'true\n',
      'regions/us.sh': 'true\n',
    });
    expect((await nyl(dir, ['reconcile', ...LOCAL])).code).toBe(0);
    commitFiles(dir, { 'regions/us.sh': 'true # v2\n' });
    const r = await nyl(dir, ['reconcile', ...LOCAL]);
    expect(r.code, out(r)).toBe(0);
    expect(results(r.stdout)).toEqual({ 'svc#eu': 'current', 'svc#us': 'executed' });
  });

  it('a script reached through a symbolic link is keyed by what it points at; an instance’s script by its item', async () => {
    const dir = makeRepo({
      'nyl.yaml': [
        ENV_DEV,
        '---\nkind: Command\nname: deploy\nspec:\n  run: ./scripts/deploy.sh\n',
        '---\nkind: Command\nname: svc\nforEach: [eu, us]\nspec:\n  run: ./regions/${{ each.key }}.sh\n',
      ].join(''),
      'tools/deploy.sh': '#!/bin/bash\ntrue\n',
      'regions/eu.sh': '#!/bin/bash\ntrue\n',
      'regions/us.sh': '#!/bin/bash\ntrue\n',
    });
    mkdirSync(join(dir, 'scripts'));
    symlinkSync('../tools/deploy.sh', join(dir, 'scripts/deploy.sh'));
    commitFiles(dir, {});
    expect((await nyl(dir, ['reconcile', ...LOCAL])).code).toBe(0);
    expect(Object.keys(show(dir, 'refs/nyl/dev/observed:units/deploy.json').receipt.files)).toEqual([
      'scripts/deploy.sh',
      'tools/deploy.sh',
    ]);
    expect(show(dir, 'refs/nyl/dev/observed:units/svc#eu.json').receipt.files).toEqual({
      'regions/eu.sh': git(dir, 'rev-parse', 'HEAD:regions/eu.sh'),
    });
    commitFiles(dir, { 'tools/deploy.sh': '#!/bin/bash\ntrue # v2\n', 'regions/eu.sh': '#!/bin/bash\ntrue # v2\n' });
    const r = await nyl(dir, ['reconcile', ...LOCAL]);
    expect(r.code, out(r)).toBe(0);
    expect(results(r.stdout)).toEqual({ deploy: 'executed', 'svc#eu': 'executed', 'svc#us': 'current' });
    expect(details(r.stdout)).toMatchObject({ deploy: 'files changed: tools/deploy.sh' });
  });

  it('a link that points outside the repository is keyed as the link it is', async () => {
    const dir = makeRepo({
      'nyl.yaml': `${ENV_DEV}---\nkind: Command\nname: c\nspec:\n  run: ./scripts/outside.sh\n  check: "true"\n---\nkind: Command\nname: d\nspec:\n  run: "true"\n  files: [config/ext.conf]\n`,
    });
    mkdirSync(join(dir, 'scripts'));
    mkdirSync(join(dir, 'config'));
    symlinkSync('/bin/true', join(dir, 'scripts/outside.sh'));
    symlinkSync('../../etc/hostname', join(dir, 'config/ext.conf'));
    commitFiles(dir, {});
    const plan = await nylJson<Json>(dir, ['plan', ...LOCAL]);
    expect(plan.code, out(plan)).toBe(0);
    const files = Object.fromEntries(plan.json.rows.map((r: Json) => [r.unit, r.files]));
    expect(files).toEqual({
      c: { 'scripts/outside.sh': git(dir, 'rev-parse', 'HEAD:scripts/outside.sh') },
      d: { 'config/ext.conf': git(dir, 'rev-parse', 'HEAD:config/ext.conf') },
    });
  });

  it('a submodule is keyed by the commit it pins', async () => {
    const dir = makeRepo({
      'nyl.yaml': `${ENV_DEV}---\nkind: Command\nname: c\nspec:\n  run: "true"\n  files: [vendor/lib/tool.sh]\n`,
    });
    const pin = (sha: string) => {
      git(dir, 'update-index', '--add', '--cacheinfo', `160000,${sha},vendor/lib`);
      git(dir, 'commit', '-q', '-m', 'pin vendor/lib');
    };
    pin(git(dir, 'rev-parse', 'HEAD'));
    mkdirSync(join(dir, 'vendor/lib'), { recursive: true }); // as a submodule not checked out
    expect((await nyl(dir, ['reconcile', ...LOCAL])).code).toBe(0);
    expect(show(dir, 'refs/nyl/dev/observed:units/c.json').receipt.files).toEqual({
      'vendor/lib': git(dir, 'rev-parse', 'HEAD~1'),
    });
    pin(git(dir, 'rev-parse', 'HEAD'));
    const plan = await nyl(dir, ['plan', ...LOCAL]);
    expect(details(plan.stdout)).toEqual({ c: 'files changed: vendor/lib' });
  });

  it('a glob from the repository root sees a new file nobody committed', async () => {
    const dir = makeRepo({
      'nyl.yaml': `${ENV_DEV}---\nkind: Command\nname: c\nspec:\n  run: "true"\n  files: ["**/*.sh"]\n`,
      'a.sh': 'true\n',
    });
    expect((await nyl(dir, ['reconcile', ...LOCAL])).code).toBe(0);
    commitFiles(dir, { 'a.sh': 'true # v2\n' });
    writeFileSync(join(dir, 'new.sh'), 'true\n');
    const r = await nyl(dir, ['reconcile', ...LOCAL]);
    expect(r.code, out(r)).toBe(2);
    expect(r.stderr).toMatch(/^error NYL-FILES-UNCOMMITTED \(c\)\n.*: new\.sh \(not committed\)/m);
  });

  it('a path that names nothing in the commit is a configuration error with its file, line and field', async () => {
    const dir = makeRepo({
      'nyl.yaml': `${ENV_DEV}---\nkind: Command\nname: c\nspec:\n  run: "true"\n  files:\n    - scripts/*.sh\n    - config/missing.json\n`,
      'scripts/keep.txt': '',
    });
    const r = await nyl(dir, ['plan', ...LOCAL]);
    expect(r.code, out(r)).toBe(1);
    expect(r.stderr).toMatch(
      /^error NYL-CONFIG-FILES \(nyl\.yaml:9 spec\.files\.0\)\n {2}Command c: spec\.files\.0: scripts\/\*\.sh matches no file in the source commit\n {2}fix: correct spec\.files\.0/m,
    );
    expect(r.stderr).toMatch(/^error NYL-CONFIG-FILES \(nyl\.yaml:10 spec\.files\.1\)/m);
    // The ways out still work on such a commit.
    const brk = await nyl(dir, ['lease', 'break', ...LOCAL, '--reason', 'stuck']);
    expect(brk.stderr).not.toMatch(/NYL-CONFIG-FILES/);
    expect(brk.code, out(brk)).toBe(0);
    expect((await nyl(dir, ['state', 'show', ...LOCAL])).stderr).not.toMatch(/NYL-CONFIG-FILES/);
    commitFiles(dir, {
      'nyl.yaml': `${ENV_DEV}---\nkind: Command\nname: c\nspec:\n  run: "true"\n  files: ["\${{ units.x.outputs.dir }}/a"]\n`,
    });
    const ref = await nyl(dir, ['plan', ...LOCAL]);
    expect(ref.code, out(ref)).toBe(1);
    expect(ref.stderr).toMatch(/^error NYL-CONFIG-INVALID \(nyl\.yaml:8 spec\.files\.0\)\n.*not unit outputs/m);
    expect(ref.stderr).not.toMatch(/^\s+at |Error:/m); // no stack trace
  });
});

// ---- the upgrade ---------------------------------------------------------------------------

/** The release before file keys, whose dist/ is in this repository's history. */
const PREVIOUS_RELEASE = 'a360273fb59754431c9146be6278fbc4653cbbb0';
const ROOT = resolve(__dirname, '..');

function previousCli(): { cli?: string; why?: string } {
  const archive = spawnSync('git', ['archive', '--format=tar', PREVIOUS_RELEASE, 'dist'], {
    cwd: ROOT,
    maxBuffer: 256 * 1024 * 1024,
  });
  if (archive.status !== 0) return { why: `${PREVIOUS_RELEASE.slice(0, 7)} is not in this clone's history` };
  const dir = tempDir('nyl-previous-');
  execFileSync('tar', ['-x', '-C', dir], { input: archive.stdout });
  return { cli: join(dir, 'dist', 'cli.js') };
}
const previous = previousCli();
if (!previous.cli) console.log(`skipping the upgrade tests: ${previous.why}`);
const upgrade = previous.cli ? describe : describe.skip;

function runPrevious(dir: string, args: string[], env: Record<string, string>) {
  return spawnSync('node', [previous.cli as string, ...args], {
    cwd: dir,
    env: { ...process.env, ...GIT_ENV, NYL_PROGRESS: '0', ...env },
    encoding: 'utf8',
  });
}

/** A repository whose state lives on a file:// remote, with a non-idempotent script. */
function upgradeRepo() {
  const counts = tempDir('nyl-counts-');
  const bare = join(tempDir('nyl-remote-'), 'remote.git');
  execFileSync('git', ['init', '-q', '--bare', bare]);
  const dir = makeRepo({
    'nyl.yaml': [
      ENV_DEV,
      '---\nkind: Command\nname: migrate\nspec:\n  run: ./scripts/migrate.sh\n',
      '---\nkind: Command\nname: seed\nneeds: [migrate]\nspec:\n  run: ./scripts/seed.sh\n  idempotent: true\n',
      '---\nkind: Command\nname: note\nspec:\n  run: echo run >> "$COUNTS/note"\n',
    ].join(''),
    'scripts/migrate.sh': counter('migrate'),
    'scripts/seed.sh': counter('seed'),
  });
  git(dir, 'remote', 'add', 'origin', `file://${bare}`);
  const env = { COUNTS: counts };
  const runs = () => Object.fromEntries(['migrate', 'seed', 'note'].map((u) => [u, runsOf(counts, u)]));
  return { dir, bare, env, runs };
}

upgrade('upgrading from a nyl without file keys', () => {
  it('adopts its receipts: the first reconcile records the files without executing (a non-idempotent one neither), says so once', async () => {
    const { dir, bare, env, runs } = upgradeRepo();
    const old = runPrevious(dir, ['reconcile', '-e', 'dev'], env);
    expect(old.status, `${old.stdout}${old.stderr}`).toBe(0);
    expect(runs()).toEqual({ migrate: 1, seed: 1, note: 1 });
    expect(show(bare, 'refs/nyl/dev/observed:units/migrate.json').receipt.files).toBeUndefined();

    const plan = await nyl(dir, ['plan', '-e', 'dev'], env);
    expect(plan.code, out(plan)).toBe(0);
    expect(results(plan.stdout)).toEqual({ migrate: 'current', note: 'current', seed: 'current' });
    expect(details(plan.stdout).migrate).toBe(
      'receipt of an earlier nyl: the next reconcile records its files, executing nothing',
    );
    expect(details(plan.stdout).note).toBe(''); // uses no file: its key is the one it had

    const r = await nyl(dir, ['reconcile', '-e', 'dev'], env);
    expect(r.code, out(r)).toBe(0);
    expect(results(r.stdout)).toEqual({ migrate: 'current', note: 'current', seed: 'current' });
    expect(details(r.stdout)).toMatchObject({
      migrate: 'receipt of an earlier nyl: its files recorded, nothing executed',
      seed: 'receipt of an earlier nyl: its files recorded, nothing executed',
    });
    expect(runs()).toEqual({ migrate: 1, seed: 1, note: 1 });
    expect(git(bare, 'log', '-1', '--format=%B', 'refs/nyl/dev/observed')).toMatch(/^adopted: \[migrate, seed\]$/m);
    const receipt = show(bare, 'refs/nyl/dev/observed:units/migrate.json').receipt;
    expect(receipt.files).toEqual({ 'scripts/migrate.sh': git(dir, 'rev-parse', 'HEAD:scripts/migrate.sh') });
    expect(receipt.run).toBe(show(bare, 'refs/nyl/dev/observed:units/note.json').receipt.run); // the old run's

    const observed = git(bare, 'rev-parse', 'refs/nyl/dev/observed');
    const again = await nyl(dir, ['reconcile', '-e', 'dev'], env);
    expect(again.code, out(again)).toBe(0);
    expect(again.stdout).not.toMatch(/earlier nyl/);
    expect(git(bare, 'rev-parse', 'refs/nyl/dev/observed')).toBe(observed);

    // From now on the files are the key: the script's next change executes it.
    commitFiles(dir, { 'scripts/migrate.sh': `${counter('migrate')}# v2\n` });
    const next = await nyl(dir, ['reconcile', '-e', 'dev'], env);
    expect(results(next.stdout)).toEqual({ migrate: 'executed', note: 'current', seed: 'current' });
    expect(runs()).toEqual({ migrate: 2, seed: 1, note: 1 });
  });

  it('a run of the earlier nyl killed before its transition: its checkpoints are imported with the files, not executed again', async () => {
    const { dir, bare, env, runs } = upgradeRepo();
    const old = runPrevious(dir, ['reconcile', '-e', 'dev'], { ...env, NYL_TEST_CRASH_AT: 'before-transition' });
    expect(old.signal).toBe('SIGKILL');
    expect(runs()).toEqual({ migrate: 1, seed: 1, note: 1 });
    const broken = await nyl(dir, ['lease', 'break', '-e', 'dev', '--reason', 'runner was killed'], env);
    expect(broken.code, out(broken)).toBe(0);
    const r = await nyl(dir, ['reconcile', '-e', 'dev'], env);
    expect(r.code, out(r)).toBe(0);
    // The first wave was checkpointed (with the second's start); the last wave's checkpoints ride in
    // the transition push that never came, so seed is uncertain, and converges.
    expect(results(r.stdout)).toEqual({ migrate: 'imported', note: 'imported', seed: 'recovered' });
    expect(`${r.stdout}${r.stderr}`).not.toMatch(/NYL-RUN-SUPERSEDED/);
    expect(runs()).toEqual({ migrate: 1, seed: 2, note: 1 });
    expect(show(bare, 'refs/nyl/dev/observed:units/migrate.json').receipt.files).toEqual({
      'scripts/migrate.sh': git(dir, 'rev-parse', 'HEAD:scripts/migrate.sh'),
    });
    const plan = await nyl(dir, ['plan', '-e', 'dev'], env);
    expect(results(plan.stdout)).toEqual({ migrate: 'current', note: 'current', seed: 'current' });
    expect(plan.stdout).not.toMatch(/earlier nyl/);
  });
});

// ---- Terraform ------------------------------------------------------------------------------

for (const k of Object.keys(process.env)) if (k.startsWith('TF_')) delete process.env[k];
const HAS_TERRAFORM = spawnSync('terraform', ['version'], { stdio: 'ignore' }).status === 0;
if (!HAS_TERRAFORM) console.log('skipping the Terraform file-key tests: terraform is not on PATH');
const withTerraform = HAS_TERRAFORM ? describe : describe.skip;

const tf = (input: string, call?: string) =>
  `${call ? `module "shared" {\n  source = "${call}"\n}\n` : ''}variable "tag" {\n  type    = string\n  default = "none"\n}\nresource "terraform_data" "x" {\n  input = "${input} \${var.tag}"\n}\n`;

withTerraform('Terraform units keyed by their modules (the real terraform)', () => {
  it('a module’s file executes its unit; a shared local module executes every unit that calls it; a var file its unit; nothing else', async () => {
    const unit = (name: string, spec: object) => `---\nkind: Terraform\nname: ${name}\nspec: ${JSON.stringify(spec)}\n`;
    const dir = makeRepo({
      '.gitignore': '.terraform/\n.terraform.lock.hcl\n*.tfstate\n*.tfstate.backup\n',
      'nyl.yaml':
        ENV_DEV +
        unit('a', { module: 'infra/a' }) +
        unit('b', { module: 'infra/b' }) +
        unit('c', { module: 'infra/c', varFiles: ['vars/c.tfvars'] }),
      'infra/a/main.tf': tf('a', '../../modules/shared'),
      'infra/b/main.tf': tf('b', '../../modules/shared'),
      'infra/c/main.tf': tf('c'),
      'modules/shared/main.tf': tf('shared'),
      'vars/c.tfvars': 'tag = "one"\n',
      'docs/notes.md': 'notes\n',
    });
    const reconcile = async () => {
      const r = await nyl(dir, ['reconcile', ...LOCAL]);
      expect(r.code, out(r)).toBe(0);
      return r;
    };
    expect(results((await reconcile()).stdout)).toEqual({ a: 'executed', b: 'executed', c: 'executed' });
    expect(Object.keys(show(dir, 'refs/nyl/dev/observed:units/a.json').receipt.files)).toEqual([
      'infra/a/main.tf',
      'modules/shared/main.tf',
    ]);
    // What terraform left in the module folders (.terraform/, state) is neither key nor change.
    expect(existsSync(join(dir, 'infra/a/terraform.tfstate'))).toBe(true);

    commitFiles(dir, { 'modules/shared/main.tf': tf('shared v2') });
    const plan = await nyl(dir, ['plan', ...LOCAL]);
    expect(results(plan.stdout)).toEqual({ a: 'execute', b: 'execute', c: 'current' });
    expect(details(plan.stdout)).toMatchObject({ a: 'files changed: modules/shared/main.tf; +0 ~1 -/+0 -0' });
    expect(results((await reconcile()).stdout)).toEqual({ a: 'executed', b: 'executed', c: 'current' });

    commitFiles(dir, { 'infra/b/main.tf': tf('b v2', '../../modules/shared') });
    expect(results((await reconcile()).stdout)).toEqual({ a: 'current', b: 'executed', c: 'current' });

    commitFiles(dir, { 'vars/c.tfvars': 'tag = "two"\n' });
    const byVars = await reconcile();
    expect(results(byVars.stdout)).toEqual({ a: 'current', b: 'current', c: 'executed' });
    expect(JSON.stringify(JSON.parse(readFileSync(join(dir, 'infra/c/terraform.tfstate'), 'utf8')))).toContain('c two');

    commitFiles(dir, { 'docs/notes.md': 'more notes\n' });
    const none = await reconcile();
    expect(results(none.stdout)).toEqual({ a: 'current', b: 'current', c: 'current' });
    expect(none.stdout).not.toMatch(/^ {2}run:/m);

    // An edit nobody committed is refused before terraform runs, naming the file.
    commitFiles(dir, { 'infra/a/main.tf': tf('a v2', '../../modules/shared') });
    writeFileSync(join(dir, 'modules/shared/extra.tf'), 'locals {\n  x = 1\n}\n');
    const refused = await nyl(dir, ['reconcile', ...LOCAL]);
    expect(refused.code, out(refused)).toBe(2);
    expect(refused.stderr).toMatch(
      /^error NYL-FILES-UNCOMMITTED \(a\)\n {2}a uses files that differ from the source commit \w+: modules\/shared\/extra\.tf \(not committed\)/m,
    );
    unlinkSync(join(dir, 'modules/shared/extra.tf'));
    expect(results((await reconcile()).stdout)).toEqual({ a: 'executed', b: 'current', c: 'current' });
  });

  it('a module folder keys what it runs: not other units’ module folders in it, nor the configuration; a linked folder by its target', async () => {
    const unit = (name: string, module: string) => `---\nkind: Terraform\nname: ${name}\nspec:\n  module: ${module}\n`;
    const dir = makeRepo({
      '.gitignore': '.terraform/\n.terraform.lock.hcl\n*.tfstate\n*.tfstate.backup\n',
      'nyl.yaml': ENV_DEV + unit('root', '.') + unit('app', 'live'),
      'main.tf': tf('root'),
      'stacks/app/main.tf': tf('app'),
    });
    symlinkSync('stacks/app', join(dir, 'live'));
    commitFiles(dir, {});
    const reconcile = async () => {
      const r = await nyl(dir, ['reconcile', ...LOCAL]);
      expect(r.code, out(r)).toBe(0);
      return results(r.stdout);
    };
    expect(await reconcile()).toEqual({ app: 'executed', root: 'executed' });
    expect(Object.keys(show(dir, 'refs/nyl/dev/observed:units/root.json').receipt.files)).toEqual([
      '.gitignore',
      'main.tf',
    ]);
    expect(Object.keys(show(dir, 'refs/nyl/dev/observed:units/app.json').receipt.files)).toEqual([
      'live',
      'stacks/app/main.tf',
    ]);
    commitFiles(dir, { 'stacks/app/main.tf': tf('app v2') });
    expect(await reconcile()).toEqual({ app: 'executed', root: 'current' });
    commitFiles(dir, { 'nyl.yaml': `${readFileSync(join(dir, 'nyl.yaml'), 'utf8')}# a comment\n` });
    expect(await reconcile()).toEqual({ app: 'current', root: 'current' });
    // The root module's folder is the repository: a file nobody committed anywhere in it is refused.
    commitFiles(dir, { 'main.tf': tf('root v2') });
    writeFileSync(join(dir, 'extra.tf'), 'locals {\n  y = 2\n}\n');
    const refused = await nyl(dir, ['reconcile', ...LOCAL]);
    expect(refused.code, out(refused)).toBe(2);
    expect(refused.stderr).toMatch(/^error NYL-FILES-UNCOMMITTED \(root\)\n.*: extra\.tf \(not committed\)/m);
  });

  it('a module folder or a local call the commit does not hold is refused with the field and the calling file', async () => {
    const dir = makeRepo({
      'nyl.yaml': `${ENV_DEV}---\nkind: Terraform\nname: a\nspec:\n  module: infra/a\n---\nkind: Terraform\nname: gone\nspec:\n  module: infra/gone\n`,
      'infra/a/main.tf': tf('a', '../netwrok'),
    });
    const r = await nyl(dir, ['plan', ...LOCAL]);
    expect(r.code, out(r)).toBe(1);
    expect(r.stderr).toMatch(
      /^error NYL-CONFIG-FILES \(nyl\.yaml:7 spec\.module\)\n {2}Terraform a: spec\.module: infra\/a calls the module infra\/netwrok, which the source commit does not hold/m,
    );
    expect(r.stderr).toMatch(
      /^error NYL-CONFIG-FILES \(nyl\.yaml:12 spec\.module\)\n {2}Terraform gone: spec\.module: infra\/gone is not a folder in the source commit/m,
    );
  });
});

// The CLI exists before any test runs (global setup builds it).
expect(existsSync(CLI)).toBe(true);
