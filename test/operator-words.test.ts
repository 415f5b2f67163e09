/**
 * The operator's words: help for every command and group, complete usage lines, fix lines that
 * work when pasted (with --local when the run was local), one `--json` shape for every command
 * (validated against the schema committed in schema/nyl.report.schema.json), and the edges of
 * inputs: values too large for the environment, NUL bytes, an unclosed expression, an alias bomb.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { reportJsonSchema, reportSchema } from '../src/cli/json.js';
import { command, commitFiles, ENV_DEV, makeRepo, nyl, parseTable, tempDir } from './helpers/repo.js';

const LOCAL = ['-e', 'dev', '--local'];

describe('help', () => {
  it.each([
    [['help', 'lease', 'break'], /^usage: nyl lease break -e ENV --reason TEXT \[--local\]/],
    [['lease', 'break', '--help'], /^usage: nyl lease break -e ENV --reason TEXT/],
    [['lease', '--help'], /^usage: nyl lease break …\n\ncommands:\n {2}lease break/],
    [['state', '--help'], /^usage: nyl state show … \| nyl state forget …/],
    [['help', 'state'], /^usage: nyl state show …/],
    [
      ['help', 'reconcile'],
      /^usage: nyl reconcile -e ENV \[--local\].* \[--wait-lease DURATION\].* \[--plan TOKEN\|FILE\]/,
    ],
  ])('nyl %j', async (args, shape) => {
    const r = await nyl(tempDir(), args);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toMatch(shape);
  });

  it('every usage line names every option the command takes, and its exit codes list 1 and more', async () => {
    const { COMMANDS, usageOf } = await import('../src/cli/commands.js');
    for (const [name, spec] of Object.entries(COMMANDS)) {
      const line = usageOf(name);
      for (const [opt, o] of Object.entries(spec.options))
        if (opt !== 'help')
          expect(line, `${name} --${opt}`).toMatch(new RegExp(o.short ? `-${o.short}\\b` : `--${opt}\\b`));
      if (name !== 'schema') expect(spec.exits, name).toMatch(/^0 .*; 1 /);
    }
  });

  it('a group without its subcommand is a usage error that says what to run', async () => {
    const r = await nyl(tempDir(), ['lease']);
    expect(r.code).toBe(1);
    expect(r.stderr).toBe(
      'error NYL-USAGE\n  lease needs a subcommand: break\n  fix: run `nyl lease --help`, e.g. `nyl lease break --help`\n',
    );
  });
});

describe('fix lines work when pasted', () => {
  it('a local run prints --local in every nyl command of its fixes; recover -e needs no --reason', async () => {
    const dir = makeRepo({ 'nyl.yaml': ENV_DEV + command('a', 'exit 3', { spec: { retryable: false } }) });
    expect((await nyl(dir, ['reconcile', ...LOCAL])).code).toBe(1);
    const st = await nyl(dir, ['status', ...LOCAL]);
    const fix = /fix: (.*)/.exec(st.stdout)?.[1] ?? '';
    expect(fix).toBe('fix the cause, then run `nyl recover -e dev --unit a --retry --reason <text> --local`');
    const pasted = /`(nyl [^`]+)`/.exec(fix)?.[1]?.replace('<text>', 'checked').split(' ').slice(1) ?? [];
    expect((await nyl(dir, pasted)).code).toBe(0);
    // The import of dead runs: the seed's own fix line, pasted as it is.
    const rec = await nyl(dir, ['recover', ...LOCAL]);
    expect(rec.code, rec.stderr).toBe(0);
    expect(rec.stdout).toBe('recover dev: nothing to import\n');
  });
});

describe('--json: one shape for every command', () => {
  it('is committed as schema/nyl.report.schema.json', () => {
    const committed = readFileSync(resolve(__dirname, '../schema/nyl.report.schema.json'), 'utf8');
    expect(JSON.parse(committed)).toEqual(JSON.parse(JSON.stringify(reportJsonSchema())));
  });

  it('every command, done or refused, prints a document of that shape; facts are typed', async () => {
    const dir = makeRepo({
      'nyl.yaml': ENV_DEV + command('a', 'echo v=1 >> "$NYL_OUTPUT"', { spec: { check: 'exit 0' } }),
    });
    const runs: [string[], number][] = [
      [['reconcile'], 0],
      [['plan'], 0],
      [['status'], 0],
      [['verify'], 0],
      [['hold', '--unit', 'a', '--reason', 'r'], 0],
      [['hold', '--unit', 'nope', '--reason', 'r'], 1],
      [['resume', '--unit', 'a', '--reason', 'r'], 0],
      [['recover'], 0],
      [['recover', '--unit', 'a', '--retry', '--reason', 'r'], 1],
      [['lease', 'break', '--reason', 'r'], 0],
      [['state', 'show'], 0],
      [['state', 'forget', '--unit', 'a'], 0],
      [['teardown'], 0],
      [['reconcile', '--plan', 'v1.bad'], 2],
    ];
    for (const [args, exit] of runs) {
      const r = await nyl(dir, [...args, ...LOCAL, '--json']);
      expect(r.code, `${args.join(' ')}: ${r.stdout}${r.stderr}`).toBe(exit);
      const doc = reportSchema().parse(JSON.parse(r.stdout));
      expect(doc.environment).toBe('dev');
      expect(doc.operation).toBe(args[0] === 'lease' || args[0] === 'state' ? `${args[0]}-${args[1]}` : args[0]);
      if (exit) expect(doc.outcome === 'refused' || doc.exit === exit).toBe(true);
      for (const v of Object.values(doc.facts))
        if (typeof v === 'string') expect(v, 'a fact holds JSON in a string').not.toMatch(/^[[{]/);
    }
    const usage = await nyl(dir, ['reconcile', '--json']);
    expect(reportSchema().parse(JSON.parse(usage.stdout))).toMatchObject({
      operation: 'reconcile',
      outcome: 'refused',
      exit: 1,
    });
  });
});

describe('inputs at their edges', () => {
  it('a 1 MB output and one the environment cannot carry reach the consumer through a file', async () => {
    const marks = tempDir('nyl-marks-');
    const dir = makeRepo({
      'nyl.yaml':
        ENV_DEV +
        command(
          'big',
          `printf 'blob=' >> "$NYL_OUTPUT"; head -c 1048576 /dev/zero | tr '\\0' x >> "$NYL_OUTPUT"; echo >> "$NYL_OUTPUT"`,
        ) +
        command(
          'use',
          `printf '%s' "\${{ units.big.outputs.blob }}" | wc -c > ${marks}/size; test -f "$NYL_INPUT_big__blob_FILE"`,
        ),
    });
    const r = await nyl(dir, ['reconcile', ...LOCAL]);
    expect(r.code, r.stdout + r.stderr).toBe(0);
    expect(Object.fromEntries(parseTable(r.stdout).map((x) => [x.UNIT, x.RESULT]))).toEqual({
      big: 'executed',
      use: 'executed',
    });
    expect(readFileSync(join(marks, 'size'), 'utf8').trim()).toBe('1048576');
  });

  it('an output with a NUL byte fails its producer with the line named; nothing is passed on', async () => {
    const dir = makeRepo({
      'nyl.yaml':
        ENV_DEV +
        command('nul', `printf 'ok=1\\nbad=a\\0b\\n' >> "$NYL_OUTPUT"`) +
        command('use', 'echo "${{ units.nul.outputs.bad }}"'),
    });
    const r = await nyl(dir, ['reconcile', ...LOCAL]);
    expect(r.code).toBe(1);
    const rows = Object.fromEntries(parseTable(r.stdout).map((x) => [x.UNIT, x]));
    expect(rows.nul?.RESULT).toBe('failed');
    expect(rows.nul?.DETAIL).toBe('NYL_OUTPUT line 2 holds a NUL byte: outputs are text');
    expect(rows.use?.RESULT).toBe('blocked');
  });

  it('an expression without its closing braces is a configuration error naming file, line and field', async () => {
    const dir = makeRepo({
      'nyl.yaml': `${ENV_DEV}${command('a', 'echo v=1 >> "$NYL_OUTPUT"')}${command('b', 'echo ${{ units.a.outputs.v')}`,
    });
    const r = await nyl(dir, ['status', ...LOCAL]);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(
      /^error NYL-CONFIG-REFERENCE \(nyl\.yaml:\d+ spec\.run\)\n {2}Command b: unsupported expression \$\{\{ units\.a\.outputs\.v \(no closing \}\}\)\n/,
    );
  });

  it('a YAML alias bomb is NYL-CONFIG-SYNTAX naming the file, not an internal error', async () => {
    const levels = ['a: &a ["x","x","x","x","x","x","x","x","x"]'];
    for (const [i, n] of ['b', 'c', 'd', 'e', 'f', 'g'].entries()) {
      const prev = String.fromCharCode(97 + i);
      levels.push(`${n}: &${n} [${Array(9).fill(`*${prev}`).join(',')}]`);
    }
    const dir = makeRepo({ 'nyl.yaml': `${ENV_DEV}---\n${levels.join('\n')}\n` });
    const r = await nyl(dir, ['status', ...LOCAL]);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(
      /^error NYL-CONFIG-SYNTAX \(nyl\.yaml:4\)\n {2}YAML cannot be read: Excessive alias count/,
    );
    expect(r.stderr).not.toContain('NYL-INTERNAL');
    expect(existsSync(join(dir, 'nyl.yaml'))).toBe(true);
    commitFiles(dir, { 'nyl.yaml': ENV_DEV });
  });
});
