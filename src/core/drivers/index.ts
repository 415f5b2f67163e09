import { commandDriver } from './command.js';
import type { Driver } from './driver.js';

const DRIVERS: Record<string, Driver> = { Command: commandDriver };

export function driverFor(kind: string): Driver {
  const d = DRIVERS[kind];
  if (!d) throw new Error(`no driver for kind ${kind}`);
  return d;
}
