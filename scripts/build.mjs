// Bundles the CLI (and, later, the actions) into dist/, self-contained for Node 20+.
// `--check` builds into a temporary folder and fails when dist/ differs from a fresh build.
import { createHash } from 'node:crypto';
import {
  chmodSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { build } from 'esbuild';

/**
 * zod's `locales` namespace holds every language's messages (about a quarter of the CLI's code),
 * all parsed at every start though only English is used (zod sets it itself): bundle English only.
 */
const zodEnglishOnly = {
  name: 'zod-english-only',
  setup(b) {
    // The module's path is relative to the node_modules it is in: a path in a plugin's namespace
    // enters the chunk hashes as it is, and an absolute one would name chunks after the checkout.
    b.onResolve({ filter: /[\\/]locales[\\/]index\.js$/ }, (args) => {
      if (!args.importer.includes(`${sep}zod${sep}`)) return undefined;
      const dir = join(dirname(args.importer), '..', 'locales');
      const at = dir.lastIndexOf(`${sep}node_modules${sep}`);
      return { path: `${dir.slice(at + 1)}${sep}index.js`, namespace: 'zod-locales', pluginData: { dir } };
    });
    b.onLoad({ filter: /.*/, namespace: 'zod-locales' }, (args) => ({
      contents: "export { default as en } from './en.js';",
      resolveDir: args.pluginData.dir,
    }));
  },
};

/**
 * `@actions/core` reaches undici (its HTTP stack, most of an action's code) only through its OIDC
 * client, which Nyl never uses (`getIDToken`): the bundles get a stand-in that says so, and an action
 * step loads undici only with the GitHub API client, when it calls the API.
 */
const actionsCoreWithoutOidc = {
  name: 'actions-core-without-oidc',
  setup(b) {
    b.onResolve({ filter: /^\.\/oidc-utils\.js$/ }, (args) =>
      args.importer.includes(`${sep}@actions${sep}core${sep}`)
        ? { path: 'oidc-utils', namespace: 'no-oidc' }
        : undefined,
    );
    b.onLoad({ filter: /.*/, namespace: 'no-oidc' }, () => ({
      contents:
        "export class OidcClient { static async getIDToken() { throw new Error('getIDToken is not in nyl: its bundles leave out the OIDC client of @actions/core'); } }",
    }));
  },
};

/**
 * How every bundle is built (exported so a benchmark can build its floor, e.g. a hello-world
 * `@actions/core` bundle, exactly the same way).
 */
export const BUNDLE_OPTIONS = {
  bundle: true,
  platform: 'node',
  target: 'node20',
  format: 'esm',
  outExtension: { '.js': '.js' },
  banner: {
    js: "#!/usr/bin/env node\nimport { createRequire as __nylCreateRequire } from 'node:module';\nconst require = __nylCreateRequire(import.meta.url);",
  },
  legalComments: 'none',
  // Shared code in one chunk: the seven entries stay small, and a change to the core rewrites one
  // file, not seven (dist/ is committed). Whitespace is dropped, names are kept for stack traces.
  splitting: true,
  chunkNames: 'chunks/[name]-[hash]',
  minifyWhitespace: true,
  minifySyntax: true,
  logLevel: 'warning',
  charset: 'utf8',
  plugins: [zodEnglishOnly, actionsCoreWithoutOidc],
  // `nyl init` writes workflows made from examples/workflows/*.yml: their text is embedded, so the
  // shipped examples stay the one source and an installed nyl (no examples/ next to it) has them.
  loader: { '.yml': 'text' },
  // `yaml` is bundled apart (YAML_BUNDLE) and loaded on first use (src/core/config/yaml-lib.ts),
  // from a chunk in chunks/ or an entry next to it.
  define: { NYL_YAML_MODULES: JSON.stringify(['../yaml.cjs', './yaml.cjs']) },
};

/** The `yaml` library as one CommonJS file, `dist/yaml.cjs`: required only when a message needs it. */
const YAML_BUNDLE = {
  stdin: { contents: "module.exports = require('yaml');", resolveDir: dirname(fileURLToPath(import.meta.url)) },
  bundle: true,
  platform: 'node',
  target: 'node20',
  format: 'cjs',
  legalComments: 'none',
  minifyWhitespace: true,
  minifySyntax: true,
  logLevel: 'warning',
  charset: 'utf8',
};

/**
 * The CLI as one CommonJS file, `dist/cli.cjs` (its own copy of the core: a command loads one file,
 * and Node 20 caches compiled code for a script only), its hash on its first line, and
 * `dist/cli.js`, the entry that runs it with V8's code cache (src/cli-loader.ts).
 */
async function buildCli(out) {
  const oneFile = { ...BUNDLE_OPTIONS, splitting: false, outdir: undefined, chunkNames: undefined };
  const cli = await build({
    ...oneFile,
    format: 'cjs',
    entryPoints: ['src/cli.ts'],
    outfile: join(out, 'cli.cjs'),
    banner: { js: "var __nylImportMetaUrl = require('node:url').pathToFileURL(__filename).href;" },
    // ASCII (other characters escaped), which the entry reads as latin1: a one-byte string, read
    // and handed to V8 in a tenth of the time UTF-8 takes.
    charset: 'ascii',
    // yaml.cjs lies next to cli.cjs: look nowhere else (a stray one above dist/ would be taken).
    define: { NYL_YAML_MODULES: JSON.stringify(['./yaml.cjs']), 'import.meta.url': '__nylImportMetaUrl' },
    metafile: true,
  });
  // Node 20 runs no import() from a vm.Script: every module must be in the file or required.
  const dynamic = Object.values(cli.metafile.outputs)
    .flatMap((o) => o.imports)
    .filter((i) => i.kind === 'dynamic-import');
  if (dynamic.length)
    throw new Error(`dist/cli.cjs keeps import() of ${dynamic.map((i) => i.path).join(', ')}: import it statically`);
  const cjs = readFileSync(join(out, 'cli.cjs'));
  if (cjs.some((b) => b > 0x7f)) throw new Error('dist/cli.cjs is not ASCII: the entry reads it as latin1');
  // Its first line names its content: the entry names the code cache by the file it reads, so a
  // cli.js and a cli.cjs of different builds (a copy or a build half moved) never share one.
  const hash = createHash('sha256').update(cjs).digest('hex').slice(0, 16);
  writeFileSync(join(out, 'cli.cjs'), Buffer.concat([Buffer.from(`/*nyl-cli ${hash}*/\n`), cjs]));
  await build({
    ...oneFile,
    entryPoints: ['src/cli-loader.ts'],
    outfile: join(out, 'cli.js'),
    banner: { js: '#!/usr/bin/env node' },
  });
}

// Run as a script builds dist/; imported (for BUNDLE_OPTIONS), it builds nothing.
if (process.argv[1] && import.meta.url === pathToFileURL(resolve(process.argv[1])).href) await buildDist();

async function buildDist() {
  const check = process.argv.includes('--check');
  // Build into a fresh folder, then move files into dist/ one by one (a rename is atomic), so a
  // test or benchmark reading dist/cli.js meanwhile never finds it missing or half written.
  const out = mkdtempSync(join(check ? tmpdir() : '.', check ? 'nyl-dist-' : '.dist-'));

  // The CLI, and one bundle per GitHub Action (main steps and the shared post step).
  const entries = [
    ...['reconcile', 'plan', 'recover', 'verify', 'lease-break', 'site', 'main', 'post'].map((a) => ({
      in: `src/actions/entries/${a}.ts`,
      out: `${a}/index`,
    })),
  ];

  await build({ ...BUNDLE_OPTIONS, entryPoints: entries, outdir: out });
  await build({ ...YAML_BUNDLE, outfile: join(out, 'yaml.cjs') });
  await buildCli(out);

  // Bundles are ES modules: say so next to them, whatever package.json surrounds dist/.
  writeFileSync(join(out, 'package.json'), '{ "type": "module" }\n');

  // The JSON Schemas of nyl.yaml (for editors) and of --json output, generated from the zod schemas
  // by the CLI just built.
  const { execFileSync } = await import('node:child_process');
  for (const [file, args] of [
    ['schema/nyl.schema.json', ['schema']],
    ['schema/nyl.report.schema.json', ['schema', '--report']],
  ]) {
    const schemaText = execFileSync('node', [join(out, 'cli.js'), ...args], { encoding: 'utf8' });
    if (check) {
      const committed = (() => {
        try {
          return readFileSync(file, 'utf8');
        } catch {
          return '';
        }
      })();
      if (committed !== schemaText) {
        console.error(`${file} differs from the zod schemas: run \`npm run build\` and commit it`);
        process.exitCode = 1;
      }
    } else {
      mkdirSync('schema', { recursive: true });
      writeFileSync(file, schemaText);
    }
  }

  function files(dir) {
    return readdirSync(dir, { recursive: true })
      .map(String)
      .filter((f) => statSync(join(dir, f)).isFile())
      .sort();
  }

  if (check) {
    const a = files('dist');
    const b = files(out);
    const diff = [...new Set([...a, ...b])].filter(
      (f) => !a.includes(f) || !b.includes(f) || !readFileSync(join('dist', f)).equals(readFileSync(join(out, f))),
    );
    rmSync(out, { recursive: true, force: true });
    if (diff.length || process.exitCode) {
      if (diff.length)
        console.error(`dist/ differs from a fresh build: ${diff.join(', ')}\nrun \`npm run build\` and commit dist/`);
      process.exit(1);
    }
    console.log('dist/ is up to date');
  } else {
    mkdirSync('dist', { recursive: true });
    const built = files(out);
    for (const f of built) {
      mkdirSync(join('dist', f, '..'), { recursive: true });
      renameSync(join(out, f), join('dist', f));
    }
    rmSync(out, { recursive: true, force: true });
    // Chunks of earlier builds are gone from a fresh build: drop them here too.
    const fresh = new Set(built);
    for (const f of files('dist')) if (!fresh.has(f)) rmSync(join('dist', f));
    chmodSync('dist/cli.js', 0o755);
    console.log(`built dist/cli.js, ${entries.map((e) => relative('.', join('dist', `${e.out}.js`))).join(', ')}`);
  }
}
