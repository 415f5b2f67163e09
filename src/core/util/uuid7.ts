import { randomFillSync } from 'node:crypto';

/** Random bytes drawn 256 ids at a time: a first reconcile makes an id per unit, each a system call otherwise. */
const POOL = Buffer.alloc(16 * 256);
let used = POOL.length;

/** UUIDv7 (RFC 9562): 48-bit unix milliseconds, then random bits; sorts by creation time. */
export function uuid7(now: number = Date.now()): string {
  if (used === POOL.length) {
    randomFillSync(POOL);
    used = 0;
  }
  const b = Buffer.from(POOL.subarray(used, used + 16));
  used += 16;
  // 48 bits of milliseconds, big-endian: the high 16 and the low 32 (exact in a double).
  const high = Math.floor(now / 2 ** 32);
  b.writeUInt16BE(high & 0xffff, 0);
  b.writeUInt32BE(now - high * 2 ** 32, 2);
  b[6] = ((b[6] as number) & 0x0f) | 0x70;
  b[8] = ((b[8] as number) & 0x3f) | 0x80;
  const h = b.toString('hex');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
}
