/**
 * SSRF through `call_a2a`: the model names an agent, never a URL, but an agent's URLs still come
 * from places an attacker may reach (a peer registration, a remote agent card, a redirect), and a
 * declaration's own hosts are let through the outbound guard. Each attack is refused by the guard
 * with the range named; a declaration never opens a link-local or metadata address, nor does a
 * declared host name that resolves to one.
 */
import { afterEach, describe, expect, test } from "bun:test";
import { A2aClient } from "../../src/a2a-client/a2a-client.ts";
import { RemoteAgentCaller } from "../../src/a2a-client/call-a2a-tool.ts";
import { type RemoteAgentEntry, peerDirectory, staticDirectory } from "../../src/a2a-client/remote-agent-directory.ts";
import { agentAllowList, withRemoteAgents } from "../../src/a2a-client/remote-agent-wiring.ts";
import type { ToolCatalog, ToolRunResult, ToolRunner } from "../../src/core/tool-catalog.ts";
import { OutboundGuard } from "../../src/net/outbound-guard.ts";

const cleanups: Array<() => void> = [];
afterEach(() => {
  for (const cleanup of cleanups.splice(0)) cleanup();
});

const nothing: ToolRunner & ToolCatalog = {
  has: () => false,
  classOf: () => undefined,
  run: async () => ({ output: { error: "not here" }, isError: true }),
  specs: () => [],
  list: () => [],
};

function declared(overrides: Partial<RemoteAgentEntry>): RemoteAgentEntry {
  return { name: "target", description: "x", timeoutMs: 5000, source: "a2a/target.yaml", declared: true, ...overrides };
}

/** call_a2a as a daemon wires it, with no operator allow list. */
async function callThroughWiring(entry: RemoteAgentEntry): Promise<ToolRunResult> {
  const tools = withRemoteAgents(nothing, staticDirectory([entry]), []);
  return await tools.run(
    { callId: "c1", name: "call_a2a", args: { agent: entry.name, message: "hi" } },
    AbortSignal.timeout(5000),
  );
}

/** A loopback server counting the requests that reach it. */
function canary(answer: (request: Request) => Response): { url: string; hits: () => number } {
  let hits = 0;
  const server = Bun.serve({
    port: 0,
    hostname: "127.0.0.1",
    fetch: (request) => {
      hits++;
      return answer(request);
    },
  });
  cleanups.push(() => server.stop(true));
  return { url: `http://127.0.0.1:${server.port}`, hits: () => hits };
}

describe("call_a2a SSRF", () => {
  test("a declared endpoint on the cloud metadata literal is refused (a declaration never opens metadata)", async () => {
    const result = await callThroughWiring(declared({ endpoint: "http://169.254.169.254/a2a" }));
    expect(result.isError).toBe(true);
    expect(String(result.output.error)).toContain("169.254.169.254 is a cloud metadata address");
  });

  test("an IPv4-mapped metadata literal in a declaration is refused", async () => {
    const result = await callThroughWiring(declared({ endpoint: "http://[::ffff:169.254.169.254]/a2a" }));
    expect(result.isError).toBe(true);
    expect(String(result.output.error)).toContain("cloud metadata");
  });

  test("a declared agent card whose url points at the metadata address is refused (the card is remote-supplied)", async () => {
    const card = canary(() => Response.json({ name: "evil", url: "http://169.254.169.254/latest/meta-data/" }));
    const result = await callThroughWiring(declared({ cardUrl: `${card.url}/.well-known/agent-card.json` }));
    expect(result.isError).toBe(true);
    expect(String(result.output.error)).toContain("cloud metadata");
    expect(card.hits()).toBe(1);
  });

  test("a declared agent redirecting to the metadata address is refused at the hop", async () => {
    const redirector = canary(
      () => new Response(null, { status: 307, headers: { location: "http://169.254.169.254/a2a" } }),
    );
    const result = await callThroughWiring(declared({ endpoint: `${redirector.url}/a2a` }));
    expect(result.isError).toBe(true);
    expect(String(result.output.error)).toContain("cloud metadata");
  });

  test("a peer-hub agent on loopback is refused without outbound.allow (a registration opens nothing)", async () => {
    const target = canary(() => Response.json({}));
    const peers = peerDirectory(() => [{ name: "peer", endpoint: target.url, labels: { protocol: "a2a" } }]);
    const tools = withRemoteAgents(nothing, peers, []);
    const result = await tools.run(
      { callId: "c1", name: "call_a2a", args: { agent: "peer", message: "hi" } },
      AbortSignal.timeout(5000),
    );
    expect(result.isError).toBe(true);
    expect(String(result.output.error)).toContain("loopback");
    expect(target.hits()).toBe(0);
  });

  test("a declared host name that resolves to the metadata address is refused (a name entry never opens it)", async () => {
    const entry = declared({ endpoint: "http://agent.internal.example/a2a" });
    const guard = new OutboundGuard({
      allow: agentAllowList([], entry),
      resolve: async () => ["169.254.169.254"],
    });
    const caller = new RemoteAgentCaller(staticDirectory([entry]), () => new A2aClient(guard), {});
    const result = await caller.run({ agent: "target", message: "hi" }, AbortSignal.timeout(5000));
    expect(result.isError).toBe(true);
    expect(String(result.output.error)).toContain(
      "agent.internal.example resolves to 169.254.169.254, a cloud metadata address",
    );
  });
});
