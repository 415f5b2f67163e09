import { createRequire } from 'node:module';

/**
 * The `yaml` library, loaded on first use. Most configuration is read by the fast reader
 * (fast-yaml.ts); `yaml` reads only what it does not know, and locates lines for messages, so a
 * command that finds nothing wrong never loads it (a sixth of the CLI's code, all evaluated at
 * start-up when imported). The bundle ships it apart, as `yaml.cjs` next to the entry points
 * (scripts/build.mjs names it in NYL_YAML_MODULES); from the sources it is the package itself.
 */
declare const NYL_YAML_MODULES: string[] | undefined;

type Yaml = typeof import('yaml');
let lib: Yaml | undefined;

export function yaml(): Yaml {
  if (lib) return lib;
  const requireHere = createRequire(import.meta.url);
  const candidates = typeof NYL_YAML_MODULES === 'undefined' ? ['yaml'] : NYL_YAML_MODULES;
  let failure: unknown;
  for (const c of candidates) {
    try {
      lib = requireHere(c) as Yaml;
      return lib;
    } catch (e) {
      failure = e;
    }
  }
  throw failure;
}
