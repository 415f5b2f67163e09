import { Exit, type ExitCode, worstExit } from '../../util/errors.js';
import type { OpReport, RunReport } from '../workspace/report.js';
import type { EnvPlan } from './plan.js';
import type { BatchEntry } from './record.js';
import type { BatchEntryReport, BatchReport } from './report.js';

/** The exit code in words, as an environment's entry records it. */
const WORDS: Record<number, string> = { 0: 'success', 1: 'failed', 2: 'refused', 3: 'drift', 4: 'uncertain' };
export const word = (exit: number) => WORDS[exit] ?? 'failed';

export function doneOf(r: RunReport | OpReport, at: string): NonNullable<BatchEntry['done']> {
  if ('outcome' in r) {
    const run = r.facts.find(([k]) => k === 'run')?.[1];
    return {
      ...(typeof run === 'string' && run ? { run } : {}),
      result: r.outcome === 'superseded' ? 'superseded' : word(r.exit),
      exit: r.exit,
      at,
      detail: r.outcome,
    };
  }
  return {
    ...(r.run ? { run: r.run } : {}),
    result: word(r.exit),
    exit: r.exit,
    at,
    ...(r.run ? {} : { detail: 'nothing to do' }),
  };
}

export function recordedEntry(e: BatchEntry, detail?: string): BatchEntryReport {
  const d = e.done as NonNullable<BatchEntry['done']>;
  return {
    environment: e.environment,
    token: e.plan,
    state: 'recorded',
    created: false,
    run: d.run,
    result: d.result,
    exit: d.exit as ExitCode,
    at: d.at,
    detail: detail ?? d.detail ?? `recorded at ${d.at}`,
  };
}

export function notRun(e: BatchEntry, token: string | undefined): BatchEntryReport {
  return {
    environment: e.environment,
    ...(token ? { token } : {}),
    state: 'not run',
    created: false,
    result: e.last?.result ?? 'not run',
    exit: Exit.ok,
    detail: e.last ? `last attempt: ${e.last.code ?? e.last.result} at ${e.last.at}` : undefined,
  };
}

export function nothingToDo(
  base: Omit<BatchReport, 'outcome' | 'environments' | 'problems' | 'exit'>,
  plans: EnvPlan[],
) {
  const problems = plans.flatMap((p) => p.report.problems);
  return {
    ...base,
    outcome: 'nothing to do',
    environments: plans.map(
      (p): BatchEntryReport => ({
        environment: p.environment,
        token: p.token,
        state: 'current',
        result: word(p.report.exit),
        exit: p.report.exit,
        detail: 'nothing to do',
        report: { ...p.report, operation: 'reconcile', extra: [] },
      }),
    ),
    problems,
    exit: worstExit(plans.map((p) => p.report.exit)),
  } satisfies BatchReport;
}
