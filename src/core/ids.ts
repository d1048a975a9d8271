/**
 * Identifier minting: UUIDv7 (time-ordered) for prompts, events and sessions.
 * Uses only the web-standard crypto global; no I/O.
 */
const hex = Array.from({ length: 256 }, (_, i) => i.toString(16).padStart(2, "0"));

/** A UUIDv7: 48-bit millisecond timestamp, version and variant bits, random rest. */
export function uuidv7(now: number = Date.now()): string {
  const bytes = new Uint8Array(16);
  crypto.getRandomValues(bytes);
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
