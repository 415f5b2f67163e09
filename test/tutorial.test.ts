/**
 * docs/tutorial.md runs: every terminal block in the reader's terminal, in order, with the built
 * `nyl` on PATH; every file block written; every github.com event simulated — a bare repository
 * for the repository, the fake GitHub API for pull request comments, Deployments and the Actions
 * jobs, and the workflows `nyl init` wrote run job by job through the built action bundles as a
 * runner runs them (a runner that dies: nyl and its tools SIGKILLed, no post step). Every output
 * and file excerpt the page shows is checked against what ran (test/helpers/tutorial-doc.ts says
 * how); a block the test cannot run or check fails it. The job whose runner dies has fast
 * heartbeats (NYL_HEARTBEAT_INTERVAL), as in the other tests that kill a runner; the page gives
 * the real timings.
 */
import { appendFileSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { COPIED, excerptProblem, type Item, matchExcerpt, normalize, readTutorial } from './helpers/tutorial-doc.js';
import { Session } from './helpers/tutorial-session.js';

const PAGE = resolve(__dirname, '../docs/tutorial.md');
const REPO_URL = 'https://github.com/your-name/hello-nyl.git';

let session: Session | undefined;
afterAll(async () => {
  await session?.gh.close();
});

const where = (item: Item) => `docs/tutorial.md line ${item.line}`;

/** NYL_TUTORIAL_TRANSCRIPT=FILE: what each step printed, for whoever updates the page's outputs. */
let since = Date.now();
function transcribe(item: Item, output: string): void {
  const file = process.env.NYL_TUTORIAL_TRANSCRIPT;
  if (file) appendFileSync(file, `=== ${where(item)} (${Date.now() - since} ms) ===\n${output}\n`);
  since = Date.now();
}

/** `=> dev: success, prod: lost` at the end of a github event: the results its jobs must have. */
function expectedResults(event: string): { event: string; results?: Record<string, string> } {
  const [what = '', want] = event.split('=>').map((s) => s.trim());
  if (!want) return { event: what };
  const results = Object.fromEntries(want.split(',').map((p) => p.split(':').map((s) => s.trim()) as [string, string]));
  return { event: what, results };
}

/**
 * A command with the run ids and tokens the reader copied from an output above replaced by the
 * ones this run printed there; one the page never showed is an error (the reader could not copy it).
 */
function pasted(item: Item, text: string, copied: Map<string, string>): string {
  return text.replace(COPIED, (v) => {
    const now = copied.get(v);
    if (!now) throw new Error(`${where(item)}: ${v} is in no output shown above, so a reader cannot copy it`);
    return now;
  });
}

/** A ```text exact block: the whole output, ids and times aside. */
function exactly(shown: string, printed: string): ReturnType<typeof matchExcerpt> {
  const lines = (t: string) => t.trimEnd().split('\n').map(normalize).join('\n');
  if (lines(shown) !== lines(printed)) return { problem: 'the output is not this, all of it', copied: new Map() };
  return matchExcerpt(shown, printed);
}

describe('docs/tutorial.md', () => {
  it('runs from an empty repository to deploys of dev and prod, a runner that dies and the run that takes over', async () => {
    const items = readTutorial(readFileSync(PAGE, 'utf8'));
    session = new Session(REPO_URL, 'your-name/hello-nyl', { NYL_HEARTBEAT_INTERVAL: '300ms' });
    await session.start();
    const s = session;
    let last: { item: Item; output: string } | undefined;
    const copied = new Map<string, string>();
    for (const item of items) {
      if (item.kind === 'shell') {
        const r = await s.shell(pasted(item, item.code, copied));
        expect(r.code, `${where(item)}: exit code of\n${item.code}\nwhich printed\n${r.output}`).toBe(item.exit);
        last = { item, output: r.output };
        transcribe(item, r.output);
      } else if (item.kind === 'file') s.file(item);
      else if (item.kind === 'excerpt') {
        const text = readFileSync(join(s.cwd(), item.path), 'utf8');
        const problem = excerptProblem(item.content, text);
        expect(problem, `${where(item)}: not an excerpt of ${item.path}:\n${text}`).toBeUndefined();
      } else if (item.kind === 'github') {
        const { event, results } = expectedResults(pasted(item, item.event, copied));
        const r = await s.github(event);
        transcribe(item, `${JSON.stringify(r.results)}\n${r.output}`);
        if (results) expect(r.results, `${where(item)}: the jobs of ${event}\n${r.output}`).toEqual(results);
        last = { item, output: r.output };
      } else {
        if (!last) throw new Error(`${where(item)}: an output block before anything ran`);
        const { problem, copied: now } = item.exact
          ? exactly(item.content, last.output)
          : matchExcerpt(item.content, last.output);
        for (const [shown, printed] of now) copied.set(shown, printed);
        expect(
          problem,
          `${where(item)}: not what ${where(last.item)} printed:\n--- printed ---\n${last.output}\n--- shown ---\n${item.content}`,
        ).toBeUndefined();
      }
    }
    // The page ends with dev and prod deployed: GitHub's latest successful deployment of each
    // names main's last commit.
    const main = s.gh.main();
    expect({ dev: s.gh.fake.deployedSha('dev'), prod: s.gh.fake.deployedSha('prod') }).toEqual({
      dev: main,
      prod: main,
    });
  }, 120_000);
});

describe('the tutorial reader', () => {
  it('refuses a block it would neither run nor check, and a directive without its block', () => {
    expect(() => readTutorial('Hi\n\n```yaml\na: 1\n```\n')).toThrow(
      /line 3: a ```yaml block the test neither runs nor checks/,
    );
    expect(() => readTutorial('```python\nprint(1)\n```\n')).toThrow(/line 1: a ```python block/);
    expect(() => readTutorial('<!-- file: a.txt -->\n\nno block\n')).toThrow(
      /line 1: the file directive needs a code block/,
    );
    expect(() => readTutorial('<!-- frobnicate: x -->\n```sh\ntrue\n```\n')).toThrow(/unknown directive frobnicate/);
    expect(() => readTutorial('```sh\ntrue\n')).toThrow(/not closed/);
    expect(() => readTutorial('<!-- a note to editors -->\n')).toThrow(/line 1: an HTML comment that is no directive/);
    expect(
      readTutorial(
        '1. Do:\n\n   ```sh exit=2\n   false\n   ```\n\n<!-- github: merge x => dev: success -->\n\n```text exact\nok\n```\n',
      ),
    ).toEqual([
      { kind: 'shell', line: 3, code: 'false\n', exit: 2 },
      { kind: 'github', line: 7, event: 'merge x => dev: success' },
      { kind: 'output', line: 9, content: 'ok\n', exact: true },
    ]);
  });

  it('an output the page shows must be an excerpt of what ran: ids and times may differ, the words may not', () => {
    const printed = [
      'UNIT      KIND     RESULT    DETAIL',
      'database  Command  executed',
      'site      Command  executed',
      '',
      '  run:      01a23150-0f56-77f6-b319-ec6af5f71bb7',
      '  source:   1254a4a79786a5df610b98191d915b5519b82c1e',
    ].join('\n');
    const shown = (lines: string[]) => `${lines.join('\n')}\n`;
    expect(excerptProblem(shown(['database  Command  executed', 'site  Command  executed']), printed)).toBeUndefined();
    expect(
      excerptProblem(
        shown(['UNIT KIND RESULT DETAIL', '…', '  run:      01a2dd00-0000-7000-8000-000000000000']),
        printed,
      ),
    ).toBeUndefined();
    expect(excerptProblem(shown(['site      Command  exec…']), printed)).toBeUndefined();
    expect(excerptProblem(shown(['site      Command  failed']), printed)).toMatch(/not in the output/);
    expect(excerptProblem(shown(['UNIT KIND RESULT DETAIL', 'site Command executed']), printed)).toMatch(
      /do not follow one another/,
    );
    expect(excerptProblem(shown(['site Command executed', 'database Command executed']), printed)).toMatch(
      /do not follow one another/,
    );
    expect(excerptProblem(shown(['site Command executed', '…', 'database Command executed']), printed)).toMatch(
      /not in the output \(after line 4\): "database Command executed"/,
    );
    // The run id the page shows stands for the one printed in its place: a later command copies it.
    const { copied } = matchExcerpt(shown(['  run:      01a2dd00-0000-7000-8000-000000000000']), printed);
    expect(copied).toEqual(new Map([['01a2dd00-0000-7000-8000-000000000000', '01a23150-0f56-77f6-b319-ec6af5f71bb7']]));
    const item: Item = { kind: 'shell', line: 9, code: '', exit: 0 };
    expect(pasted(item, 'nyl runs logs -e dev 01a2dd00-0000-7000-8000-000000000000', copied)).toBe(
      'nyl runs logs -e dev 01a23150-0f56-77f6-b319-ec6af5f71bb7',
    );
    expect(() => pasted(item, 'nyl runs logs -e dev 01a2ffff-0000-7000-8000-000000000000', copied)).toThrow(
      /line 9: 01a2ffff-0000-7000-8000-000000000000 is in no output shown above/,
    );
    // An exact block is all of the output.
    expect(exactly(shown(['UNIT KIND RESULT DETAIL']), printed).problem).toBe('the output is not this, all of it');
    expect(exactly(`${printed}\n`, printed.replace('1254a4a7', '99999999')).problem).toBeUndefined();
  });
});
