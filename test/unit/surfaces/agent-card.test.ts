/**
 * The agent card (spec: Agent card; Security fields table), in-process through the guarded app on
 * Elysia: layer order, url derivation, skills merge, security rows, 404 / 405 / public answers,
 * and card-file errors. Every card the route emits is validated against the vendored A2A v0.3.0
 * schema's `definitions.AgentCard` (D24).
 */
import { describe, expect, test } from "bun:test";
import Ajv from "ajv";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { hostname } from "node:os";
import { join } from "node:path";
import type { ConfigMap } from "../../../src/config/config-file.ts";
import type { FlagValue } from "../../../src/config/flag-spec.ts";
import { parseFlags } from "../../../src/config/flag-parser.ts";
import {
  type AgentCardOptions,
  type BundleSkill,
  AGENT_CARD_PATH,
  agentCardRoutes,
  buildAgentCard,
} from "../../../src/surfaces/attach/agent-card.ts";
import type { AgentCard } from "../../../src/protocols/a2a/a2a-wire.ts";
import { parseAllowedHosts } from "../../../src/surfaces/http/host-allowlist.ts";
import { type PublicOrigin, publicBaseUrl } from "../../../src/surfaces/http/public-origin.ts";
import {
  AGENT_CARD_FLAGS,
  type AgentCardInput,
  type AgentCardSettings,
  loadAgentCardSettings,
} from "../../../src/surfaces/attach/agent-card-config.ts";
import { LOCAL_CALLER } from "../../../src/surfaces/http/caller-auth.ts";
import { guardedApp } from "../../../src/surfaces/http/guarded-app.ts";
import { tempDir } from "../../support/daemon.ts";

const CARD_URL = "http://spar.test/.well-known/agent-card.json";

/** A listener vouching for `names`, at `own` once listening. */
function origin(names: string[], own?: { host: string; port: number }): PublicOrigin {
  const vouched = parseAllowedHosts(names, "--attach-allowed-hosts");
  if (!vouched.ok) throw new Error(vouched.error);
  return { vouched: vouched.value, own: () => own };
}

const ajv = new Ajv({ strict: true, allErrors: true });
ajv.addSchema(
  JSON.parse(readFileSync(join(import.meta.dir, "../../fixtures/a2a-v0.3.0.schema.json"), "utf8")) as object,
  "a2a",
);
const validateCard = ajv.getSchema("a2a#/definitions/AgentCard");
if (!validateCard) throw new Error("the A2A schema has no definitions.AgentCard");

function expectValidCard(card: unknown): AgentCard {
  const valid = validateCard?.(card);
  expect(validateCard?.errors ?? []).toEqual([]);
  expect(valid).toBe(true);
  return card as AgentCard;
}

function cardApp(
  settings: () => AgentCardSettings | undefined,
  options: Partial<AgentCardOptions> = {},
  token: string | undefined = "t",
) {
  return guardedApp({
    transport: { token, readonly: false },
    resolveCaller: () => LOCAL_CALLER,
    publicPaths: new Set([AGENT_CARD_PATH]),
  }).use(
    agentCardRoutes(
      settings,
      { bearer: false, mtls: false, skills: () => [], origin: origin(["agent.internal"]), ...options },
      undefined,
    ),
  );
}

function settings(extra: Partial<AgentCardSettings> = {}): AgentCardSettings {
  return {
    name: "spar",
    description: "Answers questions about the cluster.",
    version: "1.2.3",
    extraSkills: [],
    ...extra,
  };
}

async function fetchCard(app: ReturnType<typeof cardApp>, headers: Record<string, string> = {}): Promise<AgentCard> {
  const response = await app.handle(new Request(CARD_URL, { headers }));
  expect(response.status).toBe(200);
  expect(response.headers.get("content-type")).toBe("application/json");
  return expectValidCard(await response.json());
}

function input(
  cwd: string,
  flags: Record<string, FlagValue> = {},
  config: Record<string, unknown> = {},
): AgentCardInput {
  return {
    config: new Map(Object.entries(config)) as ConfigMap,
    flags: new Map(Object.entries(flags)),
    cwd,
    version: "9.9.9",
    defaultName: "core-agent",
  };
}

function writeCardFile(dir: string, body: unknown, name = ".agents/agent-card.json"): string {
  const path = join(dir, name);
  mkdirSync(join(path, ".."), { recursive: true });
  writeFileSync(path, typeof body === "string" ? body : JSON.stringify(body));
  return path;
}

