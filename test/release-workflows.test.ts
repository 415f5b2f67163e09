/**
 * Nyl's own workflows (.github/workflows): linted by the same lint as the examples, and the
 * release's shape — a version tag starts it, dist/ is checked before anything is released, each
 * job holds only the permissions it needs — with its shell steps run for real where they can be
 * (the version check against the built CLI, the major tag moved in a bare remote over file://).
 */
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { commitFiles, GIT_ENV, git, makeRepo, tempDir } from './helpers/repo.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const WORKFLOWS = join(ROOT, '.github', 'workflows');

interface Step {
  name?: string;
  uses?: string;
  run?: string;
  if?: string;
  with?: Record<string, unknown>;
  env?: Record<string, string>;
}
interface Job {
  needs?: string | string[];
  permissions?: Record<string, string>;
  steps: Step[];
}
interface Workflow {
  on: Record<string, unknown>;
  permissions?: Record<string, string>;
  concurrency?: { group: string; 'cancel-in-progress': unknown };
  jobs: Record<string, Job>;
}

const read = (file: string) => parse(readFileSync(join(WORKFLOWS, file), 'utf8')) as Workflow;
const release = read('release.yml');
const ci = read('ci.yml');
const needs = (job: Job) => [job.needs ?? []].flat();

/** The index of the first step whose `run` matches. */
function stepIndex(job: Job, run: RegExp): number {
  const i = job.steps.findIndex((s) => typeof s.run === 'string' && run.test(s.run));
  expect(i, `a step running ${run}`).toBeGreaterThanOrEqual(0);
  return i;
}

/** A step's `run` under bash -e as the runner runs it, with its env (the step's own expressions resolved by hand). */
function runStep(step: Step, cwd: string, env: Record<string, string>) {
  return spawnSync('bash', ['-e', '-c', step.run!], {
    cwd,
    env: { ...process.env, ...GIT_ENV, ...env },
    encoding: 'utf8',
  });
}

