/**
 * Resource hygiene of the event stream: heartbeat comments keep idle streams alive, and 10,000
 * connect/disconnect cycles leave no subscriber and no file descriptor behind.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { readdirSync } from "node:fs";
import { type Daemon, startDaemon, waitFor } from "../../support/daemon.ts";
import { rawSubscribe } from "../../support/raw-sse.ts";

let daemon: Daemon;
beforeAll(async () => {
  daemon = await startDaemon({ args: ["--sse-heartbeat=200ms"] });
});
afterAll(async () => {
  await daemon.sigterm();
});

async function metric(name: string): Promise<number> {
  const text = await (await fetch(`${daemon.baseUrl}/metrics`)).text();
  const line = text.split("\n").find((candidate) => candidate.startsWith(`${name} `));
  if (!line) throw new Error(`metric ${name} missing:\n${text}`);
  return Number(line.split(" ")[1]);
}

function openFds(pid: number): number {
  return readdirSync(`/proc/${pid}/fd`).length;
}

test("an idle stream gets `: ping` comments at the heartbeat interval", async () => {
  const subscriber = rawSubscribe(daemon.port, "/sessions/default/events");
  // Time under test: a second of heartbeats.
  await Bun.sleep(1100);
  subscriber.close();
  expect(subscriber.frames.map((frame) => frame.event)).toEqual(["capabilities", "status-update", "usage-update"]);
  expect(subscriber.comments).toBeGreaterThanOrEqual(3);
  expect(subscriber.comments).toBeLessThanOrEqual(7);
});

test("10,000 connect/disconnect cycles leave no subscriber and no file descriptor behind", async () => {
  const pid = daemon.process.pid;
  await waitFor(async () => ((await metric("spar_sse_subscribers")) === 0 ? true : undefined), 5000, "idle daemon");
  const fdsBefore = openFds(pid);
  const cycles = 10_000;
  const concurrency = 25;
  let done = 0;
  const worker = async () => {
    while (done < cycles) {
      done++;
      const subscriber = rawSubscribe(daemon.port, "/sessions/default/events");
      await waitFor(
        () => (subscriber.frames.length > 0 || subscriber.isEnded ? true : undefined),
        10_000,
        "first frame",
      );
      expect(subscriber.frames[0]?.event).toBe("capabilities");
      subscriber.close();
      await subscriber.ended;
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
  await waitFor(
    async () =>
      (await metric("spar_sse_subscribers")) === 0 && (await metric("spar_feed_subscribers")) === 0 ? true : undefined,
    10_000,
    "subscribers released",
  );
  const fdsAfter = await waitFor(
    () => {
      const count = openFds(pid);
      return count <= fdsBefore + 2 ? count : undefined;
    },
    10_000,
    `file descriptors back to ${fdsBefore}`,
  );
  expect(fdsAfter).toBeLessThanOrEqual(fdsBefore + 2);
  expect((await fetch(`${daemon.baseUrl}/healthz`)).status).toBe(200);
}, 180_000);
