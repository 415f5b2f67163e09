import { execFileSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { referenceVariable, scanReferences, shellSafeScript } from '../src/core/config/references.js';
import { parseOutputFile } from '../src/core/drivers/command.js';
import { countsText, transitionMessage } from '../src/core/ops/transition/message.js';
import { canonicalJson, sha256Key } from '../src/core/util/canonical.js';
import { formatDuration, parseDuration } from '../src/core/util/duration.js';
import { Masker } from '../src/core/util/mask.js';
import { uuid7 } from '../src/core/util/uuid7.js';

describe('durations', () => {
  it('parses unit sums and rejects anything else', () => {
    expect(parseDuration('90s')).toBe(90_000);
    expect(parseDuration('1h30m')).toBe(5_400_000);
    expect(parseDuration('500ms')).toBe(500);
    expect(parseDuration('1.5m')).toBe(90_000);
    for (const bad of ['', '10', '10 minutes', 'm', '5x', '1h 30m', '-1s']) expect(parseDuration(bad)).toBeUndefined();
    expect(formatDuration(1000)).toBe('1.0s');
    expect(formatDuration(600_000)).toBe('10m');
  });
});

describe('execution keys', () => {
  it('are independent of key order and change with any value', () => {
    expect(canonicalJson({ b: 1, a: { d: [1, { z: 1, y: 2 }], c: undefined } })).toBe(
      '{"a":{"d":[1,{"y":2,"z":1}]},"b":1}',
    );
    expect(sha256Key({ a: 1, b: 2 })).toBe(sha256Key({ b: 2, a: 1 }));
    expect(sha256Key({ a: 1 })).not.toBe(sha256Key({ a: '1' }));
    expect(sha256Key({})).toMatch(/^sha256:[0-9a-f]{64}$/);
  });
});

describe('uuid7', () => {
  it('is a version 7 UUID ordered by time', () => {
    const a = uuid7(1_700_000_000_000);
    const b = uuid7(1_700_000_000_001);
    expect(a).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(a < b).toBe(true);
    expect(a.slice(0, 13)).toBe('018bcfe5-6800');
  });

  it('draws fresh random bits for every id, across refills of its pool', () => {
    const ids = Array.from({ length: 1000 }, () => uuid7(1_700_000_000_000));
    expect(new Set(ids).size).toBe(1000);
    expect(new Set(ids.map((id) => id.slice(15))).size).toBe(1000);
    // The full 48 bits of milliseconds (year 10889 is 0xffffffffffff ms).
    expect(uuid7(2 ** 48 - 1).slice(0, 13)).toBe('ffffffff-ffff');
  });
});

describe('output references in scripts', () => {
  const bash = (script: string, env: Record<string, string>) =>
    execFileSync('bash', ['-c', shellSafeScript(script)], {
      env: { PATH: process.env.PATH, ...env },
      encoding: 'utf8',
    });

  it('finds references and rejects other expressions', () => {
    expect(scanReferences('a ${{ units.db.outputs.url }} b ${{secrets.X}}')).toEqual({
      refs: [{ unit: 'db', key: 'url', text: '${{ units.db.outputs.url }}' }],
      bad: ['${{secrets.X}}'],
      each: [],
    });
  });

  it('passes hostile values as data in every quoting context', () => {
    const v = referenceVariable({ unit: 'db', key: 'url' });
    const hostile = '$(touch /tmp/nyl-pwned-unit); `id`; echo "x" \'y\' \\ *';
    const out = bash(
      'printf "%s|" ${{ units.db.outputs.url }}; printf "%s|" "q ${{ units.db.outputs.url }}"; printf "%s|" \'s ${{ units.db.outputs.url }}\'',
      { [v]: hostile },
    );
    expect(out).toBe(`${hostile}|q ${hostile}|s ${hostile}|`);
  });
});

describe('NYL_OUTPUT files', () => {
  it('reads key=value and heredoc values, and rejects malformed lines', () => {
    expect(parseOutputFile('a=1\nb=x=y\n\nc<<EOF\nline1\nline2\nEOF\n')).toEqual({
      outputs: { a: '1', b: 'x=y', c: 'line1\nline2' },
    });
    expect(parseOutputFile('ok=1\nnot a pair\n').error).toMatch(/line 2 is not key=value/);
    expect(parseOutputFile('c<<EOF\nx\n').error).toMatch(/no closing EOF/);
  });
});

describe('transition messages', () => {
  it('follow the seed: subject with counts, units as JSON, lists in flow style', () => {
    const msg = transitionMessage({
      operation: 'reconcile',
      environment: 'dev',
      units: new Map([
        ['database', { result: 'imported', executionKey: 'sha256:ab', run: 'r1' }],
        ['migrate', { result: 'uncertain', reason: 'why' }],
      ]),
      results: ['imported', 'uncertain'],
      lists: [
        ['recovered', ['migrate']],
        ['imported', ['database']],
        ['driftRepaired', []],
      ],
    });
    expect(msg).toBe(
      'nyl: reconcile dev (1 imported, 1 uncertain)\n\nunits:\n' +
        '  database: {"executionKey":"sha256:ab","result":"imported","run":"r1"}\n' +
        '  migrate: {"reason":"why","result":"uncertain"}\n' +
        'recovered: [migrate]\nimported: [database]\n',
    );
    expect(countsText(['current', 'executed', 'current', 'failed'])).toBe('1 executed, 1 failed, 2 current');
  });
});

describe('secret masking', () => {
  const m = Masker.fromEnv({
    DEPLOY_TOKEN: 'hunter22',
    DB_PASSWORD: 'pa"55\\word',
    HOME: '/root',
    SHORT_KEY: 'abc',
    PRIVATE_KEY: 'line-one-of-key\nline-two-of-key',
  });
  it('hides values of secret-looking variables, not other ones, not short ones', () => {
    expect(m.mask('token=hunter22 home=/root abc')).toBe('token=*** home=/root abc');
  });
  it('hides them as JSON writes them, and multi-line ones line by line', () => {
    expect(m.mask(JSON.stringify({ pw: 'pa"55\\word' }))).toBe('{"pw":"***"}');
    expect(m.mask('-----\nline-two-of-key\n')).toBe('-----\n***\n');
  });
  it('hides the part of a secret a cut left at either end of a piece', () => {
    expect(m.maskPiece('ter22 and more')).toBe('*** and more');
    expect(m.maskPiece('and more hunt')).toBe('and more ***');
    expect(m.maskPiece('r22 is too short to tell')).toBe('r22 is too short to tell');
  });
});
