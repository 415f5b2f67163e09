import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { type CliResult, makeRepo, nyl, writeFiles } from './helpers/repo.js';

/** Lines of a YAML file, numbered from 1 in the comments of each case. */
const yaml = (...lines: string[]) => `${lines.join('\n')}\n`;

const PLAN = ['plan', '-e', 'dev', '--local'];

interface Rendered {
  severity: string;
  code: string;
  subject?: string;
  message: string;
  fix?: string;
}

/** Problems as `renderProblems` prints them: header, indented explanation, `  fix: …`. */
function parseProblems(stderr: string): Rendered[] {
  const text = stderr.trim();
  if (!text) return [];
  return text.split(/\n\n(?=(?:error|warning) NYL-)/).map((block) => {
    const [head = '', ...rest] = block.split('\n');
    const m = /^(error|warning) (NYL-[A-Z-]+)(?: \((.*)\))?$/.exec(head);
    if (!m) throw new Error(`not a problem header: ${JSON.stringify(head)}\n${stderr}`);
    const fixLine = rest.find((l) => l.startsWith('  fix: '));
    return {
      severity: m[1] as string,
      code: m[2] as string,
      subject: m[3],
      message: rest
        .filter((l) => l !== fixLine)
        .map((l) => l.replace(/^ {2}/, ''))
        .join('\n'),
      fix: fixLine?.slice('  fix: '.length),
    };
  });
}

interface Expected {
  code: string;
  subject: string;
  /** Substrings (or patterns) the explanation must contain. */
  message: (string | RegExp)[];
  fix: (string | RegExp)[];
}

function expectNoStackTrace(r: CliResult): void {
  for (const out of [r.stderr, r.stdout]) {
    expect(out).not.toMatch(/^ {4}at /m);
    expect(out).not.toMatch(/^\s*at .*:\d+:\d+\)?$/m);
    expect(out).not.toMatch(/\b\w*Error:/);
    expect(out).not.toContain('NYL-INTERNAL');
  }
}

function contains(text: string | undefined, want: string | RegExp): void {
  if (typeof want === 'string') expect(text).toContain(want);
  else expect(text).toMatch(want);
}

/** Exit 1, nothing on stdout, exactly the expected problems on stderr, no stack trace. */
function expectProblems(r: CliResult, expected: Expected[]): Rendered[] {
  expect(r.code, r.stderr).toBe(1);
  expect(r.stdout).toBe('');
  expectNoStackTrace(r);
  for (const e of expected) expect(r.stderr).toContain(`error ${e.code} (${e.subject})\n`);
  const got = parseProblems(r.stderr);
  const key = (p: { code: string; subject?: string }) => `${p.code} (${p.subject})`;
  // Every problem once: no duplicates, nothing unexpected.
  expect(got.map(key).sort()).toEqual(expected.map(key).sort());
  for (const e of expected) {
    const p = got.find((g) => key(g) === key(e)) as Rendered;
    expect(p.severity).toBe('error');
    expect(p.message.trim()).not.toBe('');
    for (const m of e.message) contains(p.message, m);
    expect(p.fix, `${key(e)} has a fix line`).toBeDefined();
    for (const f of e.fix) contains(p.fix, f);
  }
  return got;
}

async function planConfig(config: string, args = PLAN): Promise<CliResult> {
  const dir = makeRepo({ 'nyl.yaml': config });
  return nyl(dir, args);
}

const DEV = ['kind: Environment', 'name: dev', '---'];

