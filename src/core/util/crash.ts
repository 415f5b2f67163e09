/**
 * Fault injection for crash-safety tests: when NYL_TEST_CRASH_AT names this point, the process
 * kills itself with SIGKILL right here, as a runner that dies would; when NYL_TEST_THROW_AT names
 * it, an unexpected error (a bug) is thrown here. Inert otherwise.
 */
export function crashPoint(name: string): void {
  const at = process.env.NYL_TEST_CRASH_AT;
  if (at?.split(',').includes(name)) process.kill(process.pid, 'SIGKILL');
  if (process.env.NYL_TEST_THROW_AT?.split(',').includes(name)) throw new Error(`injected failure at ${name}`);
}
