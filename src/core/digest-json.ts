/**
 * The structural digest of a JSON value (D352): the same structure, less of it. Long arrays keep
 * their first and last items around a marker counting what was left out (and, when every item is
 * an object of one shape, naming that shape once); long strings are cut with a marker; objects
 * with many keys keep the first ones and count the rest; nesting past a depth is named, not
 * shown. Deterministic and pure: the same value and limits give the same digest.
 */

/** How much of a value a digest keeps; later levels keep less (digestJson tightens until it fits). */
export interface JsonLimits {
  arrayHead: number;
  arrayTail: number;
  maxString: number;
  maxKeys: number;
  maxDepth: number;
}

export const JSON_LEVELS: readonly JsonLimits[] = [
  { arrayHead: 6, arrayTail: 2, maxString: 240, maxKeys: 32, maxDepth: 8 },
  { arrayHead: 3, arrayTail: 1, maxString: 120, maxKeys: 16, maxDepth: 6 },
  { arrayHead: 2, arrayTail: 1, maxString: 60, maxKeys: 8, maxDepth: 4 },
];

/** What a JSON digest left out: the digest_meta of a JSON result. */
export interface JsonElisions {
  elided_items: number;
  cut_strings: number;
  elided_keys: number;
  /** Arrays whose items all share one object shape (named in their marker). */
  uniform_arrays: number;
}

const zeroElisions = (): JsonElisions => ({ elided_items: 0, cut_strings: 0, elided_keys: 0, uniform_arrays: 0 });

/** The keys every item shares, when every item is a plain object with the same keys in the same order. */
function sharedShape(items: readonly unknown[]): string | undefined {
  let shape: string | undefined;
  for (const item of items) {
    if (item === null || typeof item !== "object" || Array.isArray(item)) return undefined;
    const keys = Object.keys(item).join(",");
    if (shape === undefined) shape = keys;
    else if (keys !== shape) return undefined;
  }
  return shape;
}

class Reducer {
  readonly elisions = zeroElisions();
  readonly #limits: JsonLimits;

  constructor(limits: JsonLimits) {
    this.#limits = limits;
  }

  value(value: unknown, depth: number): unknown {
    if (typeof value === "string") return this.#string(value);
    if (value === null || typeof value !== "object") return value;
    if (Array.isArray(value))
      return depth >= this.#limits.maxDepth ? `…[array of ${value.length} items]` : this.#array(value, depth);
    const keys = Object.keys(value);
    if (depth >= this.#limits.maxDepth) return `…[object with ${keys.length} keys]`;
    return this.#object(value as Record<string, unknown>, keys, depth);
  }

  #string(text: string): string {
    const max = this.#limits.maxString;
    if (text.length <= max) return text;
    this.elisions.cut_strings++;
    return `${text.slice(0, max)}…[+${text.length - max} chars]`;
  }

  #array(items: readonly unknown[], depth: number): unknown[] {
    const { arrayHead, arrayTail } = this.#limits;
    // Eliding a single item saves nothing: keep it.
    if (items.length <= arrayHead + arrayTail + 1) return items.map((item) => this.value(item, depth + 1));
    const elided = items.length - arrayHead - arrayTail;
    this.elisions.elided_items += elided;
    const shape = sharedShape(items);
    let marker = `…[${elided} more items]`;
    if (shape !== undefined) {
      this.elisions.uniform_arrays++;
      marker = `…[${elided} more items; all ${items.length} are objects with keys ${shape}]`;
    }
    return [
      ...items.slice(0, arrayHead).map((item) => this.value(item, depth + 1)),
      marker,
      ...items.slice(items.length - arrayTail).map((item) => this.value(item, depth + 1)),
    ];
  }

  #object(record: Record<string, unknown>, keys: readonly string[], depth: number): Record<string, unknown> {
    const max = this.#limits.maxKeys;
    const out: Record<string, unknown> = {};
    const kept = keys.length > max + 1 ? keys.slice(0, max) : keys;
    for (const key of kept) out[key] = this.value(record[key], depth + 1);
    if (kept.length < keys.length) {
      const rest = keys.length - kept.length;
      this.elisions.elided_keys += rest;
      const names = keys.slice(max, max + 8).join(", ");
      out["…"] = `${rest} more keys: ${names}${rest > 8 ? ", …" : ""}`;
    }
    return out;
  }
}

export interface JsonDigest {
  text: string;
  elisions: JsonElisions;
  /** The level of JSON_LEVELS the digest was made at. */
  level: number;
}

/**
 * The digest of a parsed JSON value as compact JSON text: the first level whose text is at most
 * `budgetChars` long, else the last level's.
 */
export function digestJson(value: unknown, budgetChars: number): JsonDigest {
  let digest: JsonDigest | undefined;
  for (let level = 0; level < JSON_LEVELS.length; level++) {
    const limits = JSON_LEVELS[level] as JsonLimits;
    const reducer = new Reducer(limits);
    const text = JSON.stringify(reducer.value(value, 0)) ?? "null";
    digest = { text, elisions: reducer.elisions, level };
    if (text.length <= budgetChars) break;
  }
  return digest as JsonDigest;
}
