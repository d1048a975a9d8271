/**
 * Kubernetes resource quantities (`250m`, `1`, `123456n`, `900Mi`, `1Gi`, `1e3`, `2G`) as plain
 * numbers (cores for CPU, bytes for memory and storage), and their short human forms for
 * messages. Pure; anything unreadable is undefined.
 */

const SUFFIXES: Readonly<Record<string, number>> = {
  n: 1e-9,
  u: 1e-6,
  m: 1e-3,
  "": 1,
  k: 1e3,
  M: 1e6,
  G: 1e9,
  T: 1e12,
  P: 1e15,
  E: 1e18,
  Ki: 2 ** 10,
  Mi: 2 ** 20,
  Gi: 2 ** 30,
  Ti: 2 ** 40,
  Pi: 2 ** 50,
  Ei: 2 ** 60,
};

const QUANTITY = /^([+-]?(?:\d+\.?\d*|\.\d+))(?:([eE][+-]?\d+)|(n|u|m|k|M|G|T|P|E|Ki|Mi|Gi|Ti|Pi|Ei)?)$/;

/** A quantity as a number of base units (cores, bytes); undefined when it is not a quantity. */
export function parseQuantity(value: unknown): number | undefined {
  if (typeof value === "number") return Number.isFinite(value) ? value : undefined;
  if (typeof value !== "string") return undefined;
  const match = QUANTITY.exec(value.trim());
  if (!match) return undefined;
  const number = Number(`${match[1]}${match[2] ?? ""}`);
  const scale = SUFFIXES[match[3] ?? ""] ?? 1;
  const parsed = number * scale;
  return Number.isFinite(parsed) ? parsed : undefined;
}

const BINARY = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"];

/** Bytes as `980.0MiB`, `1.0GiB`. */
export function formatBytes(bytes: number): string {
  let value = Math.abs(bytes);
  let unit = 0;
  while (value >= 1024 && unit < BINARY.length - 1) {
    value /= 1024;
    unit++;
  }
  return `${bytes < 0 ? "-" : ""}${value.toFixed(1)}${BINARY[unit]}`;
}

/** Cores as millicores (`850m`). */
export function formatCores(cores: number): string {
  return `${Math.round(cores * 1000)}m`;
}
