/**
 * `nyl site` in a real browser: Debian's Chromium (/usr/bin/chromium, skipped when there is none)
 * driven by playwright-core, the pages opened from file:// URLs as a person would open the folder.
 * Per page kind (overview, an environment, a run): no console error or page error; what needs a
 * person is in the first viewport on a phone and a desktop; each state is where a person looks for
 * it; every internal link resolves; axe-core finds no serious or critical violation in light or dark.
 * A screenshot of each page kind is kept under test-results/site/ for review.
 */
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import type { AxeResults } from 'axe-core';
import { type Browser, chromium, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type SiteState, sharedSiteState } from './helpers/site-state.js';

const CHROMIUM = '/usr/bin/chromium';
const HAS_CHROMIUM = existsSync(CHROMIUM);
if (!HAS_CHROMIUM) console.log(`skipping site browser tests: ${CHROMIUM} is missing (apt-get install chromium)`);
const suite = HAS_CHROMIUM ? describe : describe.skip;

/** Flags this machine needs: without the background-networking ones its connections are refused. */
const ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];
const AXE = join(dirname(createRequire(import.meta.url).resolve('axe-core')), 'axe.min.js');
const SHOTS = fileURLToPath(new URL('../test-results/site/', import.meta.url));
const PHONE = { width: 375, height: 800 };
const DESKTOP = { width: 1280, height: 800 };
const SCHEMES = ['light', 'dark'] as const;

type Kind = 'overview' | 'environment' | 'run';

/** A page opened in a fresh context, with every console error and page error it raised. */
async function open(browser: Browser, file: string, viewport: { width: number; height: number }, scheme = 'light') {
  const context = await browser.newContext({ viewport, colorScheme: scheme as 'light' | 'dark' });
  const page = await context.newPage();
  const errors: string[] = [];
  page.on('console', (m) => {
    if (m.type() === 'error') errors.push(`console: ${m.text()}`);
  });
  page.on('pageerror', (e) => errors.push(`pageerror: ${e.message}`));
  page.on('requestfailed', (r) => errors.push(`request failed: ${r.url()} ${r.failure()?.errorText ?? ''}`));
  await page.goto(pathToFileURL(file).href, { waitUntil: 'load' });
  return { page, errors, close: () => context.close() };
}

/** axe-core's serious and critical violations on the page, one line each. */
async function axeViolations(page: Page): Promise<string[]> {
  await page.addScriptTag({ path: AXE });
  const results = await page.evaluate(() =>
    (globalThis as unknown as { axe: { run: (o: object) => Promise<AxeResults> } }).axe.run({
      resultTypes: ['violations'],
    }),
  );
  return results.violations
    .filter((v) => v.impact === 'serious' || v.impact === 'critical')
    .flatMap((v) => v.nodes.map((n) => `${v.impact} ${v.id}: ${n.target.join(' ')} — ${n.failureSummary ?? v.help}`));
}

