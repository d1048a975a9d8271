/**
 * Kubernetes resource quantities (`500m`, `2`, `1.5Gi`, `100M`, `1e3`, `12Ki`) as numbers in the
 * base unit (cores, bytes, counts), for ratios and slopes: the grammar of apimachinery's
 * `resource.Quantity`, a signed decimal followed by a binary-SI suffix (Ki, Mi, Gi, Ti, Pi, Ei),
 * a decimal-SI suffix (n, u, m, k, M, G, T, P, E) or a decimal exponent (`e3`, `E-2`). A float is
 * exact enough for a usage ratio; the text is kept by callers for messages. And their short forms
 * for messages (`980.0MiB`, `850m`). The one quantity reader of the watcher's sources. Pure.
 */

const BINARY: Readonly<Record<string, number>> = {
  Ki: 2 ** 10,
  Mi: 2 ** 20,
  Gi: 2 ** 30,
  Ti: 2 ** 40,
  Pi: 2 ** 50,
  Ei: 2 ** 60,
};

const DECIMAL: Readonly<Record<string, number>> = {
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
};

const QUANTITY = /^([+-]?(?:\d+(?:\.\d*)?|\.\d+))([A-Za-z]*|[eE][+-]?\d+)$/;

/** A quantity's value in its base unit, or undefined when the text is not a quantity. */
export function parseQuantity(text: unknown): number | undefined {
  if (typeof text === "number") return Number.isFinite(text) ? text : undefined;
  if (typeof text !== "string") return undefined;
  const match = QUANTITY.exec(text.trim());
  if (!match) return undefined;
  const [, digits = "", suffix = ""] = match;
  const number = Number(digits);
  const exponent = /^[eE][+-]?\d+$/.exec(suffix);
  const scale = exponent ? 10 ** Number(suffix.slice(1)) : (BINARY[suffix] ?? DECIMAL[suffix]);
  if (scale === undefined || !Number.isFinite(number)) return undefined;
  const value = number * scale;
  return Number.isFinite(value) ? value : undefined;
}

const BYTE_UNITS = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"];

/** Bytes as `980.0MiB`, `1.0GiB`. */
export function formatBytes(bytes: number): string {
  let value = Math.abs(bytes);
  let unit = 0;
  while (value >= 1024 && unit < BYTE_UNITS.length - 1) {
    value /= 1024;
    unit++;
  }
  return `${bytes < 0 ? "-" : ""}${value.toFixed(1)}${BYTE_UNITS[unit]}`;
}

/** Cores as millicores (`850m`). */
export function formatCores(cores: number): string {
  return `${Math.round(cores * 1000)}m`;
}
