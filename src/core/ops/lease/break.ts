import { hostname } from 'node:os';
import type { RefUpdate } from '../../git/repo.js';
import { groupAlive, type ListedGroup, stopsListedIn } from '../../proc/watchdog.js';
import type { LeaseDoc, RunRecord } from '../../state/documents.js';
import { FILES } from '../../state/documents.js';
import { currentHolder, holderText, type LeaseVerdict, leaseVerdict } from '../../state/lease.js';
import type { EnvState, Unreadable } from '../../state/read.js';
import { prettyJson } from '../../util/canonical.js';
import { Exit, NylError, type Problem, problem } from '../../util/errors.js';
import { isoTime } from '../../util/time.js';
import type { OpReport } from '../workspace/report.js';
import { subjectOf } from '../workspace/unreadable.js';
import { loadEnvironment, type OpContext } from '../workspace/workspace.js';

/** The run and evidence refs a break sets aside (one per ref, however many of its files are unreadable). */
function setAsideOf(replaced: Unreadable[]): Unreadable[] {
  return [...new Map(replaced.filter((u) => u.scope !== 'lease').map((u) => [u.ref, u])).values()];
}

/** What `lease break` may replace: a lease, run or evidence ref it cannot read is its business. */
const replaceable = (u: Unreadable) => u.scope === 'lease' || u.scope === 'run' || u.scope === 'evidence';

/**
 * Declares the lease's holder gone: a new lease commit in state `broken` naming who broke it and
 * why. The holder, if alive, can no longer write state; only an importer takes the lease over.
 * It is also the way out of state that cannot be read: an unreadable lease is replaced, and an
 * unreadable run or evidence ref is set aside under `unreadable/`, all recorded in the break.
 */
export async function leaseBreak(ctx: OpContext, opts: { environment: string; reason: string }): Promise<OpReport> {
  const env = opts.environment;
  // A way out: a commit whose paths name nothing does not stand in its way.
  const { state } = await loadEnvironment(ctx, env, replaceable, { files: 'lenient' });
  const v = leaseVerdict(state, ctx.now());
  const base = { operation: 'lease-break', environment: env };
  const replaced = state.unreadable.filter(replaceable);
  if (!replaced.length && v.kind === 'free')
    return {
      ...base,
      outcome: 'nothing to break',
      facts: [['lease', state.lease ? state.lease.state : 'none']],
      problems: [],
      exit: Exit.ok,
    };
  if (!replaced.length && v.kind === 'broken')
    return { ...base, outcome: 'already broken', facts: [['broken', `run ${v.run}`]], problems: [], exit: Exit.ok };
  const held = await writeBreak(ctx, state, v, opts.reason);
  const setAside = setAsideOf(replaced);
  const tools = toolsOf(state.runs.get(held.run)?.record);
  const problems: Problem[] = [
    problem(
      'NYL-LEASE-HELD',
      `the lease of run ${held.run} by ${holderText(held.holder)} was broken; if that run is still alive it may still cause effects, but it can no longer write state`,
      {
        severity: 'warning',
        exit: Exit.ok,
        fix: 'make sure the runner is gone; units it was executing become uncertain at the next run',
      },
    ),
  ];
  if (tools.alive.length)
    problems.push(
      problem(
        'NYL-TOOLS-RUNNING',
        `run ${held.run} ran on this host, and its tools still run in process groups ${tools.alive.map((g) => g.pgid).join(', ')}: the next run would start its units on top of them`,
        {
          severity: 'warning',
          subject: held.run,
          exit: Exit.ok,
          fix: `stop them before the next run: ${stopAdvice(tools.alive)}`,
        },
      ),
    );
  for (const u of setAside)
    problems.push(
      problem(
        'NYL-STATE-UNREADABLE',
        `${u.ref} could not be read (${u.cause}) and was set aside to ${state.refs.unreadable(u.id as string)}; what run ${u.id} did cannot be known from it`,
        {
          severity: 'warning',
          subject: u.ref,
          exit: Exit.ok,
          fix: `check the units that run may have been executing; \`git show ${u.tip}\` shows what is left of its record`,
        },
      ),
    );
  const facts: [string, unknown][] = [['broken', `run ${held.run}`]];
  if (tools.fact) facts.push(['tools', tools.fact]);
  if (replaced.length) facts.push(['replaced', replaced.map((u) => `${subjectOf(u)} (${u.cause})`)]);
  return { ...base, outcome: 'done', facts, problems, exit: Exit.ok };
}

/**
 * Writes the broken lease (one push): who broke it and why, and what it replaced when the lease,
 * a run or an evidence ref could not be read. Returns the lease as it was held. Refused with
 * NYL-LEASE-HELD when the lease moved meanwhile.
 */
