import { accessSync, constants, statSync } from 'node:fs';
import { delimiter, isAbsolute, join } from 'node:path';

let found: string | null | undefined;

/**
 * Where `bash` is, looked up along PATH once per nyl process (a spawn by name searches PATH
 * again every time). Undefined when PATH holds none, or on Windows: callers then spawn `bash` by
 * name and get the spawn error the system gives.
 */
export function bashPath(): string | undefined {
  if (found !== undefined) return found ?? undefined;
  found = null;
  if (process.platform === 'win32') return undefined;
  for (const dir of (process.env.PATH ?? '').split(delimiter)) {
    // A relative entry would name another file from a tool's own folder.
    if (!dir || !isAbsolute(dir)) continue;
    const candidate = join(dir, 'bash');
    try {
      accessSync(candidate, constants.X_OK);
      if (!statSync(candidate).isFile()) continue;
      found = candidate;
      break;
    } catch {
      /* not here */
    }
  }
  return found ?? undefined;
}

/**
 * Variables that change how a non-interactive bash behaves before or while it runs its own
 * script (a startup file, its options, word splitting, `cd`, locale of `read`): kept out of the
 * environment of nyl's own helper shells. Tools get them as they are (spawner.ts puts them back).
 */
export const SHELL_SENSITIVE = [
  'BASH_ENV',
  'ENV',
  'SHELLOPTS',
  'BASHOPTS',
  'BASH_XTRACEFD',
  'BASH_COMPAT',
  'BASH_LOADABLES_PATH',
  'CDPATH',
  'GLOBIGNORE',
  'EXECIGNORE',
  'IFS',
  'POSIXLY_CORRECT',
  'PS4',
  'TMOUT',
  'LC_ALL',
];

/** The environment for one of nyl's own helper shells: `env` without SHELL_SENSITIVE or exported functions. */
export function helperShellEnv(env: NodeJS.ProcessEnv = process.env): NodeJS.ProcessEnv {
  const out: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(env))
    if (v !== undefined && !SHELL_SENSITIVE.includes(k) && !k.startsWith('BASH_FUNC_')) out[k] = v;
  return out;
}
