/**
 * call_peer's outbound rules (D365): a peer's endpoint comes from the hub, written by whoever
 * registered it, so the client reaches it only through the outbound guard: a loopback,
 * private or metadata address is refused unless the operator's `outbound.allow` opens it, and
 * nothing (not the bearer) is sent to a refused address.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { parseOutboundAllowList } from "../../src/net/outbound-allow-list.ts";
import { OutboundGuard } from "../../src/net/outbound-guard.ts";
import { PeerAttachClient } from "../../src/peers-client/peer-attach-client.ts";

let server: ReturnType<typeof Bun.serve>;
const seen: string[] = [];

beforeAll(() => {
  server = Bun.serve({
    port: 0,
    hostname: "127.0.0.1",
    fetch(request) {
      seen.push(`${request.method} ${new URL(request.url).pathname} ${request.headers.get("authorization")}`);
      return new Response(null, { status: 501 });
    },
  });
});

afterAll(() => {
  server.stop(true);
});

function request(endpoint: string) {
  return {
    endpoint,
    bearer: "never-leaks",
    prompt: "hi",
    maxResponseBytes: 100,
    signal: AbortSignal.timeout(5000),
    progress: {},
  };
}

test("a loopback, private or metadata peer endpoint is refused without the allow list; nothing is sent", async () => {
  const client = new PeerAttachClient(new OutboundGuard());
  for (const endpoint of [
    `http://127.0.0.1:${server.port}`,
    "http://10.0.0.7:7777",
    "http://169.254.169.254",
    "http://[::1]:7777",
  ]) {
    const outcome = await client.call(request(endpoint));
    expect(outcome.ok).toBe(false);
    expect(outcome.ok ? "" : outcome.error).toContain("refused");
  }
  expect(seen).toEqual([]);
});

test("outbound.allow opens the loopback peer: the request goes, with the bearer", async () => {
  const allow = parseOutboundAllowList(["127.0.0.1"]);
  if (!allow.ok) throw new Error(allow.error);
  const client = new PeerAttachClient(new OutboundGuard({ allow: allow.value }));
  const outcome = await client.call(request(`http://127.0.0.1:${server.port}`));
  expect(outcome).toMatchObject({ ok: false, status: 501 });
  expect(seen).toEqual(["POST /sessions Bearer never-leaks"]);
});
