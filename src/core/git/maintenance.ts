import { spawn } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { setPriority } from 'node:os';
import { join } from 'node:path';
import { gitEnv, gitStats } from './exec.js';

/**
 * Keeps a repository that nyl writes to bounded. Every write adds one pack, and fetches keep theirs,
 * so packs pile up on a long-lived clone; git's own `gc --auto` rolls them up and prunes what the
 * deleted run refs left unreachable. Whether it is due is read from the object directory here, with
 * git's default limits, so a write that needs none spawns nothing; `gc --auto` itself then applies
 * the repository's real settings (gc.auto, gc.autoPackLimit, or 0 to never).
 */

/** git's defaults: gc.autoPackLimit, and gc.auto (6700) spread over the 256 loose object folders. */
const PACK_LIMIT = 50;
const LOOSE_IN_ONE_FOLDER = Math.ceil(6700 / 256);

export function gcLooksDue(commonDir: string): boolean {
  const objects = join(commonDir, 'objects');
  try {
    const names = readdirSync(join(objects, 'pack'));
    const kept = new Set(names.filter((n) => n.endsWith('.keep')).map((n) => n.slice(0, -5)));
    const packs = names.filter((n) => n.endsWith('.pack') && !kept.has(n.slice(0, -5))).length;
    if (packs > PACK_LIMIT) return true;
  } catch {
    /* no pack folder yet */
  }
  try {
    // git samples this one folder the same way.
    return readdirSync(join(objects, '17')).length > LOOSE_IN_ONE_FOLDER;
  } catch {
    return false;
  }
}

let started = false;

/**
 * Starts `git gc --auto` in the background, at most once per process, outside nyl's process
 * groups: it outlives nyl on purpose and no run waits for it. That is safe alongside running
 * writers: git keeps recently written unreachable objects (gc.pruneExpire, two weeks by default),
 * and its gc.pid lock keeps one gc at a time. Ref packing is left out, so no ref a concurrent run
 * updates is ever locked by it; what deleted run refs left unreachable goes into one cruft pack
 * until it expires, not back into loose files (git before 2.37 ignores the setting).
 */
export function startBackgroundGc(cwd: string): boolean {
  if (started) return false;
  started = true;
  gitStats.spawns++;
  gitStats.commands.push('gc');
  try {
    const child = spawn('git', ['-c', 'gc.packRefs=false', '-c', 'gc.cruftPacks=true', 'gc', '--auto', '--quiet'], {
      cwd,
      env: gitEnv(),
      stdio: 'ignore',
      detached: true,
      windowsHide: true,
    });
    child.on('error', () => {
      /* no gc this time; git's own commands run it later */
    });
    if (child.pid !== undefined) {
      try {
        setPriority(child.pid, 19);
      } catch {
        /* not permitted here: it runs at normal priority */
      }
    }
    child.unref();
    return true;
  } catch {
    return false;
  }
}

/** For tests: lets the next write start a gc again. */
export function resetBackgroundGc(): void {
  started = false;
}
