// Row 10: the Terraform processes of a resource-level plan and of the apply of that reviewed plan
// (issue 26). A local repository (`--local`) with N Terraform units, each its own module folder of
// two built-in `terraform_data` resources (offline: `init` downloads nothing), reconciled once; then,
// round by round, a commit changing the variables of exactly 2 units, `nyl plan` and `nyl
// reconcile --plan <its token>`. Every unit's `spec.binary` is a counting wrapper committed in the
// repository (`bin/terraform-count`): it appends its subcommand, the module folder it runs in and
// NYL_UNIT to a log outside the repository, then execs the real terraform. The floor, for the wall
// times: `terraform plan` of a module nothing changed, run directly, twice (nyl plans 2 units).
import { spawnSync } from 'node:child_process';
import { accessSync, chmodSync, constants, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { delimiter, join } from 'node:path';
import { childEnv, commitAll, ENV_NAME, git, log, nylJson, setIdentity, tempDir, timed } from './bench-lib.mjs';

/** The bench's children without the operator's TF_* (a TF_CLI_CONFIG_FILE naming a missing file makes every command warn). */
export const tfEnv = Object.fromEntries(Object.entries(childEnv).filter(([k]) => !k.startsWith('TF_')));

/** `terraform` on the PATH of `env`, run once: `{ path, version }`, or `{ why }` it cannot be used. */
export function findTerraform(env = tfEnv) {
  for (const dir of (env.PATH ?? '').split(delimiter)) {
    if (!dir) continue;
    const path = join(dir, 'terraform');
    try {
      accessSync(path, constants.X_OK);
    } catch {
      continue;
    }
    const r = spawnSync(path, ['version', '-json'], { env, encoding: 'utf8' });
    if (r.error || r.status !== 0)
      return { why: `${path} version failed (${r.error?.message ?? `exit ${r.status}`}: ${(r.stderr ?? '').trim()})` };
    let version;
    try {
      version = JSON.parse(r.stdout).terraform_version;
    } catch {
      version = r.stdout.split('\n')[0];
    }
    return { path, version };
  }
  return { why: 'terraform is not on PATH' };
}

const quote = (s) => `'${s.replace(/'/g, `'\\''`)}'`;
export const WRAPPER = 'bin/terraform-count';

/**
 * The counting wrapper: one line per process (subcommand, module folder, NYL_UNIT, last argument:
 * an `apply` whose last argument is not an option applies a saved plan, one that plans nothing
 * again), then the real CLI.
 */
export function wrapperScript(logFile, terraform) {
  return `#!/usr/bin/env bash
# nyl bench, row 10: counts terraform processes, then runs the real one.
printf '%s\\t%s\\t%s\\t%s\\n' "\${1-}" "\${PWD##*/}" "\${NYL_UNIT-}" "\${@: -1}" >> ${quote(logFile)}
exec ${quote(terraform)} "$@"
`;
}

const MODULE = `variable "name" {
  type = string
}

resource "terraform_data" "main" {
  input = var.name
}

resource "terraform_data" "tag" {
  input = "\${var.name}-tag"
}

output "name" {
  value = terraform_data.main.output
}
`;

const GITIGNORE = [
  '.terraform/',
  '.terraform.lock.hcl',
  '*.tfstate',
  '*.tfstate.backup',
  '.terraform.tfstate.lock.info',
  '',
].join('\n');

export const unitName = (i) => `tf${String(i + 1).padStart(2, '0')}`;

/** nyl.yaml: N independent Terraform units, unit i in modules/<name>, `variables.name` = names[i]. */
export function tfConfig(names) {
  const docs = [`kind: Environment\nname: ${ENV_NAME}\n`];
  names.forEach((value, i) => {
    const spec = { module: `modules/${unitName(i)}`, binary: WRAPPER, variables: { name: value } };
    docs.push(`kind: Terraform\nname: ${unitName(i)}\nspec: ${JSON.stringify(spec)}\n`);
  });
  return docs.join('---\n');
}

/**
 * The log's lines as counts: `total` by subcommand, `byUnit` (module folder) by subcommand, and
 * `applyWithoutPlanFile`: applies given no saved plan (they plan again inside).
 */
export function countInvocations(text) {
  const total = {};
  const byUnit = {};
  let processes = 0;
  let applyWithoutPlanFile = 0;
  for (const line of text.split('\n')) {
    if (!line) continue;
    const [sub, folder, nylUnit, last = ''] = line.split('\t');
    const unit = folder || nylUnit || '?';
    processes++;
    if (sub === 'apply' && (last === '' || last.startsWith('-'))) applyWithoutPlanFile++;
    total[sub] = (total[sub] ?? 0) + 1;
    byUnit[unit] ??= {};
    byUnit[unit][sub] = (byUnit[unit][sub] ?? 0) + 1;
  }
  return { processes, total, byUnit, applyWithoutPlanFile };
}

const sumOf = (counts) => Object.values(counts ?? {}).reduce((a, b) => a + b, 0);

/** What differs from the expected counts of one command: `{ unit: { sub: n } }` for each changed unit, nothing elsewhere. */
export function deviations(counts, changed, expected) {
  const out = [];
  for (const u of changed)
    for (const [sub, n] of Object.entries(expected)) {
      const got = counts.byUnit[u]?.[sub] ?? 0;
      if (got !== n) out.push(`${u}: ${sub} ×${got}, expected ×${n}`);
    }
  for (const [u, subs] of Object.entries(counts.byUnit))
    if (!changed.includes(u))
      out.push(
        `${u} (unchanged): ${Object.entries(subs)
          .map(([s, n]) => `${s} ×${n}`)
          .join(', ')}`,
      );
  return out;
}

/** Per changed unit in (a): init, plan -out, show -json; nothing else. (b) adds apply of that plan and output -json. */
export const EXPECTED = {
  plan: { init: 1, plan: 1, show: 1, apply: 0 },
  reconcile: { plan: 1, apply: 1 },
};

function readLog(file) {
  const text = readFileSync(file, 'utf8');
  writeFileSync(file, '');
  return countInvocations(text);
}

function setUp(ctx, dir, logFile, terraform, names) {
  git(dir, ['init', '-q', '-b', 'main']);
  setIdentity(dir);
  mkdirSync(join(dir, 'bin'));
  writeFileSync(join(dir, WRAPPER), wrapperScript(logFile, terraform));
  chmodSync(join(dir, WRAPPER), 0o755);
  writeFileSync(join(dir, '.gitignore'), GITIGNORE);
  names.forEach((_, i) => {
    mkdirSync(join(dir, 'modules', unitName(i)), { recursive: true });
    writeFileSync(join(dir, 'modules', unitName(i), 'main.tf'), MODULE);
  });
  writeFileSync(join(dir, 'nyl.yaml'), tfConfig(names));
  commitAll(dir, `bench: ${names.length} Terraform units`);
  writeFileSync(logFile, '');
  const first = nylJson(ctx.cli, dir, ['reconcile', '-e', ENV_NAME, '--local'], { env: tfEnv });
  const executed = (first.report?.rows ?? []).filter((r) => r.result === 'executed').length;
  ctx.check(
    first.status === 0 && executed === names.length,
    `row 10 first reconcile: exit ${first.status}, ${executed} of ${names.length} executed${first.status ? `: ${first.stderr.slice(-800)}` : ''}`,
  );
  return { ms: first.ms, counts: readLog(logFile) };
}

/** A plan or reconcile's rows: the changed units `want`, every other one `current`. */
function checkRows(ctx, label, report, changed, want) {
  const wrong = (report?.rows ?? [])
    .filter((r) => r.result !== (changed.includes(r.unit) ? want : 'current'))
    .map((r) => `${r.unit} ${r.result}${r.detail ? ` (${r.detail})` : ''}`);
  ctx.check(!wrong.length && report?.rows?.length > 0, `row 10 ${label}: ${wrong.join('; ') || 'no rows'}`);
}

/**
 * Row 10. `rounds` commits of 2 changed units each (never the floor's module, the last one), each
 * planned and reconciled with the plan's token; the floor sampled once per round, before or after
 * the plan in alternation, after one warm-up.
 */
export function benchTerraform(ctx, { units, changed: k = 2, rounds }) {
  const tf = findTerraform();
  if (!tf.path) return { skipped: tf.why };
  const dir = tempDir('terraform');
  const logFile = join(ctx.tmp, `terraform-count-${process.hrtime.bigint()}.log`);
  const names = Array.from({ length: units }, (_, i) => `${unitName(i)}-0`);
  log(`terraform ${tf.version}: a first reconcile of ${units} Terraform units (not timed), then ${rounds} round(s)`);
  const setup = setUp(ctx, dir, logFile, tf.path, names);

  const floorUnit = units - 1;
  const floorEnv = { ...tfEnv, TF_IN_AUTOMATION: '1', TF_INPUT: '0' };
  const floorArgs = ['plan', '-input=false', '-no-color', '-lock=false', '-detailed-exitcode'];
  const floor = () => {
    let ms = 0;
    for (let i = 0; i < k; i++) {
      const r = timed(tf.path, [...floorArgs, `-var=name=${names[floorUnit]}`], {
        cwd: join(dir, 'modules', unitName(floorUnit)),
        env: floorEnv,
      });
      ctx.check(r.status === 0, `row 10 floor: terraform plan of an unchanged module exited ${r.status}: ${r.stderr}`);
      ms += r.ms;
    }
    return ms;
  };
  // For reference, not a ratio: the commands nyl runs for a unit it plans (init, plan -out, show
  // -json), run directly in the same module, for k modules in turn.
  const planFile = join(ctx.tmp, 'terraform-floor.tfplan');
  const session = () => {
    let ms = 0;
    for (let i = 0; i < k; i++)
      for (const args of [
        ['init', '-input=false', '-no-color'],
        ['plan', '-input=false', '-no-color', '-lock=false', `-out=${planFile}`, `-var=name=${names[floorUnit]}`],
        ['show', '-json', '-no-color', planFile],
      ]) {
        const r = timed(tf.path, args, { cwd: join(dir, 'modules', unitName(floorUnit)), env: floorEnv });
        ctx.check(r.status === 0, `row 10 floor: terraform ${args[0]} of an unchanged module exited ${r.status}`);
        ms += r.ms;
      }
    return ms;
  };
  floor(); // warm-up

  const out = { terraform: tf.version, units, changed: k, setup, rounds: [] };
  try {
    for (let round = 0; round < rounds; round++) {
      // k units far apart, never the floor's (the last): k × round + j × ⌈(units - 1) / k⌉, mod units - 1.
      const idx = [
        ...new Set([...Array(k).keys()].map((j) => (k * round + j * Math.ceil((units - 1) / k)) % (units - 1))),
      ];
      const changed = idx.map(unitName);
      for (const i of idx) names[i] = `${unitName(i)}-${round + 1}`;
      writeFileSync(join(dir, 'nyl.yaml'), tfConfig(names));
      commitAll(dir, `bench: round ${round + 1}, variables of ${changed.join(', ')}`);
      readLog(logFile);

      let floorMs;
      let sessionMs;
      if (round % 2 === 1) [floorMs, sessionMs] = [floor(), session()];
      const plan = nylJson(ctx.cli, dir, ['plan', '-e', ENV_NAME, '--local'], { env: tfEnv });
      const planCounts = readLog(logFile);
      if (round % 2 === 0) [floorMs, sessionMs] = [floor(), session()];
      const token = plan.report?.facts?.token;
      ctx.check(plan.status === 0, `row 10 nyl plan: exit ${plan.status}: ${plan.stderr.slice(-800)}`);
      ctx.check(/^v3\./.test(token ?? ''), `row 10 nyl plan: token ${token}, expected a v3.… token`);
      checkRows(ctx, 'nyl plan', plan.report, changed, 'execute');

      const rec = nylJson(ctx.cli, dir, ['reconcile', '-e', ENV_NAME, '--local', '--plan', String(token)], {
        env: tfEnv,
      });
      const recCounts = readLog(logFile);
      ctx.check(rec.status === 0, `row 10 nyl reconcile --plan: exit ${rec.status}: ${rec.stderr.slice(-800)}`);
      checkRows(ctx, 'nyl reconcile --plan', rec.report, changed, 'executed');

      const others = (c) =>
        Object.entries(c.byUnit)
          .filter(([u]) => !changed.includes(u))
          .reduce((n, [, subs]) => n + sumOf(subs), 0);
      out.rounds.push({
        changed,
        token,
        floorMs,
        sessionMs,
        plan: {
          ms: plan.ms,
          counts: planCounts,
          others: others(planCounts),
          deviations: deviations(planCounts, changed, EXPECTED.plan),
        },
        reconcile: {
          ms: rec.ms,
          counts: recCounts,
          others: others(recCounts),
          deviations: deviations(recCounts, changed, EXPECTED.reconcile),
        },
      });
      log(
        `terraform round ${round + 1} (${changed.join(', ')}): plan ${Math.round(plan.ms)} ms ${JSON.stringify(planCounts.total)}; reconcile --plan ${Math.round(rec.ms)} ms ${JSON.stringify(recCounts.total)}; floor ${Math.round(floorMs)} ms`,
      );
    }
  } finally {
    ctx.drop(dir);
  }
  return out;
}
