/**
 * Attacks on `spar svc`'s operator attach surface (`--attach-listen`), real processes: the bearer
 * `SVC_ATTACH_TOKEN` is its own trust boundary (the main listener's token does not open it, and
 * its token does not open the main listener), a tokenless surface keeps the shared DNS-rebinding
 * and CSRF guards, and a unix socket is neither stolen from a live daemon nor put in place of a
 * file that is not a socket. Every refusal is JSON, and none ran a turn or created a session.
 *
 * The startup refusals of the configuration are tested where they are decided, in
 * test/unit/cli/svc-config.test.ts ("the attach surface"): a TCP bind beyond loopback without
 * `SVC_ATTACH_TOKEN`, `--attach-listen` without `--session-db`, a blank token variable, an empty
 * or over-long socket path.
 */
import { beforeAll, expect, test } from "bun:test";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { Daemon } from "../support/daemon.ts";
import { sparCommand, tempDir } from "../support/daemon.ts";
import { daemonScope, runToExit } from "../support/daemon-scope.ts";
import { rawHttp } from "../support/raw-http.ts";

const scope = daemonScope({ per: "file" });
const INJECT_TOKEN = "inject-s3cret";
const ATTACH_TOKEN = "attach-s3cret";
let gated: Daemon;
let gatedAttach: string;
let open: Daemon;
let openAttachPort: number;

function attachPort(daemon: Daemon): number {
  const match = /attach surface at http:\/\/[^ ]+:(\d+) /.exec(daemon.log());
  if (!match?.[1]) throw new Error(`no attach surface in the log:\n${daemon.log()}`);
  return Number(match[1]);
}

beforeAll(async () => {
  gated = await scope.start({
    role: "svc",
    args: ["--attach-listen=127.0.0.1:0"],
    env: { SVC_INJECT_TOKEN: INJECT_TOKEN, SVC_ATTACH_TOKEN: ATTACH_TOKEN },
  });
  gatedAttach = `http://127.0.0.1:${attachPort(gated)}`;
  open = await scope.start({ role: "svc", args: ["--attach-listen=127.0.0.1:0"] });
  openAttachPort = attachPort(open);
});

async function refusal(response: Response, status: number): Promise<string> {
  expect(response.status).toBe(status);
  expect(response.headers.get("content-type")).toContain("application/json");
  return ((await response.json()) as { error: string }).error;
}

/** The turns the daemon finished, from its main listener's metrics. */
async function turnsRun(daemon: Daemon): Promise<string> {
  const metrics = await fetch(`${daemon.baseUrl}/metrics`, { headers: { authorization: `Bearer ${INJECT_TOKEN}` } });
  return (await metrics.text())
    .split("\n")
    .filter((line) => line.startsWith("svc_turns_total{"))
    .join("\n");
}

const createSession = (headers: Record<string, string>) =>
  fetch(`${gatedAttach}/sessions`, {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body: JSON.stringify({ sessionID: "attacker" }),
  });

test("a request without a bearer is refused 401 and lists nothing", async () => {
  const answer = await fetch(`${gatedAttach}/sessions`);
  expect(await refusal(answer, 401)).toContain("needs an authenticated caller");
  expect(answer.headers.get("www-authenticate")).toContain("Bearer");
});

test("a wrong bearer, or the right token sent as Basic, is refused 401", async () => {
  expect(
    await refusal(await fetch(`${gatedAttach}/sessions`, { headers: { authorization: "Bearer attach-s3cre" } }), 401),
  ).toBe("unknown caller token");
  const basic = `Basic ${Buffer.from(`svc:${ATTACH_TOKEN}`).toString("base64")}`;
  expect((await fetch(`${gatedAttach}/sessions`, { headers: { authorization: basic } })).status).toBe(401);
});

test("the main listener's SVC_INJECT_TOKEN does not open the attach surface (read or write)", async () => {
  const inject = { authorization: `Bearer ${INJECT_TOKEN}` };
  expect(await refusal(await fetch(`${gatedAttach}/sessions`, { headers: inject }), 401)).toBe("unknown caller token");
  expect((await createSession(inject)).status).toBe(401);
  expect(
    (await fetch(`${gatedAttach}/sessions`, { headers: { authorization: `Bearer ${ATTACH_TOKEN}` } })).status,
  ).toBe(200);
});

test("SVC_ATTACH_TOKEN does not open the main listener: an inject with it is 401 and runs no turn", async () => {
  const before = await turnsRun(gated);
  const answer = await fetch(`${gated.baseUrl}/inject`, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: `Bearer ${ATTACH_TOKEN}` },
    body: JSON.stringify({ uid: "attacker" }),
  });
  expect(await refusal(answer, 401)).toBe(
    "missing or wrong inject token: send the value of SVC_INJECT_TOKEN as Authorization: Bearer <token>",
  );
  expect(await turnsRun(gated)).toBe(before);
});

test("an asserted-caller header on the operator's token is refused 401 (no proxy identity on this surface)", async () => {
  const answer = await fetch(`${gatedAttach}/sessions`, {
    headers: { authorization: `Bearer ${ATTACH_TOKEN}`, "x-asserted-caller": "svc:internal" },
  });
  expect(await refusal(answer, 401)).toContain("accepted only from a proxy identity");
});

test("DNS rebinding: a tokenless attach surface refuses a foreign Host (421)", async () => {
  const answer = await rawHttp(
    openAttachPort,
    `GET /sessions HTTP/1.1\r\nHost: attacker.example:${openAttachPort}\r\nConnection: close\r\n\r\n`,
  );
  expect(answer.status).toBe(421);
  expect(answer.body).toContain("attacker.example");
});

test("CSRF: a cross-origin browser write to a tokenless attach surface is refused 403", async () => {
  const answer = await fetch(`http://127.0.0.1:${openAttachPort}/sessions`, {
    method: "POST",
    headers: { "content-type": "application/json", origin: "http://evil.example" },
    body: JSON.stringify({ sessionID: "attacker" }),
  });
  expect(await refusal(answer, 403)).toContain("cross-origin request refused");
  const listed = await (await fetch(`http://127.0.0.1:${openAttachPort}/sessions`)).text();
  expect(listed).not.toContain("attacker");
});

test("a second daemon cannot take over a live attach socket: startup refused, the first keeps serving", async () => {
  const socket = join(tempDir("spar-sock-"), "attach.sock");
  const first = await scope.start({ role: "svc", args: [`--attach-listen=unix:${socket}`] });
  const second = await runToExit(
    sparCommand(
      "svc",
      "--listen=127.0.0.1:0",
      `--session-db=${join(tempDir(), "s.db")}`,
      `--attach-listen=unix:${socket}`,
    ),
  );
  expect(second.code).toBe(1);
  expect(second.stderr).toContain("another process is listening on this socket");
  expect((await fetch("http://localhost/healthz", { unix: socket })).status).toBe(200);
  expect(await first.sigterm()).toBe(0);
});

test("a file that is not a socket in the socket's place is refused at startup, never replaced", async () => {
  const path = join(tempDir("spar-sock-"), "attach.sock");
  writeFileSync(path, "precious");
  const result = await runToExit(
    sparCommand(
      "svc",
      "--listen=127.0.0.1:0",
      `--session-db=${join(tempDir(), "s.db")}`,
      `--attach-listen=unix:${path}`,
    ),
  );
  expect(result.code).toBe(1);
  expect(result.stderr).toContain("a file that is not a socket is in the way");
  expect(existsSync(path)).toBe(true);
  expect(readFileSync(path, "utf8")).toBe("precious");
});
