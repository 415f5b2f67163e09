import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeOciLayout, OCI_MANIFEST, type OciLayout } from './helpers/oci.js';
import {
  hasRegistryTools,
  missingRegistryTools,
  REGISTRY_TOOLS_MISSING,
  type Registry,
  startRegistry,
} from './helpers/registry.js';

/*
 * Digest-preserving copies (what the OciImage driver must run), verified below against
 * skopeo 1.9.3 and distribution 2.8.2:
 *
 *   skopeo --policy <policy.json> copy --preserve-digests \
 *     [--src-tls-verify=false] [--dest-tls-verify=false] [--digestfile <file>] SRC DEST
 *
 * - Without flags, skopeo keeps the source manifest byte for byte when the destination accepts
 *   its type (distribution accepts OCI manifests), but it silently converts (e.g. OCI -> Docker
 *   v2s2) or recompresses layers when it thinks it has to, and the digest then changes.
 *   `--preserve-digests` forbids any edit of the manifest: the copy keeps the digest or fails.
 * - Never pass `--format` (or `--dest-compress-format`): forcing a manifest type is a conversion
 *   and gives a new digest. skopeo 1.9.3 lets `--preserve-digests` win and ignores `--format`;
 *   newer versions may refuse the copy instead. Either way the digest never changes silently.
 * - Copy by digest (`docker://host/repo@sha256:…`) to promote exactly the image that was tested;
 *   a registry->registry copy with `--preserve-digests` only writes the same manifest under the
 *   new tag (blobs are mounted/skipped, nothing is re-encoded).
 * - `--tls-verify=false` (inspect) / `--src-tls-verify=false` / `--dest-tls-verify=false` are needed
 *   only because the test registry speaks plain HTTP on 127.0.0.1.
 * - `--policy` points at our own insecureAcceptAnything policy so the tests do not depend on
 *   /etc/containers/policy.json existing on the host.
 */

let registry: Registry | undefined;
let work: string;
let policy: string;
let v1: OciLayout;
let v2: OciLayout;

function host(): string {
  if (!registry) throw new Error('registry not started');
  return registry.host;
}

function skopeoEnv(): NodeJS.ProcessEnv {
  // An auth file of our own, so the host's credentials are neither read nor written.
  return { ...process.env, REGISTRY_AUTH_FILE: join(work, 'auth.json') };
}

function skopeo(...args: string[]): string {
  const r = spawnSync('skopeo', ['--policy', policy, ...args], { env: skopeoEnv(), encoding: 'utf8' });
  if (r.status !== 0) {
    throw new Error(`skopeo ${args.join(' ')} failed (${r.error?.message ?? `exit ${r.status}`}):\n${r.stderr}`);
  }
  return r.stdout;
}

function trySkopeo(...args: string[]): { status: number | null; stderr: string } {
  const r = spawnSync('skopeo', ['--policy', policy, ...args], { env: skopeoEnv(), encoding: 'utf8' });
  return { status: r.status, stderr: r.stderr };
}

/** The digest of what `ref` (a `docker://` or `oci:` reference) currently points at, per skopeo. */
function inspectDigest(ref: string): string {
  const tls = ref.startsWith('docker://') ? ['--tls-verify=false'] : [];
  return skopeo('inspect', ...tls, '--format', '{{.Digest}}', ref).trim();
}

/** The digest the registry itself reports for `repo:reference`, without skopeo. */
async function registryDigest(repo: string, reference: string): Promise<string | null> {
  const res = await fetch(`http://${host()}/v2/${repo}/manifests/${reference}`, {
    method: 'HEAD',
    headers: { Accept: OCI_MANIFEST },
  });
  if (res.status === 404) return null;
  expect(res.status).toBe(200);
  expect(res.headers.get('content-type')).toBe(OCI_MANIFEST);
  return res.headers.get('docker-content-digest');
}

beforeAll(async () => {
  // Fail every test loudly (never skip) when the tools are missing.
  if (!hasRegistryTools()) {
    throw new Error(`${REGISTRY_TOOLS_MISSING} (missing: ${missingRegistryTools().join(', ')})`);
  }
  work = mkdtempSync(join(tmpdir(), 'nyl-oci-'));
  policy = join(work, 'policy.json');
  writeFileSync(policy, JSON.stringify({ default: [{ type: 'insecureAcceptAnything' }] }));
  v1 = makeOciLayout(join(work, 'v1'), { tag: 'v1', content: 'hello from v1\n' });
  v2 = makeOciLayout(join(work, 'v2'), { tag: 'v2', content: 'hello from v2\n' });
  registry = await startRegistry();
});

afterAll(async () => {
  await registry?.stop();
  if (work) rmSync(work, { recursive: true, force: true });
});

