/**
 * The peer hub in a real daemon: register, filter, heartbeat, delete, and the state file
 * carrying registrations and their ownership across a restart; the state-file flag without the
 * hub refuses to start.
 */
import { expect, test } from "bun:test";
import { daemonScope } from "../../support/daemon-scope.ts";
import { statSync } from "node:fs";
import { join } from "node:path";
import { postJson, tempDir } from "../../support/daemon.ts";

const scope = daemonScope();

test("peers register, list by label, heartbeat and survive a restart through the state file", async () => {
  const dir = tempDir();
  const stateFile = join(dir, "peers.jsonl");
  const args = ["--attach-peer-hub", `--attach-peer-state-file=${stateFile}`];
  const first = await scope.start({ args });
  const registered = await postJson(`${first.baseUrl}/peers`, {
    name: "triage-eu",
    endpoint: "https://triage.eu.example:7777",
    labels: { region: "eu" },
    heartbeat_ttl_sec: 600,
  });
  expect(registered.status).toBe(201);
  const peer = (await registered.json()) as { registration_id: string; name: string };
  expect(peer.registration_id).toBeString();
  expect(
    (
      await postJson(`${first.baseUrl}/peers`, {
        name: "triage-us",
        endpoint: "https://triage.us.example",
        labels: { region: "us" },
      })
    ).status,
  ).toBe(201);
  expect((await postJson(`${first.baseUrl}/peers`, { name: "bad", endpoint: "/relative" })).status).toBe(400);
  const eu = (await (await fetch(`${first.baseUrl}/peers?label=region=eu`)).json()) as {
    peers: Array<{ name: string }>;
  };
  expect(eu.peers.map((row) => row.name)).toEqual(["triage-eu"]);
  expect((await postJson(`${first.baseUrl}/peers/${peer.registration_id}/heartbeat`)).status).toBe(200);
  expect((statSync(stateFile).mode & 0o777).toString(8)).toBe("600");
  expect(await first.sigterm()).toBe(0);

  const second = await scope.start({ args, sessionDb: first.sessionDb });
  const all = (await (await fetch(`${second.baseUrl}/peers`)).json()) as {
    peers: Array<{ name: string; registration_id?: string }>;
  };
  expect(all.peers.map((row) => row.name)).toEqual(["triage-eu", "triage-us"]);
  const deleted = await fetch(`${second.baseUrl}/peers/${peer.registration_id}`, {
    method: "DELETE",
    headers: { "content-type": "application/json" },
  });
  expect(deleted.status).toBe(204);
  const left = (await (await fetch(`${second.baseUrl}/peers`)).json()) as { peers: Array<{ name: string }> };
  expect(left.peers.map((row) => row.name)).toEqual(["triage-us"]);
}, 30_000);
