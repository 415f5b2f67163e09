import { join } from 'node:path';
import { masker } from '../util/mask.js';

export interface TfSpec {
  module: string;
  variables?: Record<string, unknown>;
  varFiles?: string[];
  workspace?: string;
  initArgs?: string[];
  applyArgs?: string[];
  binary?: string;
}

/** The command lines of a unit's session; those of a saved plan take its file. */
export interface TfCommands {
  init: string[];
  workspace: string[] | undefined;
  output: string[];
  plan: string[];
  destroy: string[];
  /**
   * A plan kept in `file`, without the state lock: a plan never stops an apply, and the apply of
   * the file takes the lock itself and refuses the plan if the state changed since (stale).
   */
  planTo: (file: string) => string[];
  /** The saved plan as JSON (values included: read, never logged). */
  show: (file: string) => string[];
  /** Applies exactly the saved plan (it holds the variables: no var file is given again). */
  applyPlan: (file: string) => string[];
}

/**
 * The command lines a unit runs, in order. Variables only ever travel in a var file (written by
 * Nyl, JSON), so no value can become an argument or shell code.
 */
export function tfCommands(binary: string, spec: TfSpec, root: string, nylVarFile: string | undefined): TfCommands {
  const varFiles = [
    ...(spec.varFiles ?? []).map((f) => `-var-file=${join(root, f)}`),
    ...(nylVarFile ? [`-var-file=${nylVarFile}`] : []),
  ];
  const { planArgs, applyArgs } = splitApplyArgs(spec.applyArgs ?? []);
  // -no-color: the tools colour their output even into a pipe, and logs and parsing want plain text.
  return {
    init: [binary, 'init', '-input=false', '-no-color', ...(spec.initArgs ?? [])],
    // Created if missing; selected per process with TF_WORKSPACE (see tfEnv), never by `workspace
    // select`, whose choice is a file in the module folder that units sharing it would fight over.
    workspace: spec.workspace ? [binary, 'workspace', 'new', spec.workspace] : undefined,
    output: [binary, 'output', '-json', '-no-color'],
    plan: [binary, 'plan', '-detailed-exitcode', '-input=false', '-no-color', ...varFiles],
    destroy: [binary, 'destroy', '-auto-approve', '-input=false', '-no-color', ...varFiles],
    planTo: (file) => [
      binary,
      'plan',
      '-input=false',
      '-no-color',
      `-out=${file}`,
      '-lock=false',
      ...varFiles,
      ...planArgs,
    ],
    show: (file) => [binary, 'show', '-json', '-no-color', file],
    applyPlan: (file) => [binary, 'apply', '-auto-approve', '-input=false', '-no-color', ...applyArgs, file],
  };
}

/** Options that decide what is planned: with a saved plan they are the plan's, and apply refuses them. */
const PLANNING = /^--?(target|replace|refresh|refresh-only|destroy|var|var-file)(=|$)/;
/** Options of apply alone (plan refuses them); -auto-approve nyl gives itself. */
const APPLYING = /^--?(auto-approve|backup|state-out)(=|$)/;

/**
 * `applyArgs` with a saved plan: what shapes the changes (-target, -replace, -refresh=false) goes to
 * the plan; what shapes the apply (-backup, -state-out) to it; what both take (-parallelism,
 * -lock-timeout, -compact-warnings) to both.
 */
export function splitApplyArgs(args: string[]): { planArgs: string[]; applyArgs: string[] } {
  return {
    planArgs: args.filter((a) => !APPLYING.test(a)),
    applyArgs: args.filter((a) => !PLANNING.test(a) && !/^--?auto-approve(=|$)/.test(a)),
  };
}

export interface StateLock {
  id: string;
  /** `live`: the local backend's lock, held by a running process (it dies with its holder); `backend`: a remote backend's, which can outlive it. */
  holder: 'live' | 'backend';
  who?: string;
  created?: string;
}

/** A state lock the tool could not take, as the tools print it. */
export function stateLock(text: string): StateLock | undefined {
  const plain = stripAnsi(text);
  if (!/Error acquiring the state lock/.test(plain)) return undefined;
  // Fields of the Lock Info block only (a backend's message may hold a RequestID: or the like).
  const info = plain.slice(Math.max(0, plain.indexOf('Lock Info:')));
  const field = (name: string) =>
    new RegExp(`(?:^|\\n)[\\s│]*${name}:[ \\t]+([^\\n│]+)`).exec(info)?.[1]?.trim() || undefined;
  // The http backend names the holder's lock in its message; its Lock Info is the failed attempt's own.
  // \u2502 is the bar terraform draws down its error boxes (escaped: the CLI bundle is ASCII).
  const httpId = /HTTP remote state already locked:[\s\u2502]*ID=([^\s\u2502]+)/.exec(plain)?.[1];
  const id = httpId ?? field('ID');
  if (!id) return undefined;
  // The local backend locks the state file itself (an OS lock, gone with its process): its
  // conflict reads "resource temporarily unavailable". Any other backend keeps the lock itself.
  const local = /Error message:\s*resource temporarily unavailable/.test(plain);
  return {
    id,
    holder: local ? 'live' : 'backend',
    ...(httpId ? {} : { who: field('Who'), created: field('Created') }),
  };
}

/** A word for the shell: quoted when it holds anything but safe characters. */
export function shellWord(s: string): string {
  return /^[A-Za-z0-9_@%+=:,./-]+$/.test(s) ? s : `'${s.replace(/'/g, `'\\''`)}'`;
}

/** Colour codes a tool printed anyway (e.g. from TF_CLI_ARGS or a wrapper). */
export function stripAnsi(text: string): string {
  return text.replace(/\x1b\[[0-9;]*[A-Za-z]/g, '');
}

interface TfOutput {
  sensitive?: boolean;
  value: unknown;
}

/** Outputs of `output -json`: sensitive ones are left out (only their names are kept). */
export function tfOutputs(json: string): { outputs: Record<string, string>; sensitive: string[] } {
  const parsed = JSON.parse(json || '{}') as Record<string, TfOutput>;
  const outputs: Record<string, string> = {};
  const sensitive: string[] = [];
  for (const [k, o] of Object.entries(parsed)) {
    const value = typeof o.value === 'string' ? o.value : JSON.stringify(o.value);
    if (o.sensitive) {
      sensitive.push(k);
      // Its value is a secret from now on: masked wherever it would appear.
      if (value) masker.add(value);
    } else outputs[k] = value;
  }
  return { outputs, sensitive: sensitive.sort() };
}

export const lastLines = (t: string, n: number) => t.replace(/\s+$/, '').split('\n').slice(-n).join('\n');
