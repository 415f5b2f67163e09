import { createHash } from 'node:crypto';
import { join } from 'node:path';
import type { DesiredUnit } from '../resolve/desired.js';
import { notStartedResult } from './command.js';
import type { Driver, ExecuteContext, ExecuteResult, InspectResult, RecoveryPolicy, VerifyResult } from './driver.js';
import { runProcess } from './process.js';

export interface OciSpec {
  image: string;
  source: string;
  platforms?: string[];
  tool?: 'skopeo' | 'docker-buildx';
  tls?: { verify?: boolean; certDir?: string };
}

const TRANSPORT = /^(docker|oci|oci-archive|docker-archive|dir|containers-storage|docker-daemon):/;

/** A reference as skopeo takes it: registry references get `docker://`, transports stay. */
export function skopeoRef(ref: string): string {
  return TRANSPORT.test(ref) ? ref : `docker://${ref}`;
}

/** The digest a source names, when it names one (`…@sha256:…`). */
export function sourceDigest(source: string): string | undefined {
  return /@(sha256:[0-9a-f]{64})$/.exec(source)?.[1];
}

/**
 * Command lines for one unit. skopeo copies with --preserve-digests, so the tag gets exactly the
 * source's manifest (same digest); all platforms of a multi-platform source, unless platforms
 * names some. docker buildx imagetools is the alternative on runners that have it.
 */
