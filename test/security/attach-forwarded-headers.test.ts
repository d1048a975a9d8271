/**
 * Spoofed X-Forwarded-Host and X-Forwarded-Proto: a caller that is not a configured proxy cannot
 * make the daemon describe itself under a host of the caller's choosing (the agent card's `url`,
 * which A2A clients follow). They are believed only from --attach-trusted-proxies. Nor can a Host
 * of the caller's choosing reach the card on a token-gated listener, which serves any Host: the
 * card names a Host only when the listener vouches for it, else its own address (D333); on svc's
 * A2A listener too.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { A2A_SECRET, startA2aDaemon } from "../support/a2a-daemon.ts";
import { usageError } from "../support/agent-startup.ts";
import { tempDir } from "../support/daemon.ts";
import { daemonScope } from "../support/daemon-scope.ts";
import { rawExchange } from "../support/raw-socket.ts";
import { type InProcessAgent, startInProcessAgent } from "../support/in-process-agent.ts";

let untrusting: InProcessAgent;
let otherProxy: InProcessAgent;
let trusting: InProcessAgent;
let gated: InProcessAgent;
const scope = daemonScope({ per: "file" });
const card = ["--agent-card-description=Triages"];
beforeAll(async () => {
  [untrusting, otherProxy, trusting, gated] = await Promise.all([
    startInProcessAgent({ args: card }),
    startInProcessAgent({ args: [...card, "--attach-trusted-proxies=10.0.0.0/8,fd00::/8"] }),
    startInProcessAgent({ args: [...card, "--attach-trusted-proxies=127.0.0.0/8"] }),
    startInProcessAgent({
      args: [...card, "--attach-token=CARD_TOKEN", "--attach-allowed-hosts=agents.corp.example"],
      env: { CARD_TOKEN: "card-s3cret" },
    }),
  ]);
});
afterAll(async () => {
  await Promise.all([untrusting.stop(), otherProxy.stop(), trusting.stop(), gated.stop()]);
});

/** The card's url as a raw request with `host` gets it (fetch cannot send another Host). */
async function cardUrlFor(port: number, path: string, host: string): Promise<string> {
  const exchange = await rawExchange(port, `GET ${path} HTTP/1.1\r\nHost: ${host}\r\nConnection: close\r\n\r\n`);
  expect(exchange.statuses).toEqual([200]);
  return (JSON.parse(exchange.responses[0]?.body ?? "{}") as { url: string }).url;
}

test("a token-gated listener serves any Host, but its card names only Hosts it vouches for (D333)", async () => {
  const path = "/.well-known/agent-card.json";
  expect(await cardUrlFor(gated.port, path, "phish.example")).toBe(`http://127.0.0.1:${gated.port}`);
  expect(await cardUrlFor(gated.port, path, "phish.example:443")).toBe(`http://127.0.0.1:${gated.port}`);
  // Vouched for: an allowed name, a loopback name.
  expect(await cardUrlFor(gated.port, path, "agents.corp.example")).toBe("http://agents.corp.example");
  expect(await cardUrlFor(gated.port, path, `localhost:${gated.port}`)).toBe(`http://localhost:${gated.port}`);
});

test("svc's A2A cards on a token-gated listener: a foreign Host never reaches their url (D333)", async () => {
  const served = await startA2aDaemon(scope, [], { env: { SVC_A2A_TOKEN: A2A_SECRET } });
  const port = Number(new URL(served.a2aUrl).port);
  for (const path of ["/.well-known/agent-card.json", "/.well-known/agent-card/gated.json"]) {
    expect(await cardUrlFor(port, path, "phish.example")).toBe(`http://127.0.0.1:${port}/a2a`);
    expect(await cardUrlFor(port, path, `127.0.0.1:${port}`)).toBe(`http://127.0.0.1:${port}/a2a`);
  }
});

const spoofed = { "x-forwarded-proto": "https", "x-forwarded-host": "phish.example" };
const cardUrl = async (daemon: InProcessAgent) =>
  (
    (await (await fetch(`${daemon.baseUrl}/.well-known/agent-card.json`, { headers: spoofed })).json()) as {
      url: string;
    }
  ).url;

test("without trusted proxies the forwarded headers are ignored", async () => {
  expect(await cardUrl(untrusting)).toBe(`http://127.0.0.1:${untrusting.port}`);
});

test("from a peer outside the trusted blocks they are ignored", async () => {
  expect(await cardUrl(otherProxy)).toBe(`http://127.0.0.1:${otherProxy.port}`);
});

test("from a trusted proxy they are believed", async () => {
  expect(await cardUrl(trusting)).toBe("https://phish.example");
});

test("a malformed trusted-proxy entry is a startup error naming it", () => {
  // A usage error (the command prints it and exits 2), decided in process.
  const dir = tempDir();
  const refusal = usageError(
    ["--attach-listen=127.0.0.1:0", `--session-db=${dir}/s.db`, "--attach-trusted-proxies=10.0.0.1/8"],
    dir,
  );
  expect(refusal).toContain("--attach-trusted-proxies");
  expect(refusal).toContain("did you mean 10.0.0.0/8");
});