function loaded(cardInput: AgentCardInput): AgentCardSettings {
  const result = loadAgentCardSettings(cardInput);
  if (!result.ok) throw new Error(result.error);
  return result.value;
}

function loadError(cardInput: AgentCardInput): string {
  const result = loadAgentCardSettings(cardInput);
  if (result.ok) throw new Error(`expected an error, got ${JSON.stringify(result.value)}`);
  return result.error;
}

describe("layers", () => {
  test("defaults: no file, no flags; name and version fall back; no description disables the card", () => {
    const dir = tempDir();
    const value = loaded(input(dir));
    expect(value).toEqual({ name: "core-agent", version: "9.9.9", extraSkills: [] });
    expect(
      buildAgentCard(value, new Request(CARD_URL), { bearer: false, mtls: false, skills: () => [] }),
    ).toBeUndefined();
  });

  test("config agent.description < card file < flags, field by field", async () => {
    const dir = tempDir();
    const config = { "agent.description": "from config" };
    expect(loaded(input(dir, {}, config)).description).toBe("from config");

    const path = writeCardFile(dir, {
      version: 1,
      name: "file-name",
      description: "from file",
      agent_version: "2.0.0",
      documentation_url: "https://docs.example.com/file",
      provider: { organization: "File Org", url: "https://file.example.com" },
      external_url: "https://file.example.com/agent",
    });
    const fromFile = loaded(input(dir, {}, config));
    expect(fromFile).toEqual({
      name: "file-name",
      description: "from file",
      version: "2.0.0",
      documentationUrl: "https://docs.example.com/file",
      provider: { organization: "File Org", url: "https://file.example.com" },
      externalUrl: "https://file.example.com/agent",
      extraSkills: [],
      cardFile: path,
    });

    const flags = {
      "agent-card-description": "from flags",
      "agent-card-name": "flag-name",
      "agent-card-version": "3.0.0",
      "agent-card-docs-url": "https://docs.example.com/flag",
      "agent-card-provider-org": "Flag Org",
      "agent-card-external-url": "https://flag.example.com/agent",
    };
    const fromFlags = loaded(input(dir, flags, config));
    expect(fromFlags).toMatchObject({
      name: "flag-name",
      description: "from flags",
      version: "3.0.0",
      documentationUrl: "https://docs.example.com/flag",
      // provider fields merge one by one: the org from the flag, the url from the file
      provider: { organization: "Flag Org", url: "https://file.example.com" },
      externalUrl: "https://flag.example.com/agent",
    });

    const card = await fetchCard(cardApp(() => fromFlags));
    expect(card).toMatchObject({
      name: "flag-name",
      description: "from flags",
      version: "3.0.0",
      protocolVersion: "0.3.0",
      documentationUrl: "https://docs.example.com/flag",
      provider: { organization: "Flag Org", url: "https://file.example.com" },
      url: "https://flag.example.com/agent",
    });
  });

  test("flags parsed from argv with AGENT_CARD_FLAGS feed the loader", () => {
    expect(AGENT_CARD_FLAGS.map((spec) => spec.name).sort()).toEqual([
      "agent-card-config",
      "agent-card-description",
      "agent-card-docs-url",
      "agent-card-external-url",
      "agent-card-name",
      "agent-card-provider-org",
      "agent-card-provider-url",
      "agent-card-version",
    ]);
    for (const spec of AGENT_CARD_FLAGS) {
      expect(spec.kind).toBe("string");
      expect(spec.help.length).toBeGreaterThan(10);
    }
    const parsed = parseFlags(AGENT_CARD_FLAGS, [
      "--agent-card-description=Triage bot",
      "--agent-card-provider-org",
      "Acme",
      "--agent-card-provider-url=https://acme.example",
      "--agent-card-config=-",
    ]);
    if (!parsed.ok) throw new Error(parsed.error);
    expect(loaded(input(tempDir(), Object.fromEntries(parsed.value.values)))).toEqual({
      name: "core-agent",
      description: "Triage bot",
      version: "9.9.9",
      provider: { organization: "Acme", url: "https://acme.example" },
      extraSkills: [],
    });
  });

  test("`-` skips the card file, even a broken one at the default path", () => {
    const dir = tempDir();
    writeCardFile(dir, { version: 7, description: "ignored" });
    expect(loadError(input(dir))).toContain("unsupported version 7");
    const value = loaded(input(dir, { "agent-card-config": "-" }, { "agent.description": "config only" }));
    expect(value.description).toBe("config only");
    expect(value.cardFile).toBeUndefined();
  });

  test("an explicit card file path resolves against cwd", () => {
    const dir = tempDir();
    const path = writeCardFile(dir, { version: 1, description: "custom place" }, "cards/mine.json");
    const value = loaded(input(dir, { "agent-card-config": "cards/mine.json" }));
    expect(value.description).toBe("custom place");
    expect(value.cardFile).toBe(path);
  });
});

