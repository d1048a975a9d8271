/**
 * The bearer-token table of multi-session auth (`attach.multi_session.auth.table_file`, or
 * `--auth-table`): a JSON or YAML file listing callers and how their token is known, never the
 * token itself in clear:
 *
 *   callers:
 *     - identity: alice@example.com
 *       token_sha256: 2bb80d537b1da3e38bd30361aa855686bde0eacd7162fef6a25fe97bf527a25b
 *     - identity: triage-watcher
 *       token_env: WATCHER_TOKEN        # the token is read from this variable at startup
 *
 * Each entry has exactly one of `token_sha256` (hex of SHA-256 of the token) or `token_env`.
 * Identities and tokens must be unique, and none may be one the daemon itself uses (D328). Errors
 * name the file and the entry.
 */
import { readFileSync } from "node:fs";
import * as v from "valibot";
import { type Result, err, ok } from "../core/result.ts";
import { sha256Hex } from "../surfaces/http/caller-auth.ts";
import { reservedIdentityReason } from "../surfaces/http/reserved-identities.ts";

const Entry = v.object({
  identity: v.pipe(v.string(), v.trim(), v.minLength(1, "identity must not be empty")),
  token_sha256: v.optional(v.pipe(v.string(), v.regex(/^[0-9a-fA-F]{64}$/, "token_sha256 must be 64 hex digits"))),
  token_env: v.optional(v.pipe(v.string(), v.minLength(1))),
});

const Table = v.object({ callers: v.array(Entry) });

export function loadAuthTable(path: string, env: Record<string, string | undefined>): Result<Map<string, string>> {
  let raw: unknown;
  try {
    const text = readFileSync(path, "utf8");
    raw = /\.ya?ml$/i.test(path) ? Bun.YAML.parse(text) : JSON.parse(text);
  } catch (error) {
    return err(`auth table ${path}: ${(error as Error).message}`);
  }
  const parsed = v.safeParse(Table, raw);
  if (!parsed.success) {
    const issue = parsed.issues[0];
    return err(`auth table ${path}: ${issue ? `${v.getDotPath(issue) ?? "file"}: ${issue.message}` : "invalid"}`);
  }
  const tokens = new Map<string, string>();
  const identities = new Set<string>();
  for (const [index, entry] of parsed.output.callers.entries()) {
    const where = `auth table ${path}: callers.${index} (${entry.identity})`;
    if ((entry.token_sha256 === undefined) === (entry.token_env === undefined))
      return err(`${where}: give exactly one of token_sha256 or token_env`);
    let hash = entry.token_sha256?.toLowerCase();
    if (entry.token_env !== undefined) {
      const token = env[entry.token_env];
      if (token === undefined || token.trim() === "")
        return err(`${where}: environment variable ${entry.token_env} is not set or empty`);
      hash = sha256Hex(token);
    }
    if (hash === undefined) return err(`${where}: no token`);
    if (identities.has(entry.identity)) return err(`${where}: identity listed twice`);
    const reserved = reservedIdentityReason(entry.identity);
    if (reserved !== undefined) return err(`${where}: ${reserved}; name the caller otherwise`);
    if (tokens.has(hash)) return err(`${where}: token shared with another caller`);
    identities.add(entry.identity);
    tokens.set(hash, entry.identity);
  }
  return ok(tokens);
}
