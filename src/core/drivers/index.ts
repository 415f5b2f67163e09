import { commandDriver } from './command.js';
import type { Driver } from './driver.js';
import { ociImageDriver } from './oci.js';
import { openTofuDriver, terraformDriver } from './tofu-driver.js';

const DRIVERS: Record<string, Driver> = {
  Command: commandDriver,
  OpenTofu: openTofuDriver,
  Terraform: terraformDriver,
  OciImage: ociImageDriver,
};

export function driverFor(kind: string): Driver {
  const d = DRIVERS[kind];
  if (!d) throw new Error(`no driver for kind ${kind}`);
  return d;
}
