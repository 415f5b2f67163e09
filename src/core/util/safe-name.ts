/** A name that can be one component of a git ref (units and environments name refs and tree paths). */
export const SAFE_NAME = /^[A-Za-z0-9](?:[A-Za-z0-9_.-]{0,98}[A-Za-z0-9_-])?$/;

export function isSafeName(s: string): boolean {
  return SAFE_NAME.test(s) && !s.includes('..') && !s.endsWith('.lock');
}