describe('OCI layouts built with node', () => {
  it('are deterministic and differ by content', () => {
    expect(v1.digest).toMatch(/^sha256:[0-9a-f]{64}$/);
    expect(v2.digest).toMatch(/^sha256:[0-9a-f]{64}$/);
    expect(v1.digest).not.toBe(v2.digest);
    const again = makeOciLayout(join(work, 'again'), { tag: 'x', content: 'hello from v1\n' });
    expect(again.digest).toBe(v1.digest);
    // A second tag in the same layout keeps the first one.
    const second = makeOciLayout(join(work, 'again'), { tag: 'y', content: 'hello from v2\n' });
    expect(second.digest).toBe(v2.digest);
    expect(inspectDigest(`oci:${join(work, 'again')}:x`)).toBe(v1.digest);
    expect(inspectDigest(`oci:${join(work, 'again')}:y`)).toBe(v2.digest);
    const arm = makeOciLayout(join(work, 'arm'), {
      tag: 'x',
      content: 'hello from v1\n',
      platform: { os: 'linux', architecture: 'arm64' },
    });
    expect(arm.digest).not.toBe(v1.digest);
  });

  it('are valid for skopeo, and the layer is a real tar.gz holding hello.txt', () => {
    expect(inspectDigest(`oci:${v1.dir}:v1`)).toBe(v1.digest);
    expect(inspectDigest(`oci:${v2.dir}:v2`)).toBe(v2.digest);
    const manifest = JSON.parse(readFileSync(join(v1.dir, 'blobs/sha256', v1.digest.slice(7)), 'utf8')) as {
      layers: { digest: string }[];
    };
    const layer = join(v1.dir, 'blobs/sha256', manifest.layers[0]!.digest.slice(7));
    expect(execFileSync('tar', ['-tzf', layer], { encoding: 'utf8' })).toBe('hello.txt\n');
    expect(execFileSync('tar', ['-xzOf', layer, 'hello.txt'], { encoding: 'utf8' })).toBe('hello from v1\n');
  });
});

describe('skopeo against a real registry', () => {
  it('pushes an OCI layout keeping its manifest digest', async () => {
    const digestfile = join(work, 'pushed-v1.digest');
    skopeo(
      'copy',
      '--quiet',
      '--preserve-digests',
      '--dest-tls-verify=false',
      '--digestfile',
      digestfile,
      `oci:${v1.dir}:v1`,
      `docker://${host()}/app:v1`,
    );
    expect(readFileSync(digestfile, 'utf8').trim()).toBe(v1.digest);
    expect(inspectDigest(`docker://${host()}/app:v1`)).toBe(v1.digest);
    expect(await registryDigest('app', 'v1')).toBe(v1.digest);
    // Plain `copy` (no flags) keeps it too here, because distribution accepts OCI manifests.
    skopeo('copy', '--quiet', '--dest-tls-verify=false', `oci:${v1.dir}:v1`, `docker://${host()}/app:plain`);
    expect(inspectDigest(`docker://${host()}/app:plain`)).toBe(v1.digest);
  });

  it('promotes by digest to another tag with the same digest', async () => {
    expect(await registryDigest('app', 'prod')).toBeNull();
    skopeo(
      'copy',
      '--quiet',
      '--preserve-digests',
      '--src-tls-verify=false',
      '--dest-tls-verify=false',
      `docker://${host()}/app@${v1.digest}`,
      `docker://${host()}/app:prod`,
    );
    expect(inspectDigest(`docker://${host()}/app:prod`)).toBe(v1.digest);
    expect(await registryDigest('app', 'prod')).toBe(v1.digest);
  });

  it('retagging prod to v2 changes its digest', async () => {
    skopeo(
      'copy',
      '--quiet',
      '--preserve-digests',
      '--dest-tls-verify=false',
      `oci:${v2.dir}:v2`,
      `docker://${host()}/app:v2`,
    );
    expect(inspectDigest(`docker://${host()}/app:v2`)).toBe(v2.digest);
    skopeo(
      'copy',
      '--quiet',
      '--preserve-digests',
      '--src-tls-verify=false',
      '--dest-tls-verify=false',
      `docker://${host()}/app@${v2.digest}`,
      `docker://${host()}/app:prod`,
    );
    expect(inspectDigest(`docker://${host()}/app:prod`)).toBe(v2.digest);
    expect(await registryDigest('app', 'prod')).toBe(v2.digest);
    expect(v2.digest).not.toBe(v1.digest);
    // v1 is untouched by the retag.
    expect(inspectDigest(`docker://${host()}/app:v1`)).toBe(v1.digest);
  });

  it('a manifest conversion changes the digest, and --preserve-digests never lets it happen silently', () => {
    skopeo(
      'copy',
      '--quiet',
      '--format',
      'v2s2',
      '--dest-tls-verify=false',
      `oci:${v1.dir}:v1`,
      `docker://${host()}/app:converted`,
    );
    expect(inspectDigest(`docker://${host()}/app:converted`)).not.toBe(v1.digest);

    const r = trySkopeo(
      'copy',
      '--quiet',
      '--preserve-digests',
      '--format',
      'v2s2',
      '--dest-tls-verify=false',
      `oci:${v1.dir}:v1`,
      `docker://${host()}/app:guarded`,
    );
    // skopeo 1.9.3 keeps the original manifest (ignores --format); newer versions may refuse.
    if (r.status === 0) expect(inspectDigest(`docker://${host()}/app:guarded`)).toBe(v1.digest);
    else expect(r.stderr).not.toBe('');
  });

  it('stop() ends the registry', async () => {
    const other = await startRegistry();
    const res = await fetch(`http://${other.host}/v2/`);
    expect(res.status).toBe(200);
    await other.stop();
    await expect(fetch(`http://${other.host}/v2/`)).rejects.toThrow();
  });
});
