/**
 * `nyl plan` shows exactly what `nyl reconcile` would do, and `reconcile --plan <token>` executes
 * or approves nothing the plan did not list: a unit that executes whatever its upstream produces
 * is `execute` with its own reason, `maybe` only when its inputs alone decide, and a drifted unit
 * that is not safe to re-run is `awaiting-approval` in the plan as in the reconcile.
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { command, commitFiles, ENV_DEV, git, makeRepo, nyl, nylJson, tempDir } from './helpers/repo.js';

const LOCAL = ['-e', 'dev', '--local'];

interface PlanJson {
  rows: { unit: string; result: string; detail: string }[];
  facts: { token: string; plan: string };
}

/** database (idempotent) → migrate (not idempotent, reads database's url); both can be checked. */
function setup(marks: string, migrateRun = 'true') {
  const check = (u: string) =>
    `s=$(cat ${u}.state 2>/dev/null || echo missing); if [ "$s" = ok ]; then exit 0; fi; echo "${u} is $s"; exit 2`;
  return (
    ENV_DEV +
    command('database', `echo run >> ${marks}/database; echo ok > database.state; echo url=db1 >> "$NYL_OUTPUT"`, {
      spec: { idempotent: true, check: check('database') },
    }) +
    command(
      'migrate',
      `echo run >> ${marks}/migrate; echo ok > migrate.state; echo "\${{ units.database.outputs.url }}"; ${migrateRun}`,
      {
        spec: { check: check('migrate') },
      },
    )
  );
}

function runs(marks: string, u: string): number {
  const f = join(marks, u);
  return existsSync(f) ? readFileSync(f, 'utf8').split('\n').filter(Boolean).length : 0;
}

async function planOf(dir: string) {
  const p = await nylJson<PlanJson>(dir, ['plan', ...LOCAL]);
  const rows = Object.fromEntries(p.json.rows.map((r) => [r.unit, r.result]));
  const token = p.json.facts.token;
  return { rows, token, json: p.json };
}

describe('plan shows exactly what reconcile will do', () => {
  it('a new environment: every unit is execute (new), none maybe', async () => {
    const marks = tempDir('nyl-marks-');
    const dir = makeRepo({ 'nyl.yaml': setup(marks), '.gitignore': '*.state\n' });
    const { rows, json } = await planOf(dir);
    expect(rows).toEqual({ database: 'execute', migrate: 'execute' });
    expect(json.rows.find((r) => r.unit === 'migrate')?.detail).toBe('new unit (after database)');
  });

  it('a consumer whose own spec changed is execute (changed); one whose inputs alone could change is maybe', async () => {
    const marks = tempDir('nyl-marks-');
    const dir = makeRepo({ 'nyl.yaml': setup(marks), '.gitignore': '*.state\n' });
    expect((await nyl(dir, ['reconcile', ...LOCAL])).code).toBe(0);
    // database changes; migrate too: migrate runs whatever database outputs.
    commitFiles(dir, {
      'nyl.yaml': setup(marks, 'echo v2').replace('echo ok > database.state', 'echo ok > database.state; true'),
    });
    expect((await planOf(dir)).rows).toEqual({ database: 'execute', migrate: 'execute' });
    // Only database changes: migrate runs only if database's outputs change.
    commitFiles(dir, {
      'nyl.yaml': setup(marks).replace('echo ok > database.state', 'echo ok > database.state; true'),
    });
    const only = await planOf(dir);
    expect(only.rows).toEqual({ database: 'execute', migrate: 'maybe' });
    // …and with the token, migrate does not run: its inputs did not change.
    const r = await nyl(dir, ['reconcile', ...LOCAL, '--plan', only.token]);
    expect(r.code, r.stderr).toBe(0);
    expect({ database: runs(marks, 'database'), migrate: runs(marks, 'migrate') }).toEqual({ database: 2, migrate: 1 });
  });

  it('two drifted units, the downstream one not safe to re-run: awaiting-approval in plan and reconcile; the token approves exactly that', async () => {
    const marks = tempDir('nyl-marks-');
    const dir = makeRepo({ 'nyl.yaml': setup(marks), '.gitignore': '*.state\n' });
    expect((await nyl(dir, ['reconcile', ...LOCAL])).code).toBe(0);
    for (const u of ['database', 'migrate']) writeFileSync(join(dir, `${u}.state`), 'gone\n');
    expect((await nyl(dir, ['verify', ...LOCAL])).code).toBe(3);

    // status shows migrate's drift although database executes first.
    const st = await nylJson<{ rows: { unit: string; result: string }[] }>(dir, ['status', ...LOCAL]);
    expect(Object.fromEntries(st.json.rows.map((r) => [r.unit, r.result]))).toEqual({
      database: 'drifted',
      migrate: 'drifted',
    });
    expect(st.stdout).toContain('"code": "NYL-UNIT-DRIFTED",\n      "subject": "migrate"');

    const plan = await planOf(dir);
    expect(plan.rows).toEqual({ database: 'execute', migrate: 'awaiting-approval' });
    // Without the token: exactly what the plan said.
    const plain = await nylJson<{ rows: { unit: string; result: string }[] }>(dir, ['reconcile', ...LOCAL]);
    expect(plain.code).toBe(2);
    expect(Object.fromEntries(plain.json.rows.map((r) => [r.unit, r.result]))).toEqual({
      database: 'executed',
      migrate: 'awaiting-approval',
    });
    expect(runs(marks, 'migrate')).toBe(1);
    // The new plan lists migrate awaiting approval; its token approves it, recorded as such.
    const again = await planOf(dir);
    expect(again.rows).toEqual({ database: 'current', migrate: 'awaiting-approval' });
    const approved = await nyl(dir, ['reconcile', ...LOCAL, '--plan', again.token]);
    expect(approved.code, approved.stderr).toBe(0);
    expect(runs(marks, 'migrate')).toBe(2);
    expect(git(dir, 'log', '-1', '--format=%B', 'refs/nyl/dev/observed')).toMatch(
      /approved: \{.*"units":\["migrate"\]/,
    );
  });
});