export function ociCommands(spec: OciSpec, root: string): { copy: string[][]; inspect: string[] } {
  // Without tls.verify in the spec no flag is passed: the machine's registries.conf decides.
  const verify = spec.tls?.verify;
  const certDir = spec.tls?.certDir ? join(root, spec.tls.certDir) : undefined;
  if (spec.tool === 'docker-buildx') {
    const platforms = (spec.platforms ?? []).flatMap((p) => ['--platform', p]);
    return {
      copy: [
        [
          'docker',
          'buildx',
          'imagetools',
          'create',
          // Keep a single-manifest source as it is (no new index): the tag gets the source's digest.
          '--prefer-index=false',
          ...platforms,
          '--tag',
          spec.image,
          spec.source.replace(/^docker:\/\//, ''),
        ],
      ],
      inspect: ['docker', 'buildx', 'imagetools', 'inspect', spec.image, '--format', '{{json .Manifest.Digest}}'],
    };
  }
  const tls = (side: 'src' | 'dest') => [
    ...(verify !== undefined ? [`--${side}-tls-verify=${verify}`] : []),
    ...(certDir ? [`--${side}-cert-dir=${certDir}`] : []),
  ];
  // skopeo copies one platform (--override-*) or all of them (--multi-arch=all).
  const select = spec.platforms?.length === 1 ? platformOverrides(spec.platforms[0] as string) : ['--multi-arch=all'];
  const copies = [
    [
      'skopeo',
      'copy',
      '--preserve-digests',
      ...select,
      ...tls('src'),
      ...tls('dest'),
      skopeoRef(spec.source),
      skopeoRef(spec.image),
    ],
  ];
  return {
    copy: copies,
    inspect: ['skopeo', 'inspect', '--raw', ...tls('src').map((a) => a.replace('--src-', '--')), skopeoRef(spec.image)],
  };
}

/** skopeo's --override-* flags for one `os/arch[/variant]`. */
function platformOverrides(platform: string): string[] {
  const [os, arch, variant] = platform.split('/');
  return [`--override-os=${os}`, `--override-arch=${arch}`, ...(variant ? [`--override-variant=${variant}`] : [])];
}

const lastLines = (t: string, n: number) => t.replace(/\s+$/, '').split('\n').slice(-n).join('\n');

async function digestOf(
  ctx: ExecuteContext,
  spec: OciSpec,
): Promise<{ digest?: string; missing?: boolean; error?: string }> {
  const argv = ociCommands(spec, ctx.cwd).inspect;
  const r = await runProcess({
    argv,
    cwd: ctx.cwd,
    env: process.env,
    timeoutMs: Math.min(ctx.timeoutMs, 120_000),
    cancellation: ctx.cancellation,
    liveUnit: ctx.unit.name,
    stdoutBytes: 16 * 1024 * 1024, // the manifest, hashed as served
  });
  if (!r.started) return { error: `${argv[0]} could not be started (${r.startError})` };
  if (r.exitCode !== 0) {
    if (/manifest unknown|not found|No such image/i.test(r.tail)) return { missing: true };
    return { error: `${argv.slice(0, 2).join(' ')} exited with ${r.exitCode}: ${lastLines(ctx.mask(r.tail), 3)}` };
  }
  if (spec.tool === 'docker-buildx') {
    const m = /"(sha256:[0-9a-f]{64})"/.exec(r.stdout);
    return m
      ? { digest: m[1] }
      : { error: `docker buildx imagetools inspect printed no digest: ${lastLines(ctx.mask(r.stdout), 2)}` };
  }
  // The raw manifest's sha256 is the digest the registry serves it under.
  return { digest: `sha256:${createHash('sha256').update(r.stdout).digest('hex')}` };
}

export const ociImageDriver: Driver = {
  kind: 'OciImage',

  policy(_unit: DesiredUnit): RecoveryPolicy {
    return 'converge';
  },

  async execute(ctx): Promise<ExecuteResult> {
    const spec = ctx.unit.spec as unknown as OciSpec;
    const started = Date.now();
    let log = '';
    for (const argv of ociCommands(spec, ctx.cwd).copy) {
      const r = await runProcess({
        argv,
        cwd: ctx.cwd,
        env: process.env,
        timeoutMs: ctx.timeoutMs,
        cancellation: ctx.cancellation,
        liveUnit: ctx.unit.name,
      });
      log += `$ ${argv.join(' ')}\n${ctx.mask(r.tail)}`;
      if (!r.started) return notStartedResult(r, log);
      const durationMs = Date.now() - started;
      if (r.timedOut || r.cancelled || r.exitCode === null)
        return {
          status: 'uncertain',
          reason: `copy to ${spec.image} ${r.timedOut ? 'timed out' : 'was stopped'}; the tag may or may not have moved`,
          log,
          durationMs,
        };
      if (r.exitCode !== 0)
        return {
          status: 'failed',
          reason: `${argv[0]} exited with ${r.exitCode}: ${lastLines(ctx.mask(r.tail), 5)}`,
          exitCode: r.exitCode,
          retryable: true,
          log,
          durationMs,
        };
    }
    const d = await digestOf(ctx, spec);
    if (!d.digest)
      return {
        status: 'uncertain',
        reason: `copied, but the pushed digest could not be read: ${d.error ?? 'tag missing'}`,
        log,
        durationMs: Date.now() - started,
      };
    const want = sourceDigest(spec.source);
    // One platform of an index is a different manifest: the digest check applies to whole copies.
    if (want && !spec.platforms?.length && want !== d.digest)
      return {
        status: 'failed',
        reason: `${spec.image} points at ${d.digest} after the copy, not the source's ${want}`,
        retryable: true,
        log,
        durationMs: Date.now() - started,
      };
    return {
      status: 'succeeded',
      outputs: { digest: d.digest, image: `${spec.image.replace(/:[^:/]+$/, '')}@${d.digest}` },
      artifacts: { digest: d.digest },
      log,
      durationMs: Date.now() - started,
    };
  },

  /** The tag's current digest against the receipt's (the observed side of `nyl verify`). */
  async verify(ctx): Promise<VerifyResult | undefined> {
    const spec = ctx.unit.spec as unknown as OciSpec;
    const d = await digestOf(ctx, spec);
    const recorded = ctx.receipt?.artifacts.digest;
    if (d.error) return { state: 'unknown', detail: d.error };
    if (d.missing) return { state: 'drifted', detail: `${spec.image} is gone; the receipt recorded ${recorded}` };
    if (!recorded) return { state: 'unknown', detail: 'the receipt recorded no digest' };
    if (d.digest === recorded) return { state: 'in-sync', detail: '', attestations: { digest: d.digest } };
    return {
      state: 'drifted',
      detail: `${spec.image} points at ${d.digest}; the receipt recorded ${recorded}`,
      attestations: { digest: d.digest as string },
    };
  },

  /** Applied when the tag already points at the source's digest. */
  async inspect(ctx): Promise<InspectResult> {
    const spec = ctx.unit.spec as unknown as OciSpec;
    const want = sourceDigest(spec.source);
    if (!want) return { status: 'unknown', reason: 'the source is not named by digest', log: '' };
    const d = await digestOf(ctx, spec);
    if (d.error) return { status: 'unknown', reason: d.error, log: '' };
    if (d.digest === want)
      return {
        status: 'applied',
        outputs: { digest: want, image: `${spec.image.replace(/:[^:/]+$/, '')}@${want}` },
        artifacts: { digest: want },
        log: '',
      };
    return { status: 'not-applied', log: '' };
  },
};