describe("Nyl's own workflows", () => {
  it('pass the workflow lint (workflow parser and actionlint)', () => {
    const files = ['ci.yml', 'release.yml'].map((f) => join(WORKFLOWS, f));
    const r = spawnSync(process.execPath, [join(ROOT, 'scripts', 'lint-workflows.mjs'), ...files], {
      cwd: ROOT,
      encoding: 'utf8',
    });
    expect(r.stdout.trim()).toBe('lint-workflows: 2 workflows and 0 action metadata files, no problems');
    expect(r.status).toBe(0);
  });

  it('pin actions/* to a major tag and any other action to a full commit SHA', () => {
    const uses = [ci, release].flatMap((w) => Object.values(w.jobs).flatMap((j) => j.steps.map((s) => s.uses)));
    expect(uses.filter(Boolean).length).toBeGreaterThanOrEqual(6);
    for (const u of uses.filter((x): x is string => !!x))
      expect(u).toMatch(/^(actions\/[\w.-]+@v\d+|[\w.-]+\/[\w./-]+@[0-9a-f]{40})$/);
  });

  it('ci runs .ci/run as root on pushes and pull requests, cancelling only superseded pull request runs', () => {
    expect(Object.keys(ci.on).sort()).toEqual(['pull_request', 'push']);
    expect(ci.permissions).toEqual({ contents: 'read' });
    expect(ci.concurrency?.['cancel-in-progress']).toBe("${{ github.event_name == 'pull_request' }}");
    expect(ci.concurrency?.group).toContain('github.event.pull_request.number');
    const [job] = Object.values(ci.jobs);
    expect(job!.steps.at(-1)!.run).toMatch(/^sudo -E env "PATH=\$PATH" bash \.ci\/run$/);
  });

  it('release runs on a version tag, with least permissions per job', () => {
    const push = release.on.push as { tags: string[]; branches?: unknown };
    expect(Object.keys(release.on)).toEqual(['push']);
    expect(push.tags).toEqual(['v*', '!v[0-9]+']);
    expect(push.branches).toBeUndefined();
    expect(release.permissions).toEqual({});
    expect(release.concurrency?.['cancel-in-progress']).toBe(false);
    expect(Object.fromEntries(Object.entries(release.jobs).map(([k, j]) => [k, j.permissions]))).toEqual({
      package: { contents: 'read' },
      attest: { 'id-token': 'write', attestations: 'write' },
      release: { contents: 'write' },
    });
  });

  it('release checks dist/ before it packs, attests the tarball, then releases it', () => {
    const { package: pkg, attest, release: rel } = release.jobs;
    const install = stepIndex(pkg!, /^npm ci\b/);
    const check = stepIndex(pkg!, /^node scripts\/build\.mjs --check$/);
    const version = stepIndex(pkg!, /package\.json/);
    const pack = stepIndex(pkg!, /npm pack/);
    expect(install < check && check < pack && version < pack).toBe(true);
    expect(pkg!.steps.find((s) => s.uses?.startsWith('actions/upload-artifact@'))).toBeDefined();
    // The attestation's subject is the packed file; the release waits for both.
    expect(needs(attest!)).toEqual(['package']);
    const att = attest!.steps.find((s) => s.uses?.startsWith('actions/attest-build-provenance@'));
    expect(att?.with?.['subject-path']).toContain('needs.package.outputs.file');
    expect(needs(rel!).sort()).toEqual(['attest', 'package']);
    const create = stepIndex(rel!, /gh release create/);
    const move = stepIndex(rel!, /git push --force origin/);
    expect(create).toBeLessThan(move);
    expect(rel!.steps[create]!.run).toMatch(/gh release create "\$TAG" "\$FILE" --verify-tag --generate-notes/);
    expect(rel!.steps[create]!.env?.FILE).toContain('needs.package.outputs.file');
    // A prerelease (v1.3.0-rc.1) moves no major tag.
    expect(rel!.steps[move]!.if).toBe("${{ !contains(github.ref_name, '-') }}");
  });

  it("refuses a tag that is not package.json's version, and passes the one that is", () => {
    const step = release.jobs.package!.steps.find((s) => s.name === "The tag names the package's version")!;
    const version = (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string }).version;
    const ok = runStep(step, ROOT, { TAG: `v${version}` });
    expect(ok.stdout + ok.stderr).toBe('');
    expect(ok.status).toBe(0);
    const bad = runStep(step, ROOT, { TAG: 'v99.0.0' });
    expect(bad.status).toBe(1);
    expect(bad.stdout).toContain(`::error::tag v99.0.0 is not v${version}, the version in package.json`);
  });

  it('moves the major tag as a plain tag to the released commit, force-pushed', () => {
    const step = release.jobs.release!.steps.find((s) => s.name === 'Move the major tag')!;
    const bare = tempDir('nyl-release-remote-');
    git(bare, 'init', '-q', '--bare');
    const work = makeRepo({ 'a.txt': 'one\n' });
    git(work, 'remote', 'add', 'origin', `file://${bare}`);
    const first = git(work, 'rev-parse', 'HEAD');
    git(work, 'tag', '-a', 'v1.2.3', '-m', 'v1.2.3');
    git(work, 'push', '-q', 'origin', 'HEAD:refs/heads/main', 'refs/tags/v1.2.3');
    expect(runStep(step, work, { TAG: 'v1.2.3' }).status).toBe(0);
    expect(git(bare, 'rev-parse', 'refs/tags/v1')).toBe(first);
    expect(git(bare, 'cat-file', '-t', 'refs/tags/v1')).toBe('commit'); // lightweight, not a tag object
    // The next release moves it, though the remote's v1 names another commit.
    const second = commitFiles(work, { 'a.txt': 'two\n' });
    git(work, 'tag', '-a', 'v1.3.0', '-m', 'v1.3.0');
    git(work, 'push', '-q', 'origin', 'HEAD:refs/heads/main', 'refs/tags/v1.3.0');
    const moved = runStep(step, work, { TAG: 'v1.3.0' });
    expect(moved.status, moved.stderr).toBe(0);
    expect(git(bare, 'rev-parse', 'refs/tags/v1')).toBe(second);
    expect(git(bare, 'rev-parse', 'refs/tags/v1.2.3^{commit}')).toBe(first);
  });
});
