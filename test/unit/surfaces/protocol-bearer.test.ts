import { describe, expect, test } from "bun:test";
import { createHmac } from "node:crypto";
import { missingScopes, protocolCaller } from "../../../src/surfaces/http/protocol-bearer.ts";
import { HttpProblem } from "../../../src/surfaces/http/http-problem.ts";

const SECRET = "a2a-shared-secret";
const NOW = Date.UTC(2026, 10, 26, 10, 0, 0);
const policy = { secret: SECRET, label: "a2a", identity: "svc-a2a", now: () => NOW };

function jwt(
  claims: Record<string, unknown>,
  header: Record<string, unknown> = { alg: "HS256", typ: "JWT" },
  key = SECRET,
) {
  const encode = (value: unknown) => Buffer.from(JSON.stringify(value)).toString("base64url");
  const signed = `${encode(header)}.${encode(claims)}`;
  return `${signed}.${createHmac("sha256", key).update(signed).digest("base64url")}`;
}

function request(token?: string): Request {
  return new Request(
    "http://127.0.0.1/a2a",
    token === undefined ? {} : { headers: { authorization: `Bearer ${token}` } },
  );
}

function refusal(run: () => unknown): HttpProblem {
  try {
    run();
  } catch (error) {
    if (error instanceof HttpProblem) return error;
    throw error;
  }
  throw new Error("expected a refusal");
}

describe("protocol bearer", () => {
  test("the secret itself is the listener's fixed identity with no scopes", () => {
    expect(protocolCaller(request(SECRET), policy)).toEqual({
      identity: "svc-a2a",
      admin: false,
      source: "bearer",
      scopes: [],
    });
  });

  test("a signed token names its tenant, else its subject, and carries its scopes (scope string or scp array)", () => {
    const tenant = protocolCaller(
      request(jwt({ tenant: "acme", sub: "bot-1", scope: "triage:read triage:run" })),
      policy,
    );
    expect(tenant).toMatchObject({ identity: "acme", scopes: ["triage:read", "triage:run"] });
    const subject = protocolCaller(request(jwt({ sub: "bot-1", scp: ["triage:run", 7] })), policy);
    expect(subject).toMatchObject({ identity: "bot-1", scopes: ["triage:run"] });
    expect(missingScopes(subject, ["triage:run", "triage:admin"])).toEqual(["triage:admin"]);
  });

  test("no bearer, a wrong secret, a forged or alg-none token, an expired one, or one naming nobody is a 401 with the realm", () => {
    const cases: [string | undefined, string][] = [
      [undefined, "missing a2a bearer token"],
      ["not-the-secret", "wrong a2a token"],
      [jwt({ sub: "bot-1" }, undefined, "another-secret"), "wrong a2a token"],
      [jwt({ sub: "bot-1" }, { alg: "none" }), "wrong a2a token"],
      [jwt({ sub: "bot-1" }, { alg: "HS512" }), "wrong a2a token"],
      [jwt({ sub: "bot-1", exp: NOW / 1000 - 60 }), "the a2a token expired"],
      [jwt({ sub: "bot-1", nbf: NOW / 1000 + 600 }), "the a2a token is not valid yet"],
      [jwt({ scope: "triage:run" }), "the token names no tenant and no subject"],
    ];
    for (const [token, message] of cases) {
      const problem = refusal(() => protocolCaller(request(token), policy));
      expect(problem.message).toBe(message);
      expect(problem.headers).toEqual({ "www-authenticate": 'Bearer realm="a2a"' });
    }
  });

  test("without a secret (a loopback bind) every caller is the anonymous local caller, holding no scopes", () => {
    const caller = protocolCaller(request(), { ...policy, secret: undefined });
    expect(caller.source).toBe("anonymous");
    expect(missingScopes(caller, ["triage:run"])).toEqual(["triage:run"]);
  });
});
