/**
 * The agent daemon's config file (D3): `.agents/config.json` or `.agents/config.yaml` in the
 * working directory, or `--config`. Keys are the dotted names of docs/configuration.md#every-key,
 * written nested or dotted; both flatten to one map of dotted key -> value.
 */
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { type Result, err, ok } from "../core/result.ts";

export type ConfigMap = Map<string, unknown>;

/**
 * The settings of a config file, remembering which keys the daemon asked for: after startup the
 * rest are keys nothing reads (a typo, a key of another version), reported instead of silently
 * ignored (D164).
 */
export class TrackedConfig extends Map<string, unknown> {
  readonly #asked = new Set<string>();

  override get(key: string): unknown {
    this.#asked.add(key);
    return super.get(key);
  }

  override has(key: string): boolean {
    this.#asked.add(key);
    return super.has(key);
  }

  /** Whether a setting asked for this key (present or not). */
  wasAsked(key: string): boolean {
    return this.#asked.has(key);
  }

  /** Keys the file sets that no setting asked for, in file order. */
  unread(): string[] {
    return [...this.keys()].filter((key) => !this.#asked.has(key));
  }
}

function flatten(prefix: string, value: unknown, out: ConfigMap): void {
  if (typeof value === "object" && value !== null && !Array.isArray(value)) {
    for (const [key, inner] of Object.entries(value)) flatten(prefix ? `${prefix}.${key}` : key, inner, out);
    return;
  }
  out.set(prefix, value);
}

export function defaultConfigPath(cwd: string): string | undefined {
  for (const name of ["config.json", "config.yaml", "config.yml"]) {
    const path = join(cwd, ".agents", name);
    if (existsSync(path)) return path;
  }
  return undefined;
}

export function loadConfigFile(path: string | undefined): Result<TrackedConfig> {
  const out = new TrackedConfig();
  if (path === undefined) return ok(out);
  let text: string;
  try {
    text = readFileSync(path, "utf8");
  } catch (error) {
    return err(`config file ${path} cannot be read: ${(error as Error).message}`);
  }
  let parsed: unknown;
  try {
    parsed = /\.ya?ml$/i.test(path) ? Bun.YAML.parse(text) : JSON.parse(text);
  } catch (error) {
    return err(
      `config file ${path} is not valid ${/\.ya?ml$/i.test(path) ? "YAML" : "JSON"}: ${(error as Error).message}`,
    );
  }
  if (parsed === null || parsed === undefined) return ok(out);
  if (typeof parsed !== "object" || Array.isArray(parsed))
    return err(`config file ${path} must hold an object of settings`);
  flatten("", parsed, out);
  return ok(out);
}
