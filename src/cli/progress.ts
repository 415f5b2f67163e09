import type { ProgressEvent } from '../core/ops/workspace/workspace.js';
import { formatDuration } from '../core/util/duration.js';

/**
 * Live progress on stderr: on a terminal one line redrawn every second naming the units that
 * run and for how long; elsewhere (CI logs) one line when a unit starts and when it finishes.
 */
export function progressReporter(
  stream: NodeJS.WriteStream,
  enabled: boolean,
): {
  onEvent: (e: ProgressEvent) => void;
  stop: () => void;
} {
  if (!enabled) return { onEvent: () => {}, stop: () => {} };
  const running = new Map<string, number>();
  const tty = stream.isTTY === true;
  let timer: NodeJS.Timeout | undefined;
  const clear = () => tty && stream.write('\r\x1b[2K');
  const draw = () => {
    if (!tty) return;
    clear();
    if (!running.size) return;
    const now = Date.now();
    const parts = [...running].map(([u, t]) => `${u} ${formatDuration(Math.floor((now - t) / 1000) * 1000)}`);
    const text = `running ${running.size}: ${parts.join(', ')}`;
    const width = stream.columns || 100;
    stream.write(text.length > width - 1 ? `${text.slice(0, width - 2)}…` : text);
  };
  return {
    onEvent(e) {
      if (e.type === 'unit-start') {
        running.set(e.unit, e.at);
        if (!tty) stream.write(`nyl: ${e.unit} (${e.kind}) started\n`);
        if (tty && !timer) timer = setInterval(draw, 1000).unref();
        draw();
      } else if (e.type === 'unit-finish') {
        running.delete(e.unit);
        clear();
        stream.write(`nyl: ${e.unit} (${e.kind}) ${e.result} in ${formatDuration(e.durationMs)}\n`);
        draw();
      } else if (e.type === 'unit-retry') {
        // Waiting is not running: the next attempt's start puts it back on the line.
        running.delete(e.unit);
        clear();
        stream.write(`nyl: ${e.text}\n`);
        draw();
      } else if (e.type === 'note') {
        clear();
        stream.write(`nyl: ${e.text}\n`);
        draw();
      }
    },
    stop() {
      if (timer) clearInterval(timer);
      clear();
    },
  };
}
