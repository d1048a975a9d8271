/**
 * One tenant against another on a multi-session daemon: rewriting the daemon-wide price book,
 * reading every tenant's activity on /metrics, probing for sessions through POST /sessions,
 * mapping routes without credentials, and a proxy asserting identities it should not (an admin,
 * or one outside the assertable list). Each attack is refused and changes nothing.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { sha256Hex } from "../../src/surfaces/http/caller-auth.ts";
import { postJson, tempDir } from "../support/daemon.ts";
import { type InProcessAgent, startInProcessAgent } from "../support/in-process-agent.ts";

const tokens = {
  alice: "tok-alice",
  bob: "tok-bob",
  root: "tok-root",
  gateway: "tok-gateway",
  opengate: "tok-opengate",
};
let daemon: InProcessAgent;
let openProxy: InProcessAgent;

function files(config: object): string[] {
  const dir = tempDir();
  writeFileSync(
    join(dir, "callers.json"),
    JSON.stringify({
      callers: Object.entries(tokens).map(([identity, token]) => ({ identity, token_sha256: sha256Hex(token) })),
    }),
  );
  writeFileSync(join(dir, "config.json"), JSON.stringify(config));
  return ["--multi-session", `--auth-table=${join(dir, "callers.json")}`, `--config=${join(dir, "config.json")}`];
}

beforeAll(async () => {
  [daemon, openProxy] = await Promise.all([
    startInProcessAgent({
      args: files({
        attach: {
          multi_session: {
            auth: {
              admin_identities: ["root"],
              proxy_identities: ["gateway"],
              assertable_identities: ["carol", "dave"],
            },
          },
        },
      }),
    }),
    startInProcessAgent({
      args: files({
        attach: {
          multi_session: {
            auth: { admin_identities: ["root"], proxy_identities: ["opengate"], proxy_may_assert_admins: true },
          },
        },
      }),
    }),
  ]);
  for (const [owner, sessionID] of [
    ["alice", "alices"],
    ["bob", "bobs"],
  ] as const) {
    expect((await postJson(`${daemon.baseUrl}/sessions`, { sessionID }, as(owner))).status).toBe(201);
  }
});
afterAll(async () => {
  await Promise.all([daemon.stop(), openProxy.stop()]);
});

const as = (who: keyof typeof tokens, extra: Record<string, string> = {}) => ({
  authorization: `Bearer ${tokens[who]}`,
  ...extra,
});

async function errorOf(response: Response): Promise<string> {
  expect(response.headers.get("content-type")).toContain("application/json");
  return ((await response.json()) as { error: string }).error;
}

describe("the daemon-wide price book", () => {
  test("a tenant cannot set a price on its own session path (403), and nobody's costs change", async () => {
    const before = await (await fetch(`${daemon.baseUrl}/sessions/bobs/pricing`, { headers: as("bob") })).json();
    const refused = await postJson(
      `${daemon.baseUrl}/sessions/alices/pricing/set`,
      { model: "echo", input_usd_per_mtok: 1_000_000, output_usd_per_mtok: 1_000_000 },
      as("alice"),
    );
    expect(refused.status).toBe(403);
    expect(await errorOf(refused)).toContain("only an admin");
    expect(await (await fetch(`${daemon.baseUrl}/sessions/bobs/pricing`, { headers: as("bob") })).json()).toEqual(
      before,
    );
  });

  test("an admin may set it; the other tenant's session then reads the admin's price", async () => {
    const set = await postJson(
      `${daemon.baseUrl}/sessions/alices/pricing/set`,
      { model: "echo", input_usd_per_mtok: 1, output_usd_per_mtok: 2 },
      as("root"),
    );
    expect(set.status).toBe(204);
    const rate = (
      (await (await fetch(`${daemon.baseUrl}/sessions/bobs/pricing`, { headers: as("bob") })).json()) as {
        rate: { input_usd_per_mtok: number };
      }
    ).rate;
    expect(rate.input_usd_per_mtok).toBe(1);
  });
});

describe("/metrics", () => {
  test("is admin-only with per-caller auth", async () => {
    const refused = await fetch(`${daemon.baseUrl}/metrics`, { headers: as("alice") });
    expect(refused.status).toBe(403);
    expect(await errorOf(refused)).toContain("admins");
    const served = await fetch(`${daemon.baseUrl}/metrics`, { headers: as("root") });
    expect(served.status).toBe(200);
    expect(await served.text()).toContain("spar_sessions_live");
  });
});

describe("POST /sessions as an existence oracle", () => {
  test("an id another tenant holds answers exactly like a missing session (404), not 409", async () => {
    const taken = await postJson(`${daemon.baseUrl}/sessions`, { sessionID: "alices" }, as("bob"));
    expect(taken.status).toBe(404);
    const hidden = await fetch(`${daemon.baseUrl}/sessions/spar/alices/status`, { headers: as("bob") });
    const missing = await fetch(`${daemon.baseUrl}/sessions/spar/nosuch/status`, { headers: as("bob") });
    expect(hidden.status).toBe(404);
    expect(await errorOf(taken)).toBe(await errorOf(hidden));
    expect(await errorOf(missing)).toBe("session not found: spar/nosuch");
    // The owner still learns its own id is taken.
    expect((await postJson(`${daemon.baseUrl}/sessions`, { sessionID: "alices" }, as("alice"))).status).toBe(409);
    // Nothing changed for the owner.
    const acl = (await (await fetch(`${daemon.baseUrl}/sessions/alices/acl`, { headers: as("alice") })).json()) as {
      owner: string;
    };
    expect(acl.owner).toBe("alice");
  });
});

describe("routing answers need credentials", () => {
  test("an unknown path or a wrong method answers 401 without a token, not 404 or 405 with Allow", async () => {
    for (const [method, path] of [
      ["GET", "/no/such/path"],
      ["PUT", "/sessions/alices/inject"],
      ["DELETE", "/whoami"],
    ] as const) {
      const response = await fetch(`${daemon.baseUrl}${path}`, {
        method,
        headers: { "content-type": "application/json" },
      });
      expect({ path, status: response.status, allow: response.headers.get("allow") }).toEqual({
        path,
        status: 401,
        allow: null,
      });
      expect(response.headers.get("www-authenticate")).toBe('Bearer realm="attach-multisession"');
    }
    const known = await fetch(`${daemon.baseUrl}/sessions/alices/inject`, { method: "PUT", headers: as("alice") });
    expect(known.status).toBe(405);
    expect(known.headers.get("allow")).toContain("POST");
  });

  test("/healthz and the agent card stay public", async () => {
    expect((await fetch(`${daemon.baseUrl}/healthz`)).status).toBe(200);
    expect(
      (await fetch(`${daemon.baseUrl}/healthz`, { method: "POST", headers: { "content-type": "application/json" } }))
        .status,
    ).toBe(405);
  });
});

describe("proxy assertions", () => {
  const whoami = (target: InProcessAgent, headers: Record<string, string>) =>
    fetch(`${target.baseUrl}/whoami`, { headers });

  test("a proxy cannot assert an admin identity (401), so it cannot act as root", async () => {
    const response = await whoami(daemon, as("gateway", { "x-asserted-caller": "root" }));
    expect(response.status).toBe(401);
    expect(await errorOf(response)).toContain("admin identity");
    const set = await postJson(
      `${daemon.baseUrl}/sessions/alices/pricing/set`,
      { model: "echo", input_usd_per_mtok: 9, output_usd_per_mtok: 9 },
      as("gateway", { "x-asserted-caller": "root" }),
    );
    expect(set.status).toBe(401);
  });

  test("a proxy may assert only the identities listed as assertable", async () => {
    expect(await (await whoami(daemon, as("gateway", { "x-asserted-caller": "carol" }))).json()).toEqual({
      identity: "carol",
      admin: false,
      source: "asserted",
      proxy_by: "gateway",
    });
    const outside = await whoami(daemon, as("gateway", { "x-asserted-caller": "alice" }));
    expect(outside.status).toBe(401);
    expect(await errorOf(outside)).toContain("assertable_identities");
    // alice's session stays out of the proxy's reach through her name.
    expect(
      (
        await fetch(`${daemon.baseUrl}/sessions/alices/status`, {
          headers: as("gateway", { "x-asserted-caller": "alice" }),
        })
      ).status,
    ).toBe(401);
  });

  test("with proxy_may_assert_admins the operator opts in", async () => {
    expect(await (await whoami(openProxy, as("opengate", { "x-asserted-caller": "root" }))).json()).toEqual({
      identity: "root",
      admin: true,
      source: "asserted",
      proxy_by: "opengate",
    });
  });
});
