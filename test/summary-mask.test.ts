/**
 * A secret holding Markdown's special characters (`&`, `|`, `<`, `>`) never reaches a job summary:
 * the Markdown helpers mask before they escape (masking the escaped whole would miss it, and it
 * would render as itself), and a detail is masked before it is cut.
 */
import { describe, expect, it } from 'vitest';
import { code, inline } from '../src/actions/markdown.js';
import { siteSummary } from '../src/actions/site-summary.js';
import { masker } from '../src/core/util/mask.js';

const SECRET = 'p&ss|w0rd<x>';
masker.add(SECRET);

/** The forms a secret takes once escaped for Markdown or HTML. */
const escapedForms = (s: string) => [
  s,
  s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/\|/g, '\\|'),
  s.replace(/\|/g, '\\|'),
];

describe('job summary masking', () => {
  it('inline and code mask before they escape', () => {
    for (const out of [inline(`token ${SECRET} here`), code(`token ${SECRET}`)]) {
      for (const form of escapedForms(SECRET)) expect(out).not.toContain(form);
      expect(out).toContain('***');
    }
  });

  it('the site summary masks a long detail before it cuts it', () => {
    const detail = `${'x'.repeat(195)}${SECRET} and more`;
    const summary = siteSummary(
      {
        generatedAt: '2025-01-01T00:00:00Z',
        environments: [],
        attention: [{ environment: 'dev', state: 'failed', unit: 'a', detail }],
      },
      { folder: '/tmp/site', pages: 1, logs: true, outputs: true },
    );
    // Cut at 199 characters, the secret would have been halved (`p&ss`): masked first, nothing of it is left.
    expect(summary).not.toContain('p&amp;ss');
    expect(summary).not.toContain('p&ss');
    expect(summary).toContain(`${'x'.repeat(195)}***`);
  });
});