suite('nyl site in a browser', () => {
  let state: SiteState;
  let browser: Browser;
  let pages: Record<Kind, string>;

  beforeAll(async () => {
    state = await sharedSiteState();
    const failed = state.devRuns.find((r) => r.state === 'failed');
    expect(failed).toBeDefined();
    pages = {
      overview: join(state.out, 'index.html'),
      environment: join(state.out, 'env/dev/index.html'),
      run: join(state.out, `env/dev/run/${failed?.run}.html`),
    };
    mkdirSync(SHOTS, { recursive: true });
    browser = await chromium.launch({ executablePath: CHROMIUM, args: ARGS });
  }, 240_000);

  afterAll(async () => {
    await browser?.close();
  });

  // One opening per page kind, width and scheme serves three checks: what the browser reports,
  // the screenshot, and axe (opening a page again per check cost a third of this file's time).
  it.each(['overview', 'environment', 'run'] as Kind[])(
    '%s: no console or page error, no serious or critical axe-core violation, at a phone and a desktop width, light and dark; screenshots kept',
    async (kind) => {
      const violations: string[] = [];
      for (const viewport of [PHONE, DESKTOP]) {
        for (const scheme of SCHEMES) {
          const { page, errors, close } = await open(browser, pages[kind], viewport, scheme);
          await page.screenshot({ path: join(SHOTS, `${kind}-${viewport.width}-${scheme}.png`), fullPage: true });
          expect(errors, `${kind} ${viewport.width} ${scheme}`).toEqual([]);
          await page.emulateMedia({ colorScheme: scheme });
          violations.push(...(await axeViolations(page)).map((v) => `${viewport.width} ${scheme}: ${v}`));
          await close();
        }
      }
      expect(violations).toEqual([]);
    },
    120_000,
  );

  it('"Needs a person" is in the first viewport at 375×800 and 1280×800', async () => {
    for (const viewport of [PHONE, DESKTOP]) {
      const { page, close } = await open(browser, pages.overview, viewport);
      const heading = page.getByRole('heading', { name: 'Needs a person' });
      await expect.poll(() => heading.isVisible()).toBe(true);
      const box = await heading.boundingBox();
      await close();
      expect(box, `${viewport.width}`).not.toBeNull();
      expect(box?.y ?? Number.POSITIVE_INFINITY, `${viewport.width}`).toBeGreaterThanOrEqual(0);
      expect(box?.y ?? Number.POSITIVE_INFINITY, `${viewport.width}`).toBeLessThan(viewport.height);
    }
  });

  it('each state is on the page where a person looks for it, and visible', async () => {
    const visible = async (page: Page, selector: string, text: string) => {
      const el = page.locator(selector).filter({ hasText: text }).first();
      return (await el.count()) > 0 && (await el.isVisible());
    };
    // The overview: what waits on a person under "Needs a person", each unit named.
    let { page, close } = await open(browser, pages.overview, PHONE);
    const needs = page.locator('#needs');
    for (const [state, words, env, unit] of [
      ['failed', 'failed', 'dev', 'bad'],
      ['uncertain', 'uncertain', 'dev', 'slow'],
      ['awaiting-approval', 'awaiting approval', 'prod', 'drifty'],
      ['drifted', 'drifted', 'dev', 'drifty'],
      ['held', 'held', 'dev', 'keep'],
    ] as const) {
      expect(await visible(page, `#needs .st-${state}`, words), `overview: ${state}`).toBe(true);
      const row = needs.locator('tr').filter({ has: page.locator(`.st-${state}`) });
      expect(await row.textContent(), `overview: ${state}`).toContain(`${env}unit ${unit}`);
    }
    expect(await needs.textContent()).not.toContain('unit web');
    await close();
    // The environment page: each unit's row carries its state.
    ({ page, close } = await open(browser, pages.environment, PHONE));
    for (const [row, state] of [
      ['u-web', 'current'],
      ['u-bad', 'failed'],
      ['u-slow', 'uncertain'],
      ['u-keep', 'held'],
      ['u-drifty', 'drifted'],
    ]) {
      const cell = page.locator(`#${row} .st-${state}`).first();
      expect(await cell.count(), `environment: ${row} ${state}`).toBe(1);
      await cell.scrollIntoViewIfNeeded();
      expect(await cell.isVisible(), `environment: ${row} ${state}`).toBe(true);
    }
    // Its runs, newest first: each state in the runs table.
    const runStates = await page.locator('table').last().locator('tbody tr .st').allTextContents();
    expect(runStates).toEqual(['failed', 'superseded', 'succeeded', 'lost', 'cancelled', 'succeeded']);
    await close();
    // The failed run's page: the run's state, and its failed and uncertain units.
    ({ page, close } = await open(browser, pages.run, PHONE));
    expect(await visible(page, '.st-failed', 'failed'), 'run: failed').toBe(true);
    for (const [unit, state] of [
      ['bad', 'failed'],
      ['slow', 'uncertain'],
    ]) {
      const row = page.locator('tr').filter({ has: page.locator(`a[href="../index.html#u-${unit}"]`) });
      expect(await row.locator(`.st-${state}`).isVisible(), `run: unit ${unit} ${state}`).toBe(true);
    }
    await close();
  });

  it('every internal link of each opened page resolves to a file (and its #fragment)', async () => {
    const broken: string[] = [];
    let followed = 0;
    for (const kind of ['overview', 'environment', 'run'] as Kind[]) {
      const { page, close } = await open(browser, pages[kind], DESKTOP);
      const links = page.locator('a[href]');
      for (let i = 0, n = await links.count(); i < n; i++) {
        const href = (await links.nth(i).getAttribute('href')) ?? '';
        if (/^https?:\/\//.test(href)) continue;
        const url = new URL(href, page.url());
        if (url.protocol !== 'file:') {
          broken.push(`${kind}: ${href} is not a file link`);
          continue;
        }
        const target = fileURLToPath(url);
        followed++;
        if (!target.startsWith(state.out) || !existsSync(target)) broken.push(`${kind}: ${href} (no file)`);
        else if (url.hash && !readFileSync(target, 'utf8').includes(`id="${decodeURIComponent(url.hash.slice(1))}"`))
          broken.push(`${kind}: ${href} (no ${url.hash})`);
      }
      await close();
    }
    expect(followed).toBeGreaterThan(3);
    expect(broken).toEqual([]);
  });
});