describe('YAML syntax errors', () => {
  it('reports bad indentation on the misaligned line', async () => {
    const r = await planConfig(
      yaml(
        ...DEV, // 1-3
        'kind: Command', // 4
        'name: a', // 5
        'spec:', // 6
        '    run: echo hi', // 7
        '  idempotent: true', // 8: not aligned with run
      ),
    );
    expectProblems(r, [
      {
        code: 'NYL-CONFIG-SYNTAX',
        subject: 'nyl.yaml:8',
        message: ['YAML syntax error'],
        fix: ['correct the YAML at nyl.yaml line 8'],
      },
    ]);
  });

  it('reports a duplicate key on its line', async () => {
    const r = await planConfig(
      yaml(
        ...DEV, // 1-3
        'kind: Command', // 4
        'name: a', // 5
        'name: b', // 6
        'spec:', // 7
        '  run: echo hi', // 8
      ),
    );
    expectProblems(r, [
      {
        code: 'NYL-CONFIG-SYNTAX',
        subject: 'nyl.yaml:6',
        message: ['YAML syntax error', 'unique'],
        fix: ['nyl.yaml line 6'],
      },
    ]);
  });

  it('reports an unclosed quote on the line where the quote opens', async () => {
    const r = await planConfig(
      yaml(
        ...DEV, // 1-3
        'kind: Command', // 4
        'name: a', // 5
        'spec:', // 6
        '  run: "echo hi', // 7: never closed
        '---', // 8
        'kind: Command', // 9
        'name: b', // 10
        'spec:', // 11
        '  run: echo b', // 12
      ),
    );
    expectProblems(r, [
      {
        code: 'NYL-CONFIG-SYNTAX',
        subject: 'nyl.yaml:7',
        message: ['YAML syntax error', /quote/],
        fix: ['correct the YAML at nyl.yaml line 7'],
      },
    ]);
  });
});

describe('kinds', () => {
  it('rejects an unknown kind and a missing kind, listing the kinds', async () => {
    const r = await planConfig(
      yaml(
        ...DEV, // 1-3
        'kind: Comand', // 4
        'name: a', // 5
        'spec:', // 6
        '  run: echo a', // 7
        '---', // 8
        'name: b', // 9: no kind
        'spec:', // 10
        '  run: echo b', // 11
      ),
    );
    const kinds = 'set kind to one of Environment, EnvironmentGroup, Command';
    expectProblems(r, [
      { code: 'NYL-CONFIG-KIND', subject: 'nyl.yaml:4 kind', message: ['unknown kind "Comand"'], fix: [kinds] },
      { code: 'NYL-CONFIG-KIND', subject: 'nyl.yaml:9 kind', message: ['document has no kind'], fix: [kinds] },
    ]);
  });
});

describe('unknown fields', () => {
  it('names the key’s own line and full path, and lists the allowed fields', async () => {
    const r = await planConfig(
      yaml(
        ...DEV, // 1-3
        'kind: Command', // 4
        'name: a', // 5
        'timout: 5m', // 6
        'spec:', // 7
        '  run: echo a', // 8
        '  rnu: echo again', // 9
      ),
    );
    expectProblems(r, [
      {
        code: 'NYL-CONFIG-FIELD',
        subject: 'nyl.yaml:6 timout',
        message: ['Command a: unknown field "timout"'],
        fix: [
          'remove timout',
          'allowed here: kind, name, description, environments, needs, timeout, forEach, retries, spec',
        ],
      },
      {
        code: 'NYL-CONFIG-FIELD',
        subject: 'nyl.yaml:9 spec.rnu',
        message: ['Command a: unknown field "rnu"'],
        fix: ['remove spec.rnu', 'allowed here: run, idempotent, check, inspect, retryable, destroy'],
      },
    ]);
  });
});

describe('durations', () => {
  it('rejects `10 minutes` and `5x`, each reported once', async () => {
    const r = await planConfig(
      yaml(
        ...DEV, // 1-3
        'kind: Command', // 4
        'name: a', // 5
        'timeout: 10 minutes', // 6
        'spec:', // 7
        '  run: echo a', // 8
        '---', // 9
        'kind: Command', // 10
        'name: b', // 11
        'timeout: 5x', // 12
        'spec:', // 13
        '  run: echo b', // 14
      ),
    );
    const fix = 'set timeout to a duration such as 30s, 10m or 1h30m';
    expectProblems(r, [
      {
        code: 'NYL-CONFIG-DURATION',
        subject: 'nyl.yaml:6 timeout',
        message: ['Command a: timeout "10 minutes" is not a duration'],
        fix: [fix],
      },
      {
        code: 'NYL-CONFIG-DURATION',
        subject: 'nyl.yaml:12 timeout',
        message: ['Command b: timeout "5x" is not a duration'],
        fix: [fix],
      },
    ]);
  });
});

