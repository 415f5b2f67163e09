/**
 * Codes and docs agree: every NYL-* code the source can print is documented in docs/errors.md
 * with its exit code and its fix, and every code documented there is one the source prints.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = resolve(__dirname, '..');
const CODE = /NYL-[A-Z]+(?:-[A-Z]+)*/g;

function sources(dir: string): string[] {
  return readdirSync(dir).flatMap((n) => {
    const p = join(dir, n);
    return statSync(p).isDirectory() ? sources(p) : p.endsWith('.ts') ? [p] : [];
  });
}

/** `NYL-CODE` is the placeholder comments use for the shape of a problem. */
const emitted = new Set(
  sources(join(ROOT, 'src'))
    .flatMap((f) => readFileSync(f, 'utf8').match(CODE) ?? [])
    .filter((c) => c !== 'NYL-CODE'),
);
const doc = readFileSync(join(ROOT, 'docs/errors.md'), 'utf8');
/** The summary table at the top: every code with its severity and exit. */
const summaryTable = doc.slice(0, doc.indexOf('\n## '));

/** The section of docs/errors.md headed `### CODE`, up to the next heading. */
function section(code: string): string | undefined {
  const at = doc.indexOf(`\n### ${code}\n`);
  if (at < 0) return undefined;
  const rest = doc.slice(at + 5 + code.length);
  const end = rest.search(/\n#{2,3} /);
  return end < 0 ? rest : rest.slice(0, end);
}

/** A row of a table in docs/errors.md whose first cell is the code. */
function row(code: string, text = doc): string | undefined {
  return text.split('\n').find((l) => l.startsWith(`| \`${code}\``));
}

describe('docs/errors.md', () => {
  it.each([...emitted].sort())('documents %s with its exit code and fix', (code) => {
    const s = section(code);
    const summary =
      row(code, summaryTable) ?? (code.startsWith('NYL-CONFIG-') ? row('NYL-CONFIG-*', summaryTable) : undefined);
    expect(summary, `${code} in the summary table`).toMatch(
      /(error|warning|annotation)[^|]*(· \d|step fails|\(warning\))/,
    );
    if (s) {
      expect(s, `${code}: severity and exit`).toMatch(
        /^\s*(error|warning|annotation)[^\n]*(exit \d|step fails|warning)/,
      );
      expect(s, `${code}: a fix`).toMatch(/fix/i);
    } else {
      // The configuration codes share one table whose rows carry the fix, under "Errors with exit 1".
      expect(code, `${code} has no ### section`).toMatch(/^NYL-(CONFIG-|SOURCE-MISSING|ENV-UNKNOWN)/);
      expect(doc).toMatch(/## Configuration\n\nErrors with exit 1/);
      expect(row(code), `${code} in the configuration table`).toMatch(/\|[^|]+\|[^|]+\|\s*\S/);
    }
  });

  it('lists no code the source never prints', () => {
    const documented = new Set(doc.match(CODE) ?? []);
    const families = ['NYL-CONFIG', 'NYL-CODE'];
    const stale = [...documented].filter((c) => !emitted.has(c) && !families.includes(c));
    expect(stale).toEqual([]);
  });
});
