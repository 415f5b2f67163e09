import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/**
 * One private temporary folder per nyl process, made on first use: tools' output files, output
 * files of Command units, var files. Removed when nyl exits normally (a killed nyl leaves it to the
 * system's temp cleaning; nothing secret stays in it once a tool has finished).
 */
let dir: string | undefined;
let n = 0;

export function workdir(): string {
  dir ??= mkdtempSync(join(process.env.RUNNER_TEMP || tmpdir(), 'nyl-'));
  return dir;
}

/** A fresh path in the work folder, e.g. `workPath('out')` → `…/nyl-XXXX/3-out`. */
export function workPath(name: string): string {
  return join(workdir(), `${++n}-${name}`);
}

/** Never fails an exit: the watchdog may still be writing its list there as nyl ends. */
export function removeWorkdir(): void {
  if (!dir) return;
  try {
    rmSync(dir, { recursive: true, force: true, maxRetries: 3, retryDelay: 20 });
  } catch {
    /* left to the system's temp cleaning */
  }
  dir = undefined;
}
