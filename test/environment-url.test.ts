/**
 * An Environment's `url`: a template over its units' outputs, checked at load, resolved from the
 * recorded receipts after a reconcile and in `nyl status`. The built CLI on real repositories.
 */
import { describe, expect, it } from 'vitest';
import { environmentUrl, recordedUrl } from '../src/core/ops/status/environment-url.js';
import type { ObservedUnit } from '../src/core/state/documents.js';
import { masker } from '../src/core/util/mask.js';
import { command, commitFiles, makeRepo, nyl, nylJson } from './helpers/repo.js';

// biome-ignore lint/suspicious/noExplicitAny: JSON reports
type Json = any;

const LOCAL = ['-e', 'dev', '--local'];
const WEB = command('web', 'echo "host=web.example" >> "$NYL_OUTPUT"');
const env = (url: string, extra = '') => `kind: Environment\nname: dev\n${extra}url: ${url}\n`;

describe('the environment url', () => {
  it('reconcile prints it after source, --json has it, and status shows it from the recorded state', async () => {
    const dir = makeRepo({ 'nyl.yaml': env('https://${{ units.web.outputs.host }}/app') + WEB });
    const r = await nyl(dir, ['reconcile', ...LOCAL]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/\n {2}source: {3}[0-9a-f]{40}\n {2}url: {6}https:\/\/web\.example\/app\n {2}desired: /);

    // Nothing to do: the URL from the recorded state, in the table and in --json.
    const again = await nylJson<Json>(dir, ['reconcile', ...LOCAL]);
    expect(again.code, again.stderr).toBe(0);
    expect(again.json.rows[0].result).toBe('current');
    expect(again.json.url).toBe('https://web.example/app');
    expect(again.json.urlMissing).toBeUndefined();

    const st = await nyl(dir, ['status', ...LOCAL]);
    expect(st.code, st.stderr).toBe(0);
    expect(st.stdout).toMatch(/\n {2}source: {3}[0-9a-f]{40}\n {2}url: {6}https:\/\/web\.example\/app\n/);
    const stJson = await nylJson<Json>(dir, ['status', ...LOCAL]);
    expect(stJson.json.url).toBe('https://web.example/app');
  });

  it('a new output is the url once it is recorded: executed, in the report of the run that landed it', async () => {
    const dir = makeRepo({ 'nyl.yaml': env('https://${{ units.web.outputs.host }}') + WEB });
    expect((await nyl(dir, ['reconcile', ...LOCAL])).code).toBe(0);
    commitFiles(dir, {
      'nyl.yaml': env('https://${{ units.web.outputs.host }}') + WEB.replace('web.example', 'v2.example'),
    });
    const r = await nylJson<Json>(dir, ['reconcile', ...LOCAL]);
    expect(r.json.rows[0].result).toBe('executed');
    expect(r.json.url).toBe('https://v2.example');
  });

  it('a missing output gives no url and says why; the run itself is not affected', async () => {
    const dir = makeRepo({ 'nyl.yaml': env('https://${{ units.web.outputs.port }}') + WEB });
    const r = await nyl(dir, ['reconcile', ...LOCAL]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain('  url:      none (web has no output port)\n');
    const j = await nylJson<Json>(dir, ['status', ...LOCAL]);
    expect(j.code).toBe(0);
    expect(j.json.url).toBeUndefined();
    expect(j.json.urlMissing).toBe('web has no output port');
  });

  it('no url: no line, no field (the output as before)', async () => {
    const dir = makeRepo({ 'nyl.yaml': `kind: Environment\nname: dev\n${WEB}` });
    const r = await nylJson<Json>(dir, ['reconcile', ...LOCAL]);
    expect(r.code).toBe(0);
    expect('url' in r.json || 'urlMissing' in r.json).toBe(false);
    expect((await nyl(dir, ['status', ...LOCAL])).stdout).not.toContain('url:');
  });

  it('a unit that is not defined, or not of the environment, is refused at load with file, line and field', async () => {
    const dir = makeRepo({
      'nyl.yaml':
        env('https://${{ units.api.outputs.host }}', 'description: the dev one\n') +
        WEB +
        command('other', 'true', { environments: ['prod'] }) +
        '---\nkind: Environment\nname: prod\nurl: "${{ units.web.outputs.host }}:${{ env.PORT }}"\n' +
        '---\nkind: Environment\nname: stage\nurl: https://${{ units.other.outputs.host }}\n',
    });
    const r = await nyl(dir, ['status', ...LOCAL]);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain(
      'error NYL-CONFIG-REFERENCE (nyl.yaml:4 url)\n  Environment dev: url ${{ units.api.outputs.host }} refers to unit api, which is not defined\n  fix: define a unit named api or correct the name (units: web, other)\n',
    );
    expect(r.stderr).toContain(
      'error NYL-CONFIG-REFERENCE (nyl.yaml:19 url)\n  Environment prod: url has an unsupported expression ${{ env.PORT }}\n',
    );
    expect(r.stderr).toContain(
      'error NYL-CONFIG-REFERENCE (nyl.yaml:23 url)\n  Environment stage: url ${{ units.other.outputs.host }} refers to unit other, which is not part of environment stage\n  fix: add stage to the environments of other, or refer to a unit of stage\n',
    );
  });

  it("a group's outputs are refused (each instance has its own)", async () => {
    const dir = makeRepo({
      'nyl.yaml': env('https://${{ units.regions.outputs.host }}') + command('regions', 'true', { forEach: ['eu'] }),
    });
    const r = await nyl(dir, ['status', ...LOCAL]);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain('error NYL-CONFIG-FOREACH-OUTPUT (nyl.yaml:3 url)');
  });

  it('nyl environments --json: production and the url template as written (it reads no state)', async () => {
    const dir = makeRepo({
      'nyl.yaml': `${env('https://${{ units.web.outputs.host }}', 'production: true\n')}---\nkind: Environment\nname: qa\n${WEB}`,
    });
    const r = await nylJson<Json>(dir, ['environments']);
    expect(r.code, r.stderr).toBe(0);
    expect(r.json.facts.promotion).toEqual([
      {
        name: 'dev',
        after: [],
        verified: false,
        production: true,
        urlTemplate: 'https://${{ units.web.outputs.host }}',
      },
      { name: 'qa', after: [], verified: false, production: false },
    ]);
  });
});

describe('environmentUrl', () => {
  const sel = { url: 'https://${{ units.web.outputs.host }}:${{ units.web.outputs.port }}/' };
  const observed = (outputs: Record<string, string>, artifacts: Record<string, string> = {}) =>
    new Map([['web', { name: 'web', receipt: { outputs, artifacts } } as unknown as ObservedUnit]]);

  it('substitutes every reference; no template, nothing', () => {
    expect(recordedUrl(sel, observed({ host: 'h', port: '8080' }))).toEqual({ url: 'https://h:8080/' });
    expect(environmentUrl({}, () => ({ host: 'h' }))).toEqual({});
  });

  it('a unit with no receipt, a missing output and a sensitive one: no url, and why', () => {
    expect(recordedUrl(sel, new Map())).toEqual({ missing: 'web has no receipt' });
    expect(recordedUrl(sel, observed({ host: 'h' }))).toEqual({ missing: 'web has no output port' });
    expect(recordedUrl(sel, observed({ host: 'h' }, { sensitiveOutputs: 'port' }))).toEqual({
      missing: "output port of web is sensitive (or holds a secret's value): Nyl never records it",
    });
  });

  it('is masked', () => {
    masker.add('s3cr3t-host');
    expect(environmentUrl(sel, () => ({ host: 's3cr3t-host', port: '1' }))).toEqual({ url: 'https://***:1/' });
  });
});
