/**
 * Promotion gates: staging reconciles a source only once dev has it recorded (or a descendant),
 * with no failed or uncertain unit, and — with `verified: true` — a verify of it that found no
 * drift; otherwise NYL-PROMOTION-PENDING (exit 2) says what is missing and nothing executes.
 * A group's `promote` list is the shorthand; `nyl environments` lists them in order.
 */
import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { command, commitFiles, makeRepo, nyl, nylJson, tempDir } from './helpers/repo.js';

const LOCAL = ['--local'];

function setup() {
  const marks = tempDir('nyl-marks-');
  const ctl = tempDir('nyl-ctl-');
  const config = (v: string) =>
    [
      'kind: Environment\nname: dev\n',
      '---\nkind: Environment\nname: staging\npromotion: {after: [dev], verified: true}\n',
      command(
        'app',
        `echo ${v} >> ${marks}/$NYL_ENVIRONMENT; if [ -f ${ctl}/fail-$NYL_ENVIRONMENT ]; then exit 3; fi; if [ -f ${ctl}/slow-$NYL_ENVIRONMENT ]; then sleep 5; fi; echo ok > ${ctl}/state-$NYL_ENVIRONMENT`,
        {
          timeout: '1s',
          spec: {
            idempotent: true,
            check: `[ "$(cat ${ctl}/state-$NYL_ENVIRONMENT 2>/dev/null)" = ok ] || { echo drifted; exit 2; }`,
          },
        },
      ),
    ].join('');
  const dir = makeRepo({ 'nyl.yaml': config('v1') });
  const runs = (env: string) => {
    const f = join(marks, env);
    return existsSync(f) ? readFileSync(f, 'utf8').split('\n').filter(Boolean).length : 0;
  };
  return { dir, ctl, runs, config };
}

describe('a promotion gate', () => {
  it('refuses staging until dev has the source, while dev has a failed unit, until a verify finds it in sync', async () => {
    const s = setup();
    const refused = async (why: RegExp) => {
      const r = await nyl(s.dir, ['reconcile', '-e', 'staging', ...LOCAL]);
      expect(r.code, r.stdout + r.stderr).toBe(2);
      expect(r.stderr).toMatch(
        /^error NYL-PROMOTION-PENDING \(staging\)\n {2}staging reconciles a source only after dev: /,
      );
      expect(r.stderr).toMatch(why);
      expect(r.stderr).toContain('nothing was executed');
      expect(s.runs('staging')).toBe(0);
    };
    await refused(/dev has no source recorded yet/);

    // dev fails: it has the source, but not soundly.
    writeFileSync(join(s.ctl, 'fail-dev'), '');
    expect((await nyl(s.dir, ['reconcile', '-e', 'dev', ...LOCAL])).code).toBe(1);
    await refused(/dev has app \(failed\)/);

    // dev times out: uncertain.
    rmSync(join(s.ctl, 'fail-dev'));
    writeFileSync(join(s.ctl, 'slow-dev'), '');
    expect((await nyl(s.dir, ['reconcile', '-e', 'dev', ...LOCAL])).code).toBe(4);
    await refused(/dev has app \(uncertain\)/);

    // dev succeeds (its policy converges); not verified yet.
    rmSync(join(s.ctl, 'slow-dev'));
    expect((await nyl(s.dir, ['reconcile', '-e', 'dev', ...LOCAL])).code).toBe(0);
    await refused(/dev has not been verified in sync: app \(not verified since its receipt\)/);
    const st = await nylJson<{ facts: { promotion: { environment: string; ready: boolean }[] } }>(s.dir, [
      'status',
      '-e',
      'staging',
      ...LOCAL,
    ]);
    expect(st.json.facts.promotion).toEqual([expect.objectContaining({ environment: 'dev', ready: false })]);

    // A verify in sync admits it.
    expect((await nyl(s.dir, ['verify', '-e', 'dev', ...LOCAL])).code).toBe(0);
    const ok = await nyl(s.dir, ['reconcile', '-e', 'staging', ...LOCAL]);
    expect(ok.code, ok.stderr).toBe(0);
    expect(s.runs('staging')).toBe(1);
    const text = await nyl(s.dir, ['status', '-e', 'staging', ...LOCAL]);
    expect(text.stdout).toMatch(/\n {2}after dev: ready \(at [0-9a-f]{40}\)\n/);

    // A commit that changes nothing for dev (a README): dev's reconcile writes nothing and
    // records no new source, yet staging may take it.
    commitFiles(s.dir, { 'README.md': 'docs only\n' });
    const noop = await nyl(s.dir, ['reconcile', '-e', 'dev', ...LOCAL]);
    expect(noop.code, noop.stderr).toBe(0);
    expect(s.runs('dev')).toBe(3);
    const readme = await nyl(s.dir, ['reconcile', '-e', 'staging', ...LOCAL]);
    expect(readme.code, readme.stderr).toBe(0);

    // A new source: staging waits for dev again.
    commitFiles(s.dir, { 'nyl.yaml': s.config('v2') });
    const again = await nyl(s.dir, ['reconcile', '-e', 'staging', ...LOCAL]);
    expect(again.code).toBe(2);
    expect(again.stderr).toMatch(/dev is at [0-9a-f]{12}, which does not contain this source [0-9a-f]{12}/);
  });

  it('a group lists its environments in promotion order; nyl environments prints them so', async () => {
    const dir = makeRepo({
      'nyl.yaml': [
        'kind: EnvironmentGroup\nname: line\npromote: [dev, staging, prod]\n',
        ...['prod', 'dev', 'staging'].map((e) => `---\nkind: Environment\nname: ${e}\ngroup: line\n`),
        command('app', 'true'),
      ].join(''),
    });
    const r = await nylJson<{ facts: { environments: string[] } }>(dir, ['environments']);
    expect(r.code, r.stderr).toBe(0);
    expect(r.json.facts.environments).toEqual(['dev', 'staging', 'prod']);
    const prod = await nyl(dir, ['reconcile', '-e', 'prod', ...LOCAL]);
    expect(prod.code).toBe(2);
    expect(prod.stderr).toContain('prod reconciles a source only after staging: staging has no source recorded yet');
  });

  it('gates that wait on each other are refused when the configuration loads', async () => {
    const dir = makeRepo({
      'nyl.yaml':
        'kind: Environment\nname: dev\npromotion: {after: [prod]}\n---\nkind: Environment\nname: prod\npromotion: {after: [dev]}\n' +
        command('a', 'true'),
    });
    const r = await nyl(dir, ['status', '-e', 'dev', ...LOCAL]);
    expect(r.code).toBe(1);
    expect(r.stderr).toBe(
      'error NYL-CONFIG-CYCLE (nyl.yaml:3 promotion.after)\n  promotion cycle: dev after prod after dev\n  fix: promotion runs one way: remove one of these environments from the others’ promotion.after (or promote list)\n',
    );
  });
});