export async function writeBreak(ctx: OpContext, state: EnvState, v: LeaseVerdict, reason: string): Promise<LeaseDoc> {
  const replaced = state.unreadable.filter(replaceable);
  const held = heldLease(state, v, replaced, ctx.now());
  const who = await ctx.repo.signature();
  const setAside = setAsideOf(replaced);
  const broken: LeaseDoc = {
    ...held,
    state: 'broken',
    broken: {
      at: isoTime(ctx.now()),
      by: `${who.name} <${who.email}>`,
      reason: reason,
      ...(replaced.length
        ? {
            replaced: replaced.map((u) => ({
              ref: subjectOf(u),
              tip: u.tip,
              cause: u.cause,
              ...(u.scope !== 'lease' ? { setAside: state.refs.unreadable(u.id as string) } : {}),
            })),
          }
        : {}),
    },
  };
  const leaseTip = state.tips.lease;
  const parentOk = leaseTip && (await ctx.repo.readObject(leaseTip))?.type === 'commit';
  const batch = ctx.repo.batch();
  const tree = batch.tree(new Map([[FILES.lease, Buffer.from(prettyJson(broken))]]));
  const commit = batch.commit({
    tree,
    parents: parentOk ? [leaseTip] : [],
    author: who,
    message: `nyl: break lease ${state.environment} of run ${held.run}\n\nreason: ${reason}\n${replaced.map((u) => `replaced: ${subjectOf(u)} (${u.cause})\n`).join('')}`,
  });
  await batch.flush();
  const updates: RefUpdate[] = [{ ref: state.refs.lease, old: leaseTip, new: commit }];
  for (const u of setAside)
    updates.push(
      { ref: u.ref, old: u.tip, new: undefined },
      { ref: state.refs.unreadable(u.id as string), old: undefined, new: u.tip },
    );
  const intent = {
    environment: state.environment,
    what: `the lease break of ${state.environment} (run ${held.run})`,
    ifLanded: `the lease is broken: the next \`nyl reconcile -e ${state.environment}\` or \`nyl recover -e ${state.environment} --reason <text>\` imports the run`,
    ifNot: 'the lease is as it was; break it again',
  };
  if (!(await ctx.backend.update(updates, intent)))
    throw new NylError(
      problem('NYL-LEASE-HELD', `the lease of ${state.environment} changed while breaking it`, {
        exit: Exit.refused,
        fix: `run \`nyl status -e ${state.environment}\` and break it again if its holder is still gone`,
      }),
    );
  return held;
}

/**
 * The lease as held, to be broken: the lease document itself, or — when the lease ref is gone or
 * cannot be read — one rebuilt from the run ref that holds the environment.
 */
function heldLease(state: EnvState, v: LeaseVerdict, replaced: Unreadable[], now: number): LeaseDoc {
  const runId =
    v.kind === 'held' || v.kind === 'expired' || v.kind === 'broken'
      ? v.run
      : (replaced.find((u) => u.id)?.id ?? state.lease?.run ?? 'unknown');
  if (state.lease && state.lease.run === runId) return state.lease;
  const run = state.runs.get(runId);
  return {
    schema: 'nyl.lease/v1',
    environment: state.environment,
    state: 'held',
    run: runId,
    operation: run?.record?.operation ?? 'unknown',
    holder: run?.record?.holder ?? (replaced.length ? { id: 'unknown' } : currentHolder()),
    acquiredAt: run?.record?.startedAt ?? isoTime(now),
    renewedAt: run?.record?.updatedAt ?? isoTime(now),
    deadline: run?.record?.deadline ?? isoTime(now),
  };
}

/**
 * On the host where the broken run ran, whether its tools are gone: the process groups its record
 * names and its watchdog still lists, with how each is stopped. (Run elsewhere, nothing can be
 * told from here.)
 */
function toolsOf(record: RunRecord | undefined): { fact?: string; alive: ListedGroup[] } {
  const sup = record?.supervisor;
  if (!sup || sup.host !== hostname()) return { alive: [] };
  const listed = new Map((sup.groupsFile ? stopsListedIn(sup.groupsFile) : []).map((g) => [g.pgid, g]));
  const plain = (pgid: number): ListedGroup => ({ pgid, signal: 'SIGTERM', leader: false, sent: false });
  const groups = [...new Set([...(record?.processGroups ?? []), ...listed.keys()])];
  const alive = groups.filter(groupAlive).map((g) => listed.get(g) ?? plain(g));
  const pgids = alive.map((g) => g.pgid).join(', ');
  if (alive.length) return { fact: `still running on this host (process groups ${pgids})`, alive };
  return { fact: 'gone (it ran on this host)', alive };
}

/**
 * The commands that stop them: SIGTERM to a group; terraform and tofu (leader-only) SIGINT to the
 * tool alone (its providers die of SIGTERM, mid-change), once (a second makes it exit at once, so
 * not when the watchdog sent it), and SIGKILL to their group if they outlive the grace.
 */
function stopAdvice(alive: ListedGroup[]): string {
  const groups = alive.filter((g) => !g.leader).map((g) => `-${g.pgid}`);
  const tools = alive.filter((g) => g.leader);
  const interrupt = tools.filter((g) => !g.sent).map((g) => `${g.pgid}`);
  const parts: string[] = [];
  if (groups.length) parts.push(`\`kill -TERM -- ${groups.join(' ')}\``);
  if (interrupt.length) parts.push(`\`kill -INT -- ${interrupt.join(' ')}\` (terraform or tofu: the tool alone, once)`);
  if (tools.length)
    parts.push(`\`kill -KILL -- ${tools.map((g) => `-${g.pgid}`).join(' ')}\` if still running after the grace`);
  return parts.join('; ');
}
