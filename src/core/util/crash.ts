/**
 * Fault injection for crash-safety tests: when NYL_TEST_CRASH_AT names this point, the process
 * kills itself with SIGKILL right here, as a runner that dies would. Inert otherwise.
 */
export function crashPoint(name: string): void {
  const at = process.env.NYL_TEST_CRASH_AT;
  if (at?.split(',').includes(name)) process.kill(process.pid, 'SIGKILL');
}
