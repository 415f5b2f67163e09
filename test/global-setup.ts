import { execFileSync, spawnSync } from 'node:child_process';

const has = (cmd: string) => spawnSync('sh', ['-c', `command -v ${cmd}`]).status === 0;

/**
 * The OCI tests copy images with skopeo into a real registry (Debian's docker-registry). On a
 * fresh Debian machine as root (a developer's or CI's), install them; elsewhere say how.
 */
function ensureRegistryTools(): void {
  if (has('skopeo') && has('docker-registry')) return;
  if (process.getuid?.() === 0 && has('apt-get')) {
    process.stderr.write('test setup: installing skopeo and docker-registry (apt-get) for the OCI image tests\n');
    execFileSync('sh', ['-c', 'apt-get update -qq && apt-get install -y -qq skopeo docker-registry >/dev/null'], {
      stdio: 'inherit',
    });
    return;
  }
  process.stderr.write(
    'test setup: skopeo and docker-registry are missing: `apt-get install -y skopeo docker-registry`\n',
  );
}

/** End-to-end tests run the built CLI exactly as operators do: build it once first. */
export default function setup(): void {
  ensureRegistryTools();
  execFileSync('node', ['scripts/build.mjs'], { stdio: 'inherit' });
}
