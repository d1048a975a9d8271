/**
 * The environment the builtin tools' child processes (`bash`) start with: an allow list, not the
 * daemon's whole environment minus two secrets. A daemon's environment carries credentials for
 * everything it was deployed next to (cloud keys, database URLs, CI tokens); a model-driven shell
 * must see only what the operator lets through. The default list is what a shell needs to behave
 * (PATH, HOME, the user and locale, the terminal, the time zone, the temp directory);
 * `tools.env_passthrough` adds names or `PREFIX_*` patterns. The daemon's own secrets (the attach
 * token's and the model key's variables) never pass, even when listed. MCP servers keep the
 * catalog's own rules (`env_mode`, docs/configuration.md#tool-server-catalog-mcpjson).
 */

export const DEFAULT_TOOL_ENV: readonly string[] = [
  "PATH",
  "HOME",
  "USER",
  "LOGNAME",
  "SHELL",
  "LANG",
  "LANGUAGE",
  "LC_*",
  "TERM",
  "COLORTERM",
  "NO_COLOR",
  "TZ",
  "TMPDIR",
  "TMP",
  "TEMP",
  "HOSTNAME",
];

const NAME_PATTERN = /^[A-Za-z_][A-Za-z0-9_]*\*?$/;

/** Whether `entry` is a variable name or a `PREFIX_*` pattern. */
export function isEnvPattern(entry: string): boolean {
  return NAME_PATTERN.test(entry);
}

function matches(name: string, pattern: string): boolean {
  return pattern.endsWith("*") ? name.startsWith(pattern.slice(0, -1)) : name === pattern;
}

/** The variables of `source` the allow list lets through, minus `hidden`. */
export function toolEnvironment(
  source: Readonly<Record<string, string | undefined>>,
  passthrough: readonly string[],
  hidden: readonly string[],
): Record<string, string> {
  const patterns = [...DEFAULT_TOOL_ENV, ...passthrough];
  const secret = new Set(hidden);
  const env: Record<string, string> = {};
  for (const [name, value] of Object.entries(source)) {
    if (value === undefined || secret.has(name)) continue;
    if (patterns.some((pattern) => matches(name, pattern))) env[name] = value;
  }
  return env;
}
