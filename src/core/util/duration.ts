const UNITS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };
const PART = /(\d+(?:\.\d+)?)(ms|s|m|h|d)/y;

/** Parses `90s`, `10m`, `1h30m`, `500ms`; returns milliseconds or undefined when malformed. */
export function parseDuration(text: string): number | undefined {
  const s = text.trim();
  if (s === '') return undefined;
  let total = 0;
  PART.lastIndex = 0;
  while (PART.lastIndex < s.length) {
    const at = PART.lastIndex;
    const m = PART.exec(s);
    if (!m || m.index !== at) return undefined;
    total += Number(m[1]) * (UNITS[m[2] as string] as number);
  }
  return Math.round(total);
}

export function formatDuration(ms: number): string {
  if (ms < 1000) return `${ms}ms`;
  const s = ms / 1000;
  if (s < 60) return `${s < 10 ? s.toFixed(1) : Math.round(s)}s`;
  const m = Math.floor(s / 60);
  const rest = Math.round(s - m * 60);
  if (m < 60) return rest ? `${m}m${rest}s` : `${m}m`;
  const h = Math.floor(m / 60);
  return m % 60 ? `${h}h${m % 60}m` : `${h}h`;
}
