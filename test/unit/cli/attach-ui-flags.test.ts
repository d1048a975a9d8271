import { expect, test } from "bun:test";
import { mkdirSync, realpathSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { AGENT_FLAGS } from "../../../src/cli/agent-flags.ts";
import { resolveAttachUi } from "../../../src/cli/attach-ui-flags.ts";
import { buildAgentConfig } from "../../../src/cli/agent-config.ts";
import { parseFlags } from "../../../src/config/flag-parser.ts";
import { tempDir } from "../../support/daemon.ts";

function resolveWith(argv: string[], config: Record<string, unknown>, cwd: string) {
  const flags = parseFlags(AGENT_FLAGS, argv);
  if (!flags.ok) throw new Error(flags.error);
  return resolveAttachUi(flags.value.values, new Map(Object.entries(config)), cwd);
}

const cwd = tempDir("spar-ui-flags-");
mkdirSync(join(cwd, "web"));
writeFileSync(join(cwd, "web", "index.html"), "<p>x</p>");

test("--ui-dir is taken from the working directory and kept as its real path; none by default", () => {
  expect(resolveWith([], {}, cwd)).toEqual({ ok: true, value: { corsOrigins: new Set() } });
  const real = realpathSync(join(cwd, "web"));
  expect(resolveWith(["--ui-dir=web"], {}, cwd)).toEqual({ ok: true, value: { uiDir: real, corsOrigins: new Set() } });
  expect(resolveWith([], { "attach.ui_dir": "./web/" }, cwd)).toMatchObject({ ok: true, value: { uiDir: real } });
});

test("a --ui-dir that is missing or not a directory fails startup naming where it was set", () => {
  expect(resolveWith(["--ui-dir=nope"], {}, cwd)).toEqual({
    ok: false,
    error: `--ui-dir: ${join(cwd, "nope")} does not exist (want the directory of the dashboard's files)`,
  });
  expect(resolveWith([], { "attach.ui_dir": "web/index.html" }, cwd)).toEqual({
    ok: false,
    error: `config key attach.ui_dir: ${join(cwd, "web/index.html")} is not a directory`,
  });
  const agent = parseFlags(AGENT_FLAGS, ["--ui-dir=/no/such/dir"]);
  if (!agent.ok) throw new Error(agent.error);
  const built = buildAgentConfig(agent.value.values, new Map(), cwd, 1);
  expect(built.ok ? "" : built.error).toStartWith("--ui-dir: /no/such/dir does not exist");
});

test("--attach-cors-origins takes exact origins (flag or list key); anything else is refused by name", () => {
  const origins = resolveWith(["--attach-cors-origins=https://dash.example.com, http://localhost:5173"], {}, cwd);
  expect(origins).toEqual({
    ok: true,
    value: { corsOrigins: new Set(["https://dash.example.com", "http://localhost:5173"]) },
  });
  expect(resolveWith([], { "attach.cors_origins": ["https://a.example"] }, cwd)).toEqual({
    ok: true,
    value: { corsOrigins: new Set(["https://a.example"]) },
  });
  const refused = resolveWith(["--attach-cors-origins=https://*.example.com"], {}, cwd);
  expect(refused.ok ? "" : refused.error).toStartWith(
    '--attach-cors-origins: "https://*.example.com" is not an origin',
  );
  const path = resolveWith([], { "attach.cors_origins": "https://a.example/app" }, cwd);
  expect(path.ok ? "" : path.error).toStartWith(
    'config key attach.cors_origins: "https://a.example/app" is not an origin',
  );
});