describe('retries', () => {
  it('bounds limit to 0..10 and backoff to a duration of at most 5m, each on its own line', async () => {
    const r = await planConfig(
      yaml(
        ...DEV, // 1-3
        'kind: Command', // 4
        'name: a', // 5
        'retries:', // 6
        '  limit: 11', // 7
        '  backoff: 10m', // 8
        'spec:', // 9
        '  run: echo a', // 10
        '---', // 11
        'kind: Command', // 12
        'name: b', // 13
        'retries:', // 14
        '  limit: two', // 15
        '  backoff: soon', // 16
        '  wait: 1s', // 17
        'spec:', // 18
        '  run: echo b', // 19
        '---', // 20
        'kind: Command', // 21
        'name: c', // 22
        'retries: {backoff: 1s}', // 23
        'spec:', // 24
        '  run: echo c', // 25
      ),
    );
    const limit = 'must be a whole number from 0 to 10';
    expectProblems(r, [
      {
        code: 'NYL-CONFIG-INVALID',
        subject: 'nyl.yaml:7 retries.limit',
        message: [`Command a: retries.limit: ${limit}`],
        fix: ['correct retries.limit in nyl.yaml at line 7'],
      },
      {
        code: 'NYL-CONFIG-INVALID',
        subject: 'nyl.yaml:8 retries.backoff',
        message: ['Command a: retries.backoff: must be at most 5m'],
        fix: ['line 8'],
      },
      {
        code: 'NYL-CONFIG-INVALID',
        subject: 'nyl.yaml:15 retries.limit',
        message: [`Command b: retries.limit: ${limit}`],
        fix: ['line 15'],
      },
      {
        code: 'NYL-CONFIG-DURATION',
        subject: 'nyl.yaml:16 retries.backoff',
        message: ['Command b: retries.backoff "soon" is not a duration'],
        fix: ['set retries.backoff to a duration such as 30s, 10m or 1h30m'],
      },
      {
        code: 'NYL-CONFIG-FIELD',
        subject: 'nyl.yaml:17 retries.wait',
        message: ['Command b: unknown field "wait"'],
        fix: ['allowed here: limit, backoff'],
      },
      {
        code: 'NYL-CONFIG-INVALID',
        subject: 'nyl.yaml:23 retries.limit',
        message: ['Command c: required field retries.limit is missing'],
        fix: ['add retries.limit to the Command document'],
      },
    ]);
  });
});

describe('duplicate units', () => {
  it('in one file, naming the first definition', async () => {
    const r = await planConfig(
      yaml(
        ...DEV, // 1-3
        'kind: Command', // 4
        'name: web', // 5
        'spec:', // 6
        '  run: echo 1', // 7
        '---', // 8
        'kind: Command', // 9
        'name: web', // 10
        'spec:', // 11
        '  run: echo 2', // 12
      ),
    );
    expectProblems(r, [
      {
        code: 'NYL-CONFIG-DUPLICATE',
        subject: 'nyl.yaml:10 name',
        message: ['unit web is defined twice (first at nyl.yaml:4)'],
        fix: ['rename or remove one of the two definitions of web'],
      },
    ]);
  });

  it('across two files of a --config directory, naming the first file and line', async () => {
    const dir = makeRepo({
      'conf/a.yaml': yaml(
        ...DEV, // 1-3
        'kind: Command', // 4
        'name: web', // 5
        'spec:', // 6
        '  run: echo a', // 7
      ),
      'conf/b.yaml': yaml(
        '# the same unit again', // 1
        'kind: Command', // 2
        'name: web', // 3
        'spec:', // 4
        '  run: echo b', // 5
      ),
    });
    const r = await nyl(dir, [...PLAN, '--config', 'conf']);
    expectProblems(r, [
      {
        code: 'NYL-CONFIG-DUPLICATE',
        subject: 'conf/b.yaml:3 name',
        message: ['unit web is defined twice (first at conf/a.yaml:4)'],
        fix: ['rename or remove one of the two definitions of web'],
      },
    ]);
  });
});

