import { describe, expect, test } from "bun:test";
import { missingScopes, protocolCaller } from "../../../src/surfaces/http/protocol-bearer.ts";
import { HttpProblem } from "../../../src/surfaces/http/http-problem.ts";
import { signJwt } from "../../support/jwt.ts";

const SECRET = "a2a-shared-secret";
const NOW = Date.UTC(2026, 10, 26, 10, 0, 0);
const policy = { secret: SECRET, label: "a2a", identity: "svc-a2a", now: () => NOW };

/** A token signed at NOW (an hour's exp unless the claims name one). */
function jwt(claims: Record<string, unknown>, header?: Record<string, unknown>, key = SECRET) {
  return signJwt(claims, key, header, NOW);
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
      [jwt({ sub: "bot-1", exp: undefined }), "the a2a token has no exp: tokens must expire"],
      [
        jwt({ sub: "bot-1", exp: String(NOW / 1000 + 60) }),
        "the a2a token's exp must be a number of seconds (a NumericDate)",
      ],
      [jwt({ sub: "bot-1", exp: null }), "the a2a token's exp must be a number of seconds (a NumericDate)"],
      [jwt({ sub: "bot-1", nbf: "0" }), "the a2a token's nbf must be a number of seconds (a NumericDate)"],
      [jwt({ sub: "bot-1", iat: [] }), "the a2a token's iat must be a number of seconds (a NumericDate)"],
      [
        jwt({ sub: "bot-1", exp: NOW / 1000 + 25 * 3600 }),
        "the a2a token's exp is more than 24 h ahead: mint tokens that live at most a day",
      ],
    ];
    for (const [token, message] of cases) {
      const problem = refusal(() => protocolCaller(request(token), policy));
      expect(problem.message).toBe(message);
      expect(problem.headers).toEqual({ "www-authenticate": 'Bearer realm="a2a"' });
    }
  });

  test("a token that lives a day (the leeway included) is accepted; a second more is not", () => {
    expect(protocolCaller(request(jwt({ sub: "bot-1", exp: NOW / 1000 + 24 * 3600 + 30 })), policy).identity).toBe(
      "bot-1",
    );
    const longer = refusal(() =>
      protocolCaller(request(jwt({ sub: "bot-1", exp: NOW / 1000 + 24 * 3600 + 31 })), policy),
    );
    expect(longer.message).toContain("more than 24 h ahead");
  });

  test("a tenant or subject the daemon itself uses is refused 401 naming why; a look-alike name is not", () => {
    for (const [claims, claim] of [
      [{ tenant: "svc-inject" }, "tenant"],
      [{ tenant: "SVC-ATTACH" }, "tenant"],
      [{ sub: "svc-a2a" }, "sub"],
      [{ sub: "svc-agui" }, "sub"],
      [{ tenant: "svc:internal", sub: "alice" }, "tenant"],
      [{ sub: "mast:dashboard" }, "sub"],
      [{ sub: "local" }, "sub"],
      [{ tenant: " anonymous" }, "tenant"],
      [{ sub: "timer" }, "sub"],
      [{ sub: "operator resume --token --session-db" }, "sub"],
    ] as const) {
      const problem = refusal(() => protocolCaller(request(jwt(claims)), policy));
      expect(problem.message).toStartWith(`the a2a token's ${claim} claim is refused: `);
      expect(problem.message).toContain("never a caller's");
      expect(problem.headers).toEqual({ "www-authenticate": 'Bearer realm="a2a"' });
    }
    for (const identity of ["svcs", "localhost", "services-team", "svc_billing", "alice"])
      expect(protocolCaller(request(jwt({ tenant: identity })), policy).identity).toBe(identity);
  });

  test("without a secret (a loopback bind) every caller is the anonymous local caller, holding no scopes", () => {
    const caller = protocolCaller(request(), { ...policy, secret: undefined });
    expect(caller.source).toBe("anonymous");
    expect(missingScopes(caller, ["triage:run"])).toEqual(["triage:run"]);
  });
});
