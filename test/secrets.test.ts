/**
 * Secrets stay masked everywhere nyl stores or prints text: values of secret-looking environment
 * variables never reach a git object (documents, log tails, commit messages), stdout, stderr or
 * `--json` — not when a log is cut through the middle of one, not in a repair's command line, not
 * in an excerpt of a malformed NYL_OUTPUT line, not as an output's value.
 */
import { execFileSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { inline } from '../src/actions/markdown.js';
import { jobSummary } from '../src/actions/summary.js';
import { command, ENV_DEV, makeRepo, nyl, nylJson, parseTable } from './helpers/repo.js';

/** Quotes, a backslash, and long enough to straddle an 80-character cut. */
const SECRET = 'p4ss"w\\0rd-7f3a9c2e51b84d6a';
const ENV = { DEPLOY_TOKEN: SECRET };
const LOCAL = ['-e', 'dev', '--local'];

/** The text of every object in the repository (blobs, trees, commits): what any ref could reach. */
function everyObject(dir: string): string {
  return execFileSync('git', ['cat-file', '--batch-all-objects', '--batch'], {
    cwd: dir,
    maxBuffer: 256 * 1024 * 1024,
  }).toString('latin1');
}

/** The secret and the forms JSON or a cut could leave of it. */
function leaks(text: string): string[] {
  const forms = [SECRET, JSON.stringify(SECRET).slice(1, -1), SECRET.slice(0, 12), SECRET.slice(-12)];
  return forms.filter((f) => text.includes(f));
}

describe('secrets never reach a ref, the output or --json', () => {
  it('in a log tail cut through the middle of the secret', async () => {
    // 60 KiB before it and 50 KiB after: the kept tail (56 KiB) starts inside the secret.
    const run = `head -c 61440 /dev/zero | tr '\\0' a; printf '%s' "$DEPLOY_TOKEN"; head -c 57330 /dev/zero | tr '\\0' b; echo`;
    const dir = makeRepo({ 'nyl.yaml': ENV_DEV + command('noisy', run) });
    const r = await nyl(dir, ['reconcile', ...LOCAL], ENV);
    expect(r.code, r.stderr).toBe(0);
    const log = execFileSync('git', ['show', 'refs/nyl/dev/observed:logs/noisy.txt'], { cwd: dir }).toString();
    expect(log).toContain('bytes of output not kept');
    expect(leaks(log)).toEqual([]);
    expect(leaks(everyObject(dir))).toEqual([]);
  });

  it('in a repair’s command line: run.json, repairs[].command, the commit message, --json', async () => {
    const dir = makeRepo({ 'nyl.yaml': ENV_DEV + command('db', 'echo ok') });
    expect((await nyl(dir, ['reconcile', ...LOCAL])).code).toBe(0);
    expect((await nyl(dir, ['hold', ...LOCAL, '--unit', 'db', '--reason', 'repair'])).code).toBe(0);
    const r = await nylJson(dir, ['exec', ...LOCAL, '--unit', 'db', '--', 'echo', `password=${SECRET}`], ENV);
    expect(r.code, r.stderr).toBe(0);
    expect(leaks(r.stdout + r.stderr)).toEqual([]);
    const shown = await nyl(dir, ['state', 'show', ...LOCAL, '--unit', 'db'], ENV);
    expect(shown.stdout).toContain('"password=***"');
    expect(leaks(everyObject(dir))).toEqual([]);
  });

  it('in what a repair tool prints to the terminal as it runs (nyl exec without --json)', async () => {
    const dir = makeRepo({ 'nyl.yaml': ENV_DEV + command('db', 'echo ok') });
    expect((await nyl(dir, ['reconcile', ...LOCAL])).code).toBe(0);
    expect((await nyl(dir, ['hold', ...LOCAL, '--unit', 'db', '--reason', 'repair'])).code).toBe(0);
    // Printed slowly and in pieces: the secret straddles two of the echo's reads.
    const script = `printf 'token=${SECRET.slice(0, 5)}'; sleep 0.3; printf '%s\\n' '${SECRET.slice(5)} done'`;
    const r = await nyl(dir, ['exec', ...LOCAL, '--unit', 'db', '--', 'sh', '-c', script], ENV);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain('token=*** done');
    expect(leaks(r.stdout + r.stderr)).toEqual([]);
  });

  it('in the excerpt of a malformed NYL_OUTPUT line', async () => {
    const line = `${'x'.repeat(70)} ${SECRET} and more`;
    const dir = makeRepo({
      'nyl.yaml':
        ENV_DEV + command('bad', `printf '%s\\n' "${line.replace(SECRET, '$DEPLOY_TOKEN')}" >> "$NYL_OUTPUT"`),
    });
    const r = await nyl(dir, ['reconcile', ...LOCAL], ENV);
    expect(r.code).toBe(1);
    expect(parseTable(r.stdout)[0]?.DETAIL).toMatch(/^NYL_OUTPUT line 1 is not key=value: "x+ \*\*\*/);
    expect(leaks(r.stdout + r.stderr)).toEqual([]);
    expect(leaks(everyObject(dir))).toEqual([]);
  });

  it('as an output’s value: not recorded, and a reference to it is refused as sensitive', async () => {
    const dir = makeRepo({
      'nyl.yaml':
        ENV_DEV +
        command('db', 'echo "url=postgres://app:$DEPLOY_TOKEN@db" >> "$NYL_OUTPUT"; echo host=db >> "$NYL_OUTPUT"') +
        command('app', 'echo "${{ units.db.outputs.url }}"'),
    });
    const r = await nylJson<{ rows: { unit: string; result: string; detail: string }[] }>(
      dir,
      ['reconcile', ...LOCAL],
      ENV,
    );
    expect(r.json.rows.map((x) => [x.unit, x.result])).toEqual([
      ['db', 'executed'],
      ['app', 'failed'],
    ]);
    expect(r.json.rows[1]?.detail).toMatch(/^output url of db is sensitive \(or holds a secret's value\)/);
    const db = JSON.parse(
      execFileSync('git', ['show', 'refs/nyl/dev/observed:units/db.json'], { cwd: dir }).toString(),
    );
    expect(db.receipt.outputs).toEqual({ host: 'db' });
    expect(db.receipt.artifacts).toEqual({ sensitiveOutputs: 'url' });
    expect(leaks(everyObject(dir) + r.stdout + r.stderr)).toEqual([]);
  });
});

describe('unit output in a job summary', () => {
  it('cannot break its Markdown: HTML is inert outside code spans, tables keep their cells', () => {
    expect(inline('<!-- hidden --> a|b `x|<y>` done')).toBe('&lt;!-- hidden --&gt; a\\|b `x\\|<y>` done');
    expect(inline('one ` backtick')).toBe('one &#96; backtick');
    const summary = jobSummary({
      operation: 'reconcile',
      environment: 'dev',
      source: 'abc',
      rows: [
        { unit: 'a', kind: 'Command', result: 'failed', detail: 'exited with 1: <!-- comment starts' },
        { unit: 'b', kind: 'Command', result: 'executed', detail: '' },
      ],
      problems: [],
      exit: 1,
    });
    expect(summary).not.toContain('<!--');
    expect(summary).toMatch(/\| b \| Command \| executed \|/);
  });
});
