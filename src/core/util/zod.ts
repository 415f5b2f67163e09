import { config, globalRegistry, type ZodMiniType } from 'zod/mini';
import en from 'zod/v4/locales/en.js';

/**
 * nyl's schemas are written with zod/mini: the same validation and messages as zod's classic API,
 * but only what is used is bundled (classic zod cost a third of the CLI's start-up). Import it as
 * `import * as z from 'zod/mini'` and use its members (re-exporting the namespace would bundle it
 * all), and import this module wherever a schema parses: mini loads no messages, this sets English
 * as classic does.
 */
config(en());

/** A copy of the schema described for JSON Schema (what classic zod's `.describe` does). */
export function described<T extends ZodMiniType>(schema: T, description: string): T {
  const copy = schema.clone() as T;
  globalRegistry.add(copy, { description });
  return copy;
}