describe("card file and flag errors", () => {
  const cases: Array<[string, unknown, string[]]> = [
    ["unknown version", { version: 2, description: "x" }, ["unsupported version 2", "version 1"]],
    ["missing version", { description: "x" }, ['field "version" is required']],
    [
      "only extra_skills",
      { version: 1, extra_skills: [{ id: "a", name: "A", description: "does a" }] },
      ['field "extra_skills"', "only"],
    ],
    ["wrong type", { version: 1, name: 5 }, ['field "name" must be a string']],
    [
      "wrong nested type",
      { version: 1, description: "x", extra_skills: [{ id: "a", name: "A", description: "d", tags: "t" }] },
      ['field "extra_skills.0.tags"', "array"],
    ],
    [
      "provider without url",
      { version: 1, description: "x", provider: { organization: "Acme" } },
      ['field "provider.url" is required'],
    ],
    [
      "bad url",
      { version: 1, description: "x", documentation_url: "docs" },
      ['field "documentation_url" must be an absolute URL'],
    ],
    ["unknown field", { version: 1, descripton: "typo" }, ['unknown field "descripton"']],
    [
      "repeated skill id",
      {
        version: 1,
        description: "x",
        extra_skills: [
          { id: "a", name: "A", description: "d" },
          { id: "a", name: "B", description: "e" },
        ],
      },
      ['field "extra_skills.1.id" repeats id "a"'],
    ],
    ["not JSON", "{version: 1", ["is not valid JSON"]],
    ["not an object", [1, 2], ["must be a JSON object"]],
  ];
  for (const [name, body, fragments] of cases) {
    test(`${name}: the error names the file and the field`, () => {
      const dir = tempDir();
      const path = writeCardFile(dir, body);
      const message = loadError(input(dir));
      expect(message).toContain(`agent card file ${path}`);
      for (const fragment of fragments) expect(message).toContain(fragment);
    });
  }

  test("a missing default file is fine; a missing explicitly named file is an error", () => {
    const dir = tempDir();
    expect(loadAgentCardSettings(input(dir)).ok).toBe(true);
    const message = loadError(input(dir, { "agent-card-config": "nope.json" }));
    expect(message).toContain(`agent card file ${join(dir, "nope.json")} does not exist`);
    expect(message).toContain("--agent-card-config");
  });

  test("flag values are checked and named", () => {
    const dir = tempDir();
    expect(loadError(input(dir, { "agent-card-name": "  " }))).toBe("--agent-card-name must not be empty");
    expect(loadError(input(dir, { "agent-card-external-url": "ftp://x.example" }))).toBe(
      "--agent-card-external-url must be an http or https URL",
    );
    expect(loadError(input(dir, { "agent-card-docs-url": "not a url" }))).toBe(
      "--agent-card-docs-url must be an absolute URL",
    );
    expect(loadError(input(dir, { "agent-card-provider-org": "Acme" }))).toContain("needs a provider url");
    expect(loadError(input(dir, { "agent-card-provider-url": "https://acme.example" }))).toContain(
      "needs a provider organization",
    );
    expect(loadError(input(dir, {}, { "agent.description": 42 }))).toContain(
      "config agent.description must be a string",
    );
  });
});