describe('references', () => {
  it('an unknown unit in a one-line spec.run names the reference’s line and field', async () => {
    const r = await planConfig(
      yaml(
        ...DEV, // 1-3
        'kind: Command', // 4
        'name: a', // 5
        'spec:', // 6
        '  run: curl "${{ units.nope.outputs.url }}"', // 7
      ),
    );
    expectProblems(r, [
      {
        code: 'NYL-CONFIG-REFERENCE',
        subject: 'nyl.yaml:7 spec.run',
        message: ['Command a: ${{ units.nope.outputs.url }} refers to unit nope, which is not defined'],
        fix: ['define a unit named nope', 'units: a'],
      },
    ]);
  });

  it('an unknown unit on the third line of a block script names that line', async () => {
    const r = await planConfig(
      yaml(
        ...DEV, // 1-3
        'kind: Command', // 4
        'name: a', // 5
        'spec:', // 6
        '  run: |', // 7
        '    echo start', // 8
        '    curl ${{ units.nope.outputs.url }}', // 9
      ),
    );
    expectProblems(r, [
      {
        code: 'NYL-CONFIG-REFERENCE',
        subject: 'nyl.yaml:9 spec.run',
        message: ['${{ units.nope.outputs.url }} refers to unit nope, which is not defined'],
        fix: ['define a unit named nope'],
      },
    ]);
  });

  it('an unknown unit in needs names the line of the entry', async () => {
    const r = await planConfig(
      yaml(
        ...DEV, // 1-3
        'kind: Command', // 4
        'name: a', // 5
        'needs: [nope]', // 6
        'spec:', // 7
        '  run: echo a', // 8
        '---', // 9
        'kind: Command', // 10
        'name: b', // 11
        'needs:', // 12
        '  - a', // 13
        '  - gone', // 14
        'spec:', // 15
        '  run: echo b', // 16
      ),
    );
    expectProblems(r, [
      {
        code: 'NYL-CONFIG-REFERENCE',
        subject: 'nyl.yaml:6 needs',
        message: ['Command a: needs unit nope, which is not defined'],
        fix: ['define a unit named nope or correct the name (units: a, b)'],
      },
      {
        code: 'NYL-CONFIG-REFERENCE',
        subject: 'nyl.yaml:14 needs',
        message: ['Command b: needs unit gone, which is not defined'],
        fix: ['define a unit named gone'],
      },
    ]);
  });

  it('rejects an unsupported expression such as ${{ secrets.X }}', async () => {
    const r = await planConfig(
      yaml(
        ...DEV, // 1-3
        'kind: Command', // 4
        'name: a', // 5
        'spec:', // 6
        '  run: echo ${{ secrets.X }}', // 7
      ),
    );
    expectProblems(r, [
      {
        code: 'NYL-CONFIG-REFERENCE',
        subject: 'nyl.yaml:7 spec.run',
        message: ['Command a: unsupported expression ${{ secrets.X }}'],
        fix: ['the only expression is ${{ units.<name>.outputs.<key> }}'],
      },
    ]);
  });

  it('rejects a dependency on a unit that is not selected for the environment', async () => {
    const r = await planConfig(
      yaml(
        ...DEV, // 1-3
        'kind: Environment', // 4
        'name: prod', // 5
        '---', // 6
        'kind: Command', // 7
        'name: db', // 8
        'environments: [prod]', // 9
        'spec:', // 10
        '  run: echo db', // 11
        '---', // 12
        'kind: Command', // 13
        'name: app', // 14
        'needs:', // 15
        '  - db', // 16
        'spec:', // 17
        '  run: echo app', // 18
      ),
    );
    // The subject names the unit whose needs entry is at line 16.
    expectProblems(r, [
      {
        code: 'NYL-CONFIG-REFERENCE',
        subject: 'nyl.yaml:16 needs',
        message: ['Command app depends on unit db, which is not part of environment dev'],
        fix: ['add dev to the environments of db, or remove the dependency'],
      },
    ]);
  });
});

