/**
 * PATCH /sessions/{sid}/acl in a real daemon: the spec's merge rules, concurrent PATCHes on
 * different lists both landing, and a PATCH the store refuses answering 500 with nothing changed.
 */
import { expect, test } from "bun:test";
import { daemonScope } from "../../support/daemon-scope.ts";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { sha256Hex } from "../../../src/surfaces/http/caller-auth.ts";
import { type Daemon, postJson, tempDir } from "../../support/daemon.ts";

const scope = daemonScope();

async function start(extra: string[] = []): Promise<Daemon> {
  const dir = tempDir();
  writeFileSync(
    join(dir, "callers.json"),
    JSON.stringify({
      callers: [
        { identity: "olga", token_sha256: sha256Hex("tok-olga") },
        { identity: "cora", token_sha256: sha256Hex("tok-cora") },
      ],
    }),
  );
  const daemon = await scope.start({
    args: ["--multi-session", `--auth-table=${join(dir, "callers.json")}`, ...extra],
  });
  return daemon;
}

const olga = { authorization: "Bearer tok-olga" };
const patch = (daemon: Daemon, body: unknown, headers: Record<string, string> = olga) =>
  fetch(`${daemon.baseUrl}/sessions/s1/acl`, {
    method: "PATCH",
    headers: { "content-type": "application/json", ...headers },
    body: JSON.stringify(body),
  });

test("merge rules: omitted lists unchanged, [] clears, owner only repeated, lists normalized", async () => {
  const daemon = await start();
  expect(
    (await postJson(`${daemon.baseUrl}/sessions`, { sessionID: "s1", viewers: ["v1"], contributors: ["c1"] }, olga))
      .status,
  ).toBe(201);
  expect(await (await patch(daemon, { viewers: [" v2 ", "", "v2", "v3"] })).json()).toEqual({
    owner: "olga",
    viewers: ["v2", "v3"],
    contributors: ["c1"],
  });
  expect(await (await patch(daemon, { contributors: [], owner: "olga" })).json()).toEqual({
    owner: "olga",
    viewers: ["v2", "v3"],
    contributors: [],
  });
  expect((await patch(daemon, { owner: "cora" })).status).toBe(400);
  expect((await patch(daemon, { owner: "" })).status).toBe(400);
  expect(
    (
      await fetch(`${daemon.baseUrl}/sessions/s1/acl`, {
        method: "PATCH",
        headers: { "content-type": "application/json", ...olga },
      })
    ).status,
  ).toBe(400);
  expect((await patch(daemon, { viewers: "v9" })).status).toBe(400);
  expect((await patch(daemon, { contributors: ["cora"] }, { authorization: "Bearer tok-cora" })).status).toBe(404);
  expect(await (await fetch(`${daemon.baseUrl}/sessions/s1/acl`, { headers: olga })).json()).toEqual({
    owner: "olga",
    viewers: ["v2", "v3"],
    contributors: [],
  });
  // The new contributor may now write; viewers may not.
  expect((await patch(daemon, { contributors: ["cora"] })).status).toBe(200);
  expect(
    (await postJson(`${daemon.baseUrl}/sessions/s1/inject`, { message: "hi" }, { authorization: "Bearer tok-cora" }))
      .status,
  ).toBe(200);
});

test("concurrent PATCHes on different lists both land", async () => {
  const daemon = await start();
  expect((await postJson(`${daemon.baseUrl}/sessions`, { sessionID: "s1" }, olga)).status).toBe(201);
  for (let round = 0; round < 20; round++) {
    const [a, b] = await Promise.all([
      patch(daemon, { viewers: [`v${round}`] }),
      patch(daemon, { contributors: [`c${round}`] }),
    ]);
    expect([a.status, b.status]).toEqual([200, 200]);
    expect(await (await fetch(`${daemon.baseUrl}/sessions/s1/acl`, { headers: olga })).json()).toEqual({
      owner: "olga",
      viewers: [`v${round}`],
      contributors: [`c${round}`],
    });
  }
});

test("a PATCH the store refuses answers 500 and changes nothing", async () => {
  const daemon = await start(["--session-db-max-mb=1"]);
  expect((await postJson(`${daemon.baseUrl}/sessions`, { sessionID: "s1", viewers: ["keep"] }, olga)).status).toBe(201);
  // Fill the store in shrinking steps, each until the store refuses an inject (503), so what is
  // left is smaller than the last step's write whatever the table layout leaves free.
  let i = 0;
  for (const size of [7000, 2000, 500]) {
    const filler = "x".repeat(size);
    for (let n = 0; n < 400; n++, i++) {
      const response = await postJson(`${daemon.baseUrl}/sessions/s1/inject`, { message: `${i} ${filler}` }, olga);
      await response.arrayBuffer();
      if (response.status === 503) break;
      // Pacing, not a wait: a breath between injects lets turns run so rows accumulate too.
      await Bun.sleep(3);
    }
  }
  const big = Array.from({ length: 560 }, (_, i) => `viewer-${i}`);
  const refused = await patch(daemon, { viewers: big });
  expect(refused.status).toBe(500);
  expect(((await refused.json()) as { error: string }).error).toContain("nothing changed");
  expect(await (await fetch(`${daemon.baseUrl}/sessions/s1/acl`, { headers: olga })).json()).toEqual({
    owner: "olga",
    viewers: ["keep"],
    contributors: [],
  });
}, 60_000);