describe("GET /.well-known/agent-card.json", () => {
  test("url: Host; X-Forwarded-Host and X-Forwarded-Proto only from a trusted proxy", async () => {
    const app = cardApp(() => settings());
    expect((await fetchCard(app, { host: "agent.internal:8080" })).url).toBe("http://agent.internal:8080");
    // In process there is no peer address, so no trusted proxy: forwarded headers are ignored.
    expect(
      (
        await fetchCard(app, {
          host: "agent.internal:8080",
          "x-forwarded-proto": "https",
          "x-forwarded-host": "agents.example.com",
        })
      ).url,
    ).toBe("http://agent.internal:8080");
    // no Host header at all (in-process): the request URL's host
    expect((await fetchCard(app)).url).toBe("http://spar.test");
  });

  test("url from a trusted proxy: X-Forwarded-Host and X-Forwarded-Proto take precedence, junk is ignored", () => {
    const url = (headers: Record<string, string>) =>
      publicBaseUrl(new Request(CARD_URL, { headers }), origin(["agent.internal"]), true);
    expect(url({ host: "agent.internal:8080", "x-forwarded-proto": "https" })).toBe("https://agent.internal:8080");
    expect(url({ host: "agent.internal:8080", "x-forwarded-host": "agents.example.com" })).toBe(
      "http://agents.example.com",
    );
    expect(
      url({
        host: "agent.internal",
        "x-forwarded-proto": "https, http",
        "x-forwarded-host": "edge.example.com, proxy.internal",
      }),
    ).toBe("https://edge.example.com");
    expect(url({ host: "agent.internal", "x-forwarded-proto": "gopher", "x-forwarded-host": "evil/path" })).toBe(
      "http://agent.internal",
    );
  });

  test("a Host the listener does not vouch for never reaches the url: the listener's own address does (D333)", () => {
    const url = (host: string, own = { host: "10.0.0.5", port: 7777 }, trusted = false) =>
      publicBaseUrl(
        new Request(CARD_URL, { headers: { host } }),
        origin(["agent.internal", "*.corp.example"], own),
        trusted,
      );
    expect(url("evil.example")).toBe("http://10.0.0.5:7777");
    expect(url("evil.example:7777")).toBe("http://10.0.0.5:7777");
    // Vouched for: loopback names and addresses, the allowed names, the listener's own address.
    expect(url("localhost:7777")).toBe("http://localhost:7777");
    expect(url("127.0.0.1:9")).toBe("http://127.0.0.1:9");
    expect(url("agent.internal")).toBe("http://agent.internal");
    expect(url("a.corp.example:8443")).toBe("http://a.corp.example:8443");
    expect(url("10.0.0.5:7777")).toBe("http://10.0.0.5:7777");
    // Bound to every interface: the machine's name stands in.
    expect(url("evil.example", { host: "", port: 7777 })).toBe(`http://${hostname()}:7777`);
    expect(url("evil.example", { host: "::1", port: 7 })).toBe("http://[::1]:7");
    // Untrusted forwarded headers are ignored, and the Host beside them is still checked.
    expect(
      publicBaseUrl(
        new Request(CARD_URL, { headers: { host: "evil.example", "x-forwarded-host": "agent.internal" } }),
        origin([], { host: "10.0.0.5", port: 7777 }),
      ),
    ).toBe("http://10.0.0.5:7777");
  });

  test("external_url overrides the derived url", async () => {
    const app = cardApp(() => settings({ externalUrl: "https://agents.example.com/triage" }));
    const card = await fetchCard(app, {
      host: "agent.internal",
      "x-forwarded-proto": "http",
      "x-forwarded-host": "proxy.internal",
    });
    expect(card.url).toBe("https://agents.example.com/triage");
  });

  test("skills: bundles tagged skill, curated tagged curated by default, curated wins on id, re-read per fetch", async () => {
    const bundles: BundleSkill[] = [
      { id: "triage", name: "Triage", description: "from the bundle" },
      { id: "summarize", name: "Summarize", description: "summarizes" },
    ];
    const dir = tempDir();
    writeCardFile(dir, {
      version: 1,
      description: "triage bot",
      extra_skills: [
        {
          id: "triage",
          name: "Cluster triage",
          description: "curated description",
          examples: ["why is pod x crashing?"],
        },
        { id: "escalate", name: "Escalate", description: "pages a human", tags: ["ops", "pager"] },
      ],
    });
    const app = cardApp(() => loaded(input(dir)), { skills: () => bundles });
    expect((await fetchCard(app)).skills).toEqual([
      {
        id: "triage",
        name: "Cluster triage",
        description: "curated description",
        tags: ["curated"],
        examples: ["why is pod x crashing?"],
      },
      { id: "summarize", name: "Summarize", description: "summarizes", tags: ["skill"] },
      { id: "escalate", name: "Escalate", description: "pages a human", tags: ["ops", "pager"] },
    ]);
    bundles.push({ id: "report", name: "Report", description: "writes a report" });
    expect((await fetchCard(app)).skills.map((skill) => skill.id)).toEqual([
      "triage",
      "summarize",
      "report",
      "escalate",
    ]);
  });

  test("no skills at all still emits an (empty) skills list", async () => {
    expect((await fetchCard(cardApp(() => settings()))).skills).toEqual([]);
  });

  const securityRows: Array<[string, Pick<AgentCardOptions, "bearer" | "mtls">, unknown, unknown]> = [
    ["none", { bearer: false, mtls: false }, undefined, undefined],
    ["bearer token", { bearer: true, mtls: false }, { bearer: { type: "http", scheme: "Bearer" } }, [{ bearer: [] }]],
    ["client CA", { bearer: false, mtls: true }, { mtls: { type: "mutualTLS" } }, [{ mtls: [] }]],
    [
      "both",
      { bearer: true, mtls: true },
      { bearer: { type: "http", scheme: "Bearer" }, mtls: { type: "mutualTLS" } },
      [{ bearer: [], mtls: [] }],
    ],
  ];
  for (const [row, auth, schemes, security] of securityRows) {
    test(`security fields, ${row}`, async () => {
      const card = await fetchCard(cardApp(() => settings(), auth));
      expect(card.securitySchemes).toEqual(schemes as AgentCard["securitySchemes"]);
      expect(card.security).toEqual(security as AgentCard["security"]);
      if (schemes === undefined) {
        expect("securitySchemes" in card).toBe(false);
        expect("security" in card).toBe(false);
      }
    });
  }

  test("required A2A fields are present with the values this daemon means", async () => {
    const card = await fetchCard(cardApp(() => settings()));
    expect(card).toEqual({
      name: "spar",
      description: "Answers questions about the cluster.",
      url: "http://spar.test",
      version: "1.2.3",
      protocolVersion: "0.3.0",
      capabilities: { streaming: false, pushNotifications: false, stateTransitionHistory: false },
      defaultInputModes: ["text/plain"],
      defaultOutputModes: ["text/plain"],
      skills: [],
    });
  });

  test("without a description: a card-shaped 404, also for HEAD; settings set later enable the card", async () => {
    let current: AgentCardSettings | undefined;
    const app = cardApp(() => current);
    for (const value of [undefined, { name: "spar", version: "1", extraSkills: [] }]) {
      current = value;
      const response = await app.handle(new Request(CARD_URL));
      expect(response.status).toBe(404);
      expect(response.headers.get("content-type")).toBe("application/json");
      const body = (await response.json()) as { error: string; card: null };
      expect(body.card).toBeNull();
      expect(body.error).toContain("no agent card is configured");
      expect((await app.handle(new Request(CARD_URL, { method: "HEAD" }))).status).toBe(404);
    }
    current = settings();
    expect((await fetchCard(app)).name).toBe("spar");
  });

  test("HEAD answers like GET without a body", async () => {
    const app = cardApp(() => settings());
    const get = await app.handle(new Request(CARD_URL));
    const head = await app.handle(new Request(CARD_URL, { method: "HEAD" }));
    expect(head.status).toBe(200);
    expect(head.headers.get("content-type")).toBe("application/json");
    expect(await head.text()).toBe("");
    expect(head.headers.get("content-length")).toBe(String((await get.arrayBuffer()).byteLength));
  });

  test("other methods: 405 with Allow: GET, HEAD, never 401 or 415 even with a token configured", async () => {
    const app = cardApp(() => settings(), { bearer: true }, "secret");
    for (const method of ["POST", "PUT", "PATCH", "DELETE", "OPTIONS"]) {
      for (const headers of [{}, { "content-type": "application/json", origin: "https://evil.example" }]) {
        const response = await app.handle(new Request(CARD_URL, { method, headers }));
        expect(response.status).toBe(405);
        expect(response.headers.get("allow")).toBe("GET, HEAD");
        expect(((await response.json()) as { error: string }).error).toContain(`method ${method} is not allowed`);
      }
    }
  });

  test("public on the exact path only: no token needed there, 401 on near misses", async () => {
    const app = cardApp(() => settings(), { bearer: true }, "secret");
    await fetchCard(app);
    for (const path of ["/.well-known/agent-card.json/", "/.well-known/agent-card.jsonx", "/.well-known/agent-card"]) {
      expect((await app.handle(new Request(`http://spar.test${path}`))).status).toBe(401);
    }
    // a wrong token on the public path is not checked either
    await fetchCard(app, { "x-attach-token": "wrong" });
  });

  test("the schema check itself rejects a card missing a required field", () => {
    const card = buildAgentCard(settings(), new Request(CARD_URL), { bearer: false, mtls: false, skills: () => [] });
    const { skills: _skills, ...withoutSkills } = card ?? ({} as AgentCard);
    expect(validateCard?.(withoutSkills)).toBe(false);
  });
});
