/**
 * `--attach-peer-register` in real daemons (D367): a hub daemon behind a bearer and a daemon
 * that registers with it. Covered: the registration (name, its own bound address, labels with
 * protocol=attach, the lease), heartbeats renewing a short lease past its end, a hub restart
 * (the registration comes back), deregistration at SIGTERM (gone within 2 s though the lease has
 * a minute to run), and a startup refusal of a wildcard bind without an endpoint.
 */
import { describe, expect, test } from "bun:test";
import { daemonScope, runToExit } from "../../support/daemon-scope.ts";
import { type Daemon, sparCommand, tempDir, waitFor } from "../../support/daemon.ts";

const scope = daemonScope();
const HUB_SECRET = "hub-bearer-91c2";
const hubEnv = { HUB_TOKEN: HUB_SECRET };

interface Listed {
  name: string;
  endpoint: string;
  labels: Record<string, string>;
  heartbeat_ttl_sec: number;
  expires_at: string;
}

async function peersOf(hub: Daemon): Promise<Listed[]> {
  const response = await fetch(`${hub.baseUrl}/peers`, { headers: { authorization: `Bearer ${HUB_SECRET}` } });
  expect(response.status).toBe(200);
  return ((await response.json()) as { peers: Listed[] }).peers;
}

function startHub(options: { listen?: string; sessionDb?: string } = {}) {
  return scope.start({ args: ["--attach-peer-hub", "--attach-token=HUB_TOKEN"], env: hubEnv, ...options });
}

function startRegistering(hub: Daemon, name: string, lease: number) {
  return scope.start({
    args: [
      `--attach-peer-register=${hub.baseUrl}`,
      "--attach-peer-register-token-env=HUB_TOKEN",
      `--attach-peer-register-name=${name}`,
      `--attach-peer-register-lease-seconds=${lease}`,
      "--attach-peer-register-labels=region=eu,tier=gold",
    ],
    env: hubEnv,
  });
}

/** The registration named `name` once the hub lists it (and `accept` holds). */
function listed(hub: Daemon, name: string, accept: (peer: Listed) => boolean = () => true, timeoutMs = 15_000) {
  return waitFor(
    async () => (await peersOf(hub).catch(() => [])).find((peer) => peer.name === name && accept(peer)),
    timeoutMs,
    `${name} listed by the hub`,
  );
}

describe("a daemon registered with a hub", () => {
  test("registers its bound address and labels, and heartbeats keep a 2 s lease alive past its end", async () => {
    const hub = await startHub();
    const worker = await startRegistering(hub, "worker-b", 2);
    const first = await listed(hub, "worker-b");
    expect(first).toMatchObject({
      endpoint: worker.baseUrl,
      labels: { protocol: "attach", region: "eu", tier: "gold" },
      heartbeat_ttl_sec: 2,
    });
    const firstExpiry = Date.parse(first.expires_at);
    // Still listed with a lease ending more than one lease after the first: renewed by heartbeats.
    const renewed = await listed(hub, "worker-b", (peer) => Date.parse(peer.expires_at) > firstExpiry + 2000);
    expect(renewed.endpoint).toBe(worker.baseUrl);
  }, 30_000);

  test("a hub restart forgets the registration; the next heartbeat's 404 registers again", async () => {
    const hub = await startHub();
    const worker = await startRegistering(hub, "worker-c", 2);
    await listed(hub, "worker-c");
    await hub.kill9();
    const restarted = await startHub({ listen: `127.0.0.1:${hub.port}`, sessionDb: hub.sessionDb });
    const back = await listed(restarted, "worker-c");
    expect(back.labels.protocol).toBe("attach");
    expect(worker.log()).toContain("no longer knows this registration");
  }, 40_000);

  test("SIGTERM deregisters first: gone from GET /peers within 2 s though its lease has a minute left", async () => {
    const hub = await startHub();
    const worker = await startRegistering(hub, "worker-d", 60);
    await listed(hub, "worker-d");
    const stopping = worker.sigterm();
    const started = Date.now();
    await waitFor(
      async () => ((await peersOf(hub)).some((peer) => peer.name === "worker-d") ? undefined : true),
      2000,
      "worker-d deregistered",
    );
    expect(Date.now() - started).toBeLessThan(2000);
    expect(await stopping).toBe(0);
    expect(worker.log()).toContain("deregistered");
  }, 30_000);
});

test("a wildcard bind without an endpoint to register is a startup error naming the flag", async () => {
  const exit = await runToExit(
    sparCommand(
      "agent",
      "--attach-listen=0.0.0.0:0",
      "--attach-token=HUB_TOKEN",
      `--session-db=${tempDir()}/s.db`,
      "--attach-peer-register=http://127.0.0.1:1",
    ),
    { env: hubEnv, timeoutMs: 20_000 },
  );
  expect(exit.code).not.toBe(0);
  expect(exit.stderr).toContain("--attach-peer-register-endpoint");
});
