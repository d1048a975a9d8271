/**
 * mcp.json loading and validation, one case per fatal rule of the spec's table with its
 * message (the key named), plus what must load: `${VAR}` and `$VAR` expansion, allowlist after
 * expansion on both sides, env modes, unknown fields tolerated, tool overrides, no_digest.
 */
import { describe, expect, test } from "bun:test";
import { expandVars, parseCatalog } from "../../../src/mcp/catalog.ts";

const env = { BIN: "/opt/bin", TOKEN: "t0k", EMPTY: "" };
const load = (raw: unknown) => parseCatalog(typeof raw === "string" ? raw : JSON.stringify(raw), "/cfg/mcp.json", env);
const failure = (raw: unknown) => {
  const result = load(raw);
  if (result.ok) throw new Error("expected a refusal");
  return result.error;
};
const stdio = (extra: Record<string, unknown> = {}) => ({ transport: "stdio", command: "/opt/bin/tool", ...extra });

describe("fatal rules, each naming the key", () => {
  const cases: Array<[string, unknown, string]> = [
    ["not JSON", "{version: 1", "mcp.json /cfg/mcp.json: not valid JSON"],
    ["not an object", "[1]", "mcp.json /cfg/mcp.json: (top level): must be a JSON object"],
    ["version missing", { servers: { a: stdio() } }, "mcp.json /cfg/mcp.json: version: required; must be 1"],
    ["version 2", { version: 2, servers: { a: stdio() } }, "mcp.json /cfg/mcp.json: version: must be 1, not 2"],
    ["version as a string", { version: "1", servers: { a: stdio() } }, 'version: must be 1, not "1"'],
    ["servers missing", { version: 1 }, "servers: required; a map of server name to server"],
    ["servers empty", { version: 1, servers: {} }, "servers: must not be empty"],
    ["servers a list", { version: 1, servers: [stdio()] }, "servers: must be a map of server name to server"],
    ["empty server name", { version: 1, servers: { "": stdio() } }, 'servers."": a server name must not be empty'],
    ["blank server name", { version: 1, servers: { "  ": stdio() } }, 'servers."  ": a server name must not be empty'],
    ["server not an object", { version: 1, servers: { a: "stdio" } }, "servers.a: must be an object"],
    [
      "transport missing",
      { version: 1, servers: { a: { command: "x" } } },
      'servers.a.transport: required: "http" or "stdio"',
    ],
    [
      "transport unknown",
      { version: 1, servers: { a: { transport: "sse", url: "http://x" } } },
      'servers.a.transport: must be "http" or "stdio", not "sse"',
    ],
    [
      "http without url",
      { version: 1, servers: { web: { transport: "http" } } },
      'servers.web.url: required for transport "http"',
    ],
    [
      "http with a bad url",
      { version: 1, servers: { web: { transport: "http", url: "not a url" } } },
      'servers.web.url: "not a url" is not a URL',
    ],
    [
      "http with a non-http url",
      { version: 1, servers: { web: { transport: "http", url: "file:///etc/passwd" } } },
      "servers.web.url: must be an http or https URL",
    ],
    [
      "stdio without command",
      { version: 1, servers: { a: { transport: "stdio", args: [] } } },
      'servers.a.command: required for transport "stdio"',
    ],
    [
      "stdio command expanding to nothing",
      { version: 1, servers: { a: { transport: "stdio", command: "${EMPTY}" } } },
      'servers.a.command: "${EMPTY}" expands to an empty string',
    ],
    [
      "args not strings",
      { version: 1, servers: { a: stdio({ args: ["--x", 1] }) } },
      "servers.a.args: must be an array of strings",
    ],
    [
      "env_mode unknown",
      { version: 1, servers: { a: stdio({ env_mode: "none" }) } },
      'servers.a.env_mode: must be "inherit" or "clean", not "none"',
    ],
    [
      "no_digest not a boolean",
      { version: 1, servers: { a: stdio({ no_digest: "yes" }) } },
      'servers.a.no_digest: must be a boolean, not "yes"',
    ],
    [
      "env_passthrough under inherit",
      { version: 1, servers: { a: stdio({ env_passthrough: ["HOME"] }) } },
      'servers.a.env_passthrough: only allowed with env_mode "clean"',
    ],
    [
      "env value not a string",
      { version: 1, servers: { a: stdio({ env: { N: 1 } }) } },
      "servers.a.env.N: must be a string",
    ],
    [
      "command outside the allowlist",
      { version: 1, command_allowlist: ["/usr/bin/ok"], servers: { a: stdio() } },
      'servers.a.command: "/opt/bin/tool" is not in command_allowlist',
    ],
    [
      "allowlist not strings",
      { version: 1, command_allowlist: "/usr/bin/ok", servers: { a: stdio() } },
      "command_allowlist: must be an array of strings",
    ],
    [
      "scopes not strings",
      {
        version: 1,
        servers: { web: { transport: "http", url: "https://x/mcp", auth: { google_oauth: { scopes: "all" } } } },
      },
      "servers.web.auth.google_oauth.scopes: must be an array of strings",
    ],
    [
      "override not a boolean",
      { version: 1, servers: { a: stdio({ tool_overrides: { t: { mutating: "no" } } }) } },
      "servers.a.tool_overrides.t.mutating: must be a boolean",
    ],
  ];
  for (const [name, raw, message] of cases) {
    test(name, () => {
      const error = failure(raw);
      expect(error).toContain(message);
      expect(error).toStartWith("mcp.json /cfg/mcp.json: ");
    });
  }
});

