// The action's post step runs after every job step that used the action, usually to find that the
// main step finished and exit: its cost is the cold start of its bundle. Its floor: a hello-world
// `@actions/core` bundle built with the same esbuild settings as scripts/build.mjs.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { build } from 'esbuild';
import { childEnv, log, paired, ROOT, tempDir, timed } from './bench-lib.mjs';

const HELLO = `import { getState, info } from '@actions/core';
if (getState('main') !== 'finished') info('hello, world');
`;

/** scripts/build.mjs's own esbuild options (importing it builds nothing; running it does). */
async function bundleOptions() {
  return (await import(pathToFileURL(join(ROOT, 'scripts', 'build.mjs')).href)).BUNDLE_OPTIONS;
}

/** Builds the hello-world bundle the way scripts/build.mjs builds the actions (one entry: no chunks). */
async function buildHello() {
  const dir = tempDir('hello-action');
  writeFileSync(join(dir, 'entry.js'), HELLO);
  await build({
    ...(await bundleOptions()),
    entryPoints: [{ in: join(dir, 'entry.js'), out: 'index' }],
    outdir: join(dir, 'out'),
    nodePaths: [join(ROOT, 'node_modules')],
  });
  writeFileSync(join(dir, 'out', 'package.json'), '{ "type": "module" }\n');
  return join(dir, 'out', 'index.js');
}

/** Row 6: `node post/index.js` after a main step that finished, paired with the hello world. */
export async function benchPostStep(ctx, { samples }) {
  const hello = await buildHello();
  const post = join(ctx.cliDir, 'post', 'index.js');
  // What the runner hands a post step whose main step finished (core.getState reads STATE_*).
  const env = { ...childEnv, STATE_main: 'finished', STATE_environment: ctx.envName };
  const run = (file, label) => () => {
    const r = timed(process.execPath, [file], { env, cwd: ctx.tmp });
    ctx.check(r.status === 0, `${label}: exit ${r.status}: ${r.stderr.slice(0, 300)}`);
    return r.ms;
  };
  log(`action post step: cold start × ${samples}, paired with a hello-world @actions/core bundle`);
  const p = paired(samples, run(post, 'post step'), run(hello, 'hello-world action'));
  return { ms: p.a, floorMs: p.b, ratios: p.ratios };
}
