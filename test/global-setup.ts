import { execFileSync } from 'node:child_process';

/** End-to-end tests run the built CLI exactly as operators do: build it once first. */
export default function setup(): void {
  execFileSync('node', ['scripts/build.mjs'], { stdio: 'inherit' });
}