describe('unit names', () => {
  it('rejects names that are not safe git ref components', async () => {
    const r = await planConfig(
      yaml(
        ...DEV, // 1-3
        'kind: Command', // 4
        'name: "bad name"', // 5
        'spec:', // 6
        '  run: echo 1', // 7
        '---', // 8
        'kind: Command', // 9
        'name: a..b', // 10
        'spec:', // 11
        '  run: echo 2', // 12
        '---', // 13
        'kind: Command', // 14
        'name: x.lock', // 15
        'spec:', // 16
        '  run: echo 3', // 17
      ),
    );
    const fix = 'rename it using letters, digits, ".", "_" and "-"';
    expectProblems(
      r,
      [
        [5, 'bad name'],
        [10, 'a..b'],
        [15, 'x.lock'],
      ].map(([line, name]) => ({
        code: 'NYL-CONFIG-NAME',
        subject: `nyl.yaml:${line} name`,
        message: [`name ${JSON.stringify(name)} must be a safe git ref component`],
        fix: [fix],
      })),
    );
  });
});

describe('dependency cycles', () => {
  it('names a -> b -> c -> a in order', async () => {
    const r = await planConfig(
      yaml(
        ...DEV, // 1-3
        'kind: Command', // 4
        'name: a', // 5
        'needs: [b]', // 6
        'spec:', // 7
        '  run: echo a', // 8
        '---', // 9
        'kind: Command', // 10
        'name: b', // 11
        'needs: [c]', // 12
        'spec:', // 13
        '  run: echo b', // 14
        '---', // 15
        'kind: Command', // 16
        'name: c', // 17
        'needs: [a]', // 18
        'spec:', // 19
        '  run: echo c', // 20
      ),
    );
    expectProblems(r, [
      {
        code: 'NYL-CONFIG-CYCLE',
        subject: 'nyl.yaml:6 needs',
        message: ['dependency cycle: a -> b -> c -> a'],
        fix: ['break the cycle'],
      },
    ]);
  });

  it('rejects a unit that needs itself', async () => {
    const r = await planConfig(
      yaml(
        ...DEV, // 1-3
        'kind: Command', // 4
        'name: a', // 5
        'needs:', // 6
        '  - a', // 7
        'spec:', // 8
        '  run: echo a', // 9
      ),
    );
    expectProblems(r, [
      {
        code: 'NYL-CONFIG-CYCLE',
        subject: 'nyl.yaml:7 needs',
        message: ['Command a depends on itself'],
        fix: ['remove a from its own needs and references'],
      },
    ]);
  });
});

describe('required fields', () => {
  it('reports a Command without spec.run', async () => {
    const r = await planConfig(
      yaml(
        ...DEV, // 1-3
        'kind: Command', // 4
        'name: a', // 5
        'spec:', // 6
        '  idempotent: true', // 7: the spec mapping, which lacks run
      ),
    );
    expectProblems(r, [
      {
        code: 'NYL-CONFIG-INVALID',
        subject: 'nyl.yaml:7 spec.run',
        message: ['Command a: required field spec.run is missing'],
        fix: ['add spec.run to the Command document'],
      },
    ]);
  });
});

describe('environments and sources', () => {
  it('rejects an unknown environment, listing the known ones', async () => {
    const r = await planConfig(yaml('kind: Environment', 'name: dev'), ['plan', '-e', 'prod', '--local']);
    expectProblems(r, [
      {
        code: 'NYL-ENV-UNKNOWN',
        subject: 'prod',
        message: ['environment prod is not defined in nyl.yaml'],
        fix: ['use one of: dev'],
      },
    ]);
  });

  it('asks to commit a nyl.yaml that is only in the working tree', async () => {
    const dir = makeRepo({ 'README.md': 'hello\n' });
    writeFiles(dir, { 'nyl.yaml': yaml('kind: Environment', 'name: dev') });
    const r = await nyl(dir, PLAN);
    expectProblems(r, [
      {
        code: 'NYL-CONFIG-MISSING',
        subject: 'nyl.yaml',
        message: ['nyl.yaml is not in the source commit', 'not the working tree'],
        fix: ['commit it', 'git add nyl.yaml && git commit'],
      },
    ]);
  });
});

