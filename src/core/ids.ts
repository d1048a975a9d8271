/**
 * Identifier minting: UUIDv7 (time-ordered) for prompts, events and sessions.
 * Uses only the web-standard crypto global; no I/O.
 */
const hex = Array.from({ length: 256 }, (_, i) => i.toString(16).padStart(2, "0"));

/**
 * Random bytes drawn 4 KiB at a time (one getRandomValues call per 409 ids instead of one per id:
 * ids are minted for every row, and a burst of approvals mints thousands).
 */
const POOL_BYTES = 4096;
const pool = new Uint8Array(POOL_BYTES);
let poolAt = POOL_BYTES;

function randomBytes(count: number): number {
  if (poolAt + count > POOL_BYTES) {
    crypto.getRandomValues(pool);
    poolAt = 0;
  }
  const at = poolAt;
  poolAt += count;
  return at;
}

/** A UUIDv7: 48-bit millisecond timestamp, version and variant bits, random rest. */
export function uuidv7(now: number = Date.now()): string {
  const bytes = new Uint8Array(16);
  const at = randomBytes(10);
  bytes.set(pool.subarray(at, at + 10), 6);
  let ms = now;
  for (let i = 5; i >= 0; i--) {
    bytes[i] = ms % 256;
    ms = Math.floor(ms / 256);
  }
  bytes[6] = ((bytes[6] ?? 0) & 0x0f) | 0x70;
  bytes[8] = ((bytes[8] ?? 0) & 0x3f) | 0x80;
  let out = "";
  for (let i = 0; i < 16; i++) {
    if (i === 4 || i === 6 || i === 8 || i === 10) out += "-";
    out += hex[bytes[i] ?? 0];
  }
  return out;
}

export function newSessionId(): string {
  return `sess-${uuidv7()}`;
}