describe("what loads", () => {
  test("${VAR} and $VAR expand in command, args and env; unset expands to nothing; no escape for $", () => {
    expect(expandVars("${BIN}/x $TOKEN-$NOPE ${NOPE}end $$", env)).toBe("/opt/bin/x t0k- end $$");
    const result = load({
      version: 1,
      servers: { a: { transport: "stdio", command: "${BIN}/tool", args: ["--token=$TOKEN"], env: { K: "${TOKEN}" } } },
    });
    expect(result.ok && result.value.servers[0]).toMatchObject({
      command: "/opt/bin/tool",
      args: ["--token=t0k"],
      env: { K: "t0k" },
      envMode: "inherit",
    });
  });

  test("the allowlist compares after expanding both sides, literally (no PATH resolution)", () => {
    expect(
      load({
        version: 1,
        command_allowlist: ["${BIN}/tool"],
        servers: { a: { transport: "stdio", command: "$BIN/tool" } },
      }).ok,
    ).toBe(true);
    expect(
      load({
        version: 1,
        command_allowlist: ["tool"],
        servers: { a: { transport: "stdio", command: "/opt/bin/tool" } },
      }).ok,
    ).toBe(false);
    // An empty allowlist allows everything; http servers are not checked.
    expect(load({ version: 1, command_allowlist: [], servers: { a: stdio() } }).ok).toBe(true);
    expect(
      load({
        version: 1,
        command_allowlist: ["/x"],
        servers: { web: { transport: "http", url: "http://127.0.0.1:1/mcp" } },
      }).ok,
    ).toBe(true);
  });

  test("unknown fields are tolerated; clean mode keeps its passthrough; http auth scopes; overrides; no_digest recorded when true", () => {
    const result = load({
      version: 1,
      comment: "ours",
      servers: {
        a: stdio({
          env_mode: "clean",
          env_passthrough: ["HOME"],
          no_digest: true,
          tool_overrides: { read: { mutating: false }, nothing: {} },
        }),
        web: {
          transport: "http",
          url: "https://example.test/mcp",
          auth: { google_oauth: { scopes: [] } },
          no_digest: false,
          extra: 1,
        },
        plain: { transport: "http", url: "http://127.0.0.1:9/mcp", no_digest: true },
      },
    });
    if (!result.ok) throw new Error(result.error);
    expect(result.value.servers).toEqual([
      {
        name: "a",
        transport: "stdio",
        command: "/opt/bin/tool",
        args: [],
        envMode: "clean",
        envPassthrough: ["HOME"],
        env: {},
        overrides: { read: false },
        noDigest: true,
      },
      { name: "web", transport: "http", url: "https://example.test/mcp", googleOauthScopes: [], overrides: {} },
      { name: "plain", transport: "http", url: "http://127.0.0.1:9/mcp", overrides: {}, noDigest: true },
    ]);
  });
});
