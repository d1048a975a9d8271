/**
 * Attacks on the peer hub (multi-session auth on): endpoints that are no http(s) URL with a host,
 * malformed fields and filters, anonymous callers, another caller's registrations (renewed,
 * deleted, renamed, or their ids read), and an expired lease. Each is refused with its status
 * (400, 401, 403, 404, 409) and a JSON body; a lapsed registration leaves the list.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { type AttackCase, type TenantDaemon, caseProblems, startTenantDaemon } from "../support/tenant-daemon.ts";

let tenant: TenantDaemon;
let alicesPeer = "";
beforeAll(async () => {
  tenant = await startTenantDaemon();
  expect(
    (
      await tenant.send({
        method: "POST",
        path: "/peers",
        as: "alice",
        body: { name: "shortlived", endpoint: "https://p.example", heartbeat_ttl_sec: 1 },
      })
    ).status,
  ).toBe(201);
  const registered = await tenant.send({
    method: "POST",
    path: "/peers",
    as: "alice",
    body: { name: "alices-peer", endpoint: "https://alice.example", labels: { team: "a" } },
  });
  expect(registered.status).toBe(201);
  alicesPeer = ((await registered.json()) as { registration_id: string }).registration_id;
});
afterAll(async () => {
  await tenant.stop();
});

const register = (body: unknown, name: string, expect: number): AttackCase => ({
  name,
  method: "POST",
  path: "/peers",
  as: "alice",
  body,
  expect,
});
const cases: AttackCase[] = [
  register({ name: "p", endpoint: "/x" }, "a peer with a relative endpoint is refused 400", 400),
  register({ name: "p", endpoint: "ftp://x" }, "a peer with an ftp endpoint is refused 400", 400),
  register({ name: "p", endpoint: "javascript:alert(1)" }, "a peer with a javascript: endpoint is refused 400", 400),
  register({ name: "p", endpoint: "file:///etc/passwd" }, "a peer with a file: endpoint is refused 400", 400),
  register({ name: "p", endpoint: "http://" }, "a peer with an endpoint without a host is refused 400", 400),
  register({ name: "p", endpoint: ["https://x"] }, "a peer with a list as endpoint is refused 400", 400),
  register({ name: "  ", endpoint: "https://x" }, "a peer with a blank name is refused 400", 400),
  register({ name: "p", endpoint: "https://x", labels: { a: 1 } }, "a peer with a numeric label is refused 400", 400),
  register({ name: "p", endpoint: "https://x", labels: ["a"] }, "a peer with labels as a list is refused 400", 400),
  register({ name: "p", endpoint: "https://x", heartbeat_ttl_sec: 0 }, "a peer with a zero lease is refused 400", 400),
  register(
    { name: "p", endpoint: "https://x", heartbeat_ttl_sec: -5 },
    "a peer with a negative lease is refused 400",
    400,
  ),
  register(
    { name: "p", endpoint: "https://x", heartbeat_ttl_sec: "10" },
    "a peer with a lease as a string is refused 400",
    400,
  ),
  register(
    { name: "p", endpoint: "https://x", heartbeat_ttl_sec: 1e12 },
    "a peer with a lease past the maximum is refused 400",
    400,
  ),
  {
    name: "registering a peer without a caller is refused 401",
    method: "POST",
    path: "/peers",
    as: "none",
    body: { name: "p", endpoint: "https://x" },
    expect: 401,
  },
  { name: "the peer list without a caller is refused 401", path: "/peers", as: "none", expect: 401 },
  {
    name: "the peer list with a malformed label filter is refused 400",
    path: "/peers?label=novalue",
    as: "alice",
    expect: 400,
  },
  {
    name: "a heartbeat of an unknown peer is a 404",
    method: "POST",
    path: "/peers/peer-0000/heartbeat",
    as: "alice",
    expect: 404,
  },
  {
    name: "a heartbeat by a peer's name instead of its registration id is a 404",
    method: "POST",
    path: "/peers/alices-peer/heartbeat",
    as: "alice",
    expect: 404,
  },
  {
    name: "a delete of an unknown peer is a 204 (idempotent, nothing removed)",
    method: "DELETE",
    path: "/peers/peer-0000",
    as: "alice",
    expect: 204,
  },
  {
    name: "bob registering alice's peer name is refused 409",
    method: "POST",
    path: "/peers",
    as: "bob",
    body: { name: "alices-peer", endpoint: "https://bob.example" },
    expect: 409,
  },
];
for (const attack of cases) {
  test(attack.name, async () => {
    expect(await caseProblems(tenant, attack)).toEqual([]);
  });
}

test("bob can neither renew (404) nor delete (403) alice's registration, nor read its id; without a caller both are 401", async () => {
  expect((await tenant.send({ method: "POST", path: `/peers/${alicesPeer}/heartbeat`, as: "bob" })).status).toBe(404);
  expect((await tenant.send({ method: "DELETE", path: `/peers/${alicesPeer}`, as: "bob" })).status).toBe(403);
  expect((await tenant.send({ method: "POST", path: `/peers/${alicesPeer}/heartbeat`, as: "none" })).status).toBe(401);
  expect((await tenant.send({ method: "DELETE", path: `/peers/${alicesPeer}`, as: "none" })).status).toBe(401);
  const seen = (await (await tenant.send({ path: "/peers", as: "bob" })).json()) as {
    peers: Array<{ name: string; endpoint: string; registration_id?: string }>;
  };
  const peer = seen.peers.find((row) => row.name === "alices-peer");
  expect(peer?.endpoint).toBe("https://alice.example");
  expect(peer?.registration_id).toBeUndefined();
  expect(JSON.stringify(seen)).not.toContain(alicesPeer);
});

test("an expired peer lease is gone from the list", async () => {
  // Time under test: the short-lived registration's lease runs out.
  await Bun.sleep(1200);
  const listed = (await (await tenant.send({ path: "/peers", as: "alice" })).json()) as {
    peers: Array<{ name: string; registration_id?: string }>;
  };
  expect(listed.peers.map((peer) => peer.name)).not.toContain("shortlived");
  expect(listed.peers.map((peer) => peer.name)).toContain("alices-peer");
});
