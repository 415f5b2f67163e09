import { type ChildProcess, spawn } from 'node:child_process';
import type { Socket } from 'node:net';

/**
 * The watchdog ends the process groups nyl started when nyl itself dies, by any signal, SIGKILL
 * included (Linux has no parent-death signal a Node process can ask for its children). It is a
 * small bash loop started once per nyl process, on first need, in a process group of its own: nyl
 * writes `+PGID` when a group starts and `-PGID` when it is gone. When its stdin reaches EOF —
 * nyl exited or was killed, the kernel closes the pipe either way — it sends SIGTERM to every
 * group still listed, waits up to the grace for them to go, then sends SIGKILL to what is left.
 * With STATE_FILE it keeps the list there, for a CI post step that runs after a killed main.
 */
const SCRIPT = `
grace_ms=$1; state=$2; live=" "
save() { if [ -n "$state" ]; then printf '%s\\n' $live > "$state.tmp" && mv -f "$state.tmp" "$state"; fi; }
while IFS= read -r line; do
  case $line in
    +*) live="$live\${line#+} " ;;
    -*) live="\${live/ \${line#-} / }" ;;
  esac
  save
done
set -- $live
[ $# -eq 0 ] && exit 0
for g in "$@"; do kill -TERM -- "-$g" 2>/dev/null; done
n=$(( (grace_ms + 99) / 100 ))
while [ $n -gt 0 ]; do
  alive=0
  for g in "$@"; do kill -0 -- "-$g" 2>/dev/null && alive=1; done
  [ $alive -eq 0 ] && break
  sleep 0.1; n=$(( n - 1 ))
done
for g in "$@"; do kill -KILL -- "-$g" 2>/dev/null; done
live=" "; save
exit 0
`;

let child: ChildProcess | undefined;
let settings = { graceMs: 30_000, stateFile: '' };

/** Grace the watchdog gives groups between SIGTERM and SIGKILL, and where it lists them; before first use. */
export function configureWatchdog(opts: { graceMs?: number; stateFile?: string }): void {
  settings = { ...settings, ...opts };
}

function start(): ChildProcess | undefined {
  if (child || process.platform === 'win32') return child;
  try {
    child = spawn('bash', ['-c', SCRIPT, 'nyl-watchdog', String(settings.graceMs), settings.stateFile], {
      detached: true,
      stdio: ['pipe', 'ignore', 'ignore'],
    });
  } catch {
    return undefined;
  }
  child.on('error', () => {
    child = undefined;
  });
  child.stdin?.on('error', () => {});
  // It must never keep nyl alive: nyl exiting is exactly what it waits for.
  child.unref();
  (child.stdin as Socket | null)?.unref();
  return child;
}

/** Puts a process group under the watchdog: it dies with nyl. */
export function guard(pgid: number): void {
  start()?.stdin?.write(`+${pgid}\n`);
}

/** The group is gone (or nyl ended it itself): nothing to do for it any more. */
export function release(pgid: number): void {
  child?.stdin?.write(`-${pgid}\n`);
}