/** Four documents, four different problems. */
const SEVERAL = yaml(
  ...DEV, // 1-3
  'kind: Comand', // 4
  'name: a', // 5
  '---', // 6
  'kind: Command', // 7
  'name: b', // 8
  'timeout: soon', // 9
  'spec:', // 10
  '  run: echo b', // 11
  '---', // 12
  'kind: Command', // 13
  'name: c', // 14
  'spec:', // 15
  '  run: echo c', // 16
  '  retries: 3', // 17
  '---', // 18
  'kind: Command', // 19
  'name: d/e', // 20
  'spec:', // 21
  '  run: echo d', // 22
);

describe('several problems', () => {
  it('reports every problem of a file, not just the first', async () => {
    const r = await planConfig(SEVERAL);
    expectProblems(r, [
      { code: 'NYL-CONFIG-KIND', subject: 'nyl.yaml:4 kind', message: ['unknown kind "Comand"'], fix: ['Command'] },
      {
        code: 'NYL-CONFIG-DURATION',
        subject: 'nyl.yaml:9 timeout',
        message: ['timeout "soon" is not a duration'],
        fix: ['30s'],
      },
      { code: 'NYL-CONFIG-FIELD', subject: 'nyl.yaml:17 spec.retries', message: ['"retries"'], fix: ['run'] },
      { code: 'NYL-CONFIG-NAME', subject: 'nyl.yaml:20 name', message: ['"d/e"'], fix: ['rename'] },
    ]);
  });

  it('--json prints one document with problems[] and exit 1', async () => {
    const dir = makeRepo({ 'nyl.yaml': SEVERAL });
    const r = await nyl(dir, [...PLAN, '--json']);
    expect(r.code).toBe(1);
    expect(r.stderr).toBe('');
    expectNoStackTrace(r);
    const doc = JSON.parse(r.stdout) as { exit: number; problems: Record<string, unknown>[] };
    expect(doc.exit).toBe(1);
    expect(Array.isArray(doc.problems)).toBe(true);
    for (const p of doc.problems)
      for (const k of ['code', 'subject', 'message', 'fix'])
        expect(typeof p[k], `${k} of ${JSON.stringify(p)}`).toBe('string');
    expect(doc.problems.map((p) => `${p.code} (${p.subject})`).sort()).toEqual(
      [
        'NYL-CONFIG-KIND (nyl.yaml:4 kind)',
        'NYL-CONFIG-DURATION (nyl.yaml:9 timeout)',
        'NYL-CONFIG-FIELD (nyl.yaml:17 spec.retries)',
        'NYL-CONFIG-NAME (nyl.yaml:20 name)',
      ].sort(),
    );
    const duration = doc.problems.find((p) => p.code === 'NYL-CONFIG-DURATION');
    expect(duration?.message).toContain('Command b: timeout "soon" is not a duration');
    expect(duration?.fix).toContain('set timeout to a duration');
  });
});

describe('outputs passed into scripts', () => {
  it('stay literal data: $(…), backticks, ; and quotes are never executed', async () => {
    const value = `$(touch pwned) \`touch pwned\`; touch pwned ' ; touch pwned ; ' " ; touch pwned ; "`;
    const dir = makeRepo({
      'nyl.yaml': yaml(
        ...DEV,
        'kind: Command',
        'name: a',
        'spec:',
        '  run: |',
        `    cat >> "$NYL_OUTPUT" <<'OUT'`,
        `    x=${value}`,
        '    OUT',
        '---',
        'kind: Command',
        'name: b',
        'spec:',
        '  run: |',
        '    echo ${{ units.a.outputs.x }} > unquoted.txt',
        '    echo "got: ${{ units.a.outputs.x }} end" > double.txt',
        `    echo 'got: \${{ units.a.outputs.x }} end' > single.txt`,
      ),
    });
    const r = await nyl(dir, ['reconcile', '-e', 'dev', '--local']);
    expect(r.code, `${r.stdout}\n${r.stderr}`).toBe(0);
    expectNoStackTrace(r);
    expect(existsSync(join(dir, 'pwned'))).toBe(false);
    const read = (f: string) => readFileSync(join(dir, f), 'utf8');
    expect(read('unquoted.txt')).toBe(`${value}\n`);
    expect(read('double.txt')).toBe(`got: ${value} end\n`);
    expect(read('single.txt')).toBe(`got: ${value} end\n`);
  });
});
