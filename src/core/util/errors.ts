/** Exit codes of DESIGN §6. */
export const Exit = {
  ok: 0,
  failed: 1,
  refused: 2,
  drift: 3,
  uncertain: 4,
} as const;
export type ExitCode = (typeof Exit)[keyof typeof Exit];

/** A problem as operators read it: `error|warning NYL-CODE (subject)`, explanation, fix. */
export interface Problem {
  severity: 'error' | 'warning';
  code: string;
  subject?: string;
  message: string;
  fix?: string;
  /** Exit code this problem implies. */
  exit: ExitCode;
}

/** An error that ends an operation with a known code; faces render it, never a stack trace. */
export class NylError extends Error {
  readonly problems: Problem[];
  constructor(problems: Problem | Problem[]) {
    const list = Array.isArray(problems) ? problems : [problems];
    super(list.map((p) => `${p.code}: ${p.message}`).join('\n'));
    this.problems = list;
  }
  get exit(): ExitCode {
    return worstExit(this.problems.map((p) => p.exit));
  }
}

export function problem(
  code: string,
  message: string,
  opts: { subject?: string; fix?: string; exit?: ExitCode; severity?: 'error' | 'warning' } = {},
): Problem {
  return {
    severity: opts.severity ?? 'error',
    code,
    subject: opts.subject,
    message,
    fix: opts.fix,
    exit: opts.exit ?? Exit.failed,
  };
}

export function fail(
  code: string,
  message: string,
  opts: { subject?: string; fix?: string; exit?: ExitCode } = {},
): never {
  throw new NylError(problem(code, message, opts));
}

/** Precedence when several conditions hold: uncertainty first, then failure, drift, refusal. */
export function worstExit(codes: readonly number[]): ExitCode {
  const order: ExitCode[] = [Exit.uncertain, Exit.failed, Exit.drift, Exit.refused];
  for (const c of order) if (codes.includes(c)) return c;
  return Exit.ok;
}
