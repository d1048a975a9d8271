/**
 * The notifications source (D400-D402) over a real socket: the receiver its runner owns, started
 * from flag values and an environment alone, takes CloudEvents sent by the cloudevents SDK's own
 * emitter in structured and binary mode on `POST /notifications/<subscription>` (the last segment
 * of a full subscription path); a redelivery is emitted once; an unknown type is acknowledged,
 * ignored and logged once; another subscription's path is 404. In the watcher: named, a bulletin
 * reaches the sink; a missing --notifications-token-env or an unset variable refuses startup
 * naming it; `auto` never enables it.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { CloudEvent, emitterFor, HTTP, httpTransport, Mode } from "cloudevents";
import { type FakeApiserver, startFakeApiserver } from "../../../scripts/fake-apiserver/server.ts";
import { watcherConfigFromArgv } from "../../../src/cli/watcher-config.ts";
import { createLogger } from "../../../src/telemetry/logger.ts";
import type { Signal } from "../../../src/watcher/core/signal.ts";
import type { NotificationsReceiver } from "../../../src/watcher/sources/notifications-receiver.ts";
import { SOURCE_RUNNERS } from "../../../src/watcher/sources/source-registry.ts";
import { StartupRefusal, startWatcher } from "../../../src/watcher/watch-runner.ts";
import { waitFor } from "../../support/daemon.ts";

const GKE = "type.googleapis.com/google.container.v1beta1";
const SOURCE = "//container.googleapis.com/projects/p1/locations/us-east1/clusters/prod";
const TOKEN = "push-token-0123456789";
const SUBSCRIPTION = "projects/p1/subscriptions/gke-notes";
const auth = { headers: { authorization: `Bearer ${TOKEN}` } };

function values(extra: string[] = []) {
  const parsed = watcherConfigFromArgv([
    "--dry-run",
    "--sources=notifications",
    `--notifications-subscription=${SUBSCRIPTION}`,
    "--notifications-addr=127.0.0.1:0",
    "--notifications-token-env=NOTES_TOKEN",
    ...extra,
  ]);
  if (!parsed.ok) throw new Error(parsed.error);
  return parsed.value.values;
}

const emitted: Signal[] = [];
const lines: string[] = [];
let receiver: NotificationsReceiver;
let endpoint: string;

beforeAll(async () => {
  const factory = SOURCE_RUNNERS.notifications;
  if (!factory) throw new Error("no notifications runner");
  receiver = factory({
    values: values(),
    env: { NOTES_TOKEN: TOKEN },
    connection: { server: "http://127.0.0.1:1", tls: {}, token: () => undefined },
    without: new Set(),
    emit: (signal) => emitted.push(signal),
    logger: createLogger("info", (line) => lines.push(line)),
    onRestart: () => {},
  }) as NotificationsReceiver;
  expect(receiver.synced).toBe(false);
  await receiver.start();
  expect(receiver.synced).toBe(true);
  endpoint = `${receiver.url}/notifications/gke-notes`;
});
afterAll(() => receiver.stop());

const bulletin = (id: string) =>
  new CloudEvent({
    id,
    source: SOURCE,
    type: `${GKE}.SecurityBulletinEvent`,
    subject: "prod",
    data: { bulletinId: "GCP-2026-042", severity: "High", briefDescription: "A container escape." },
  });

describe("the CloudEvents receiver", () => {
  test("listens where it says, on the subscription's last segment", () => {
    expect(lines).toContainEqual(expect.stringContaining(`receiving CloudEvents on ${endpoint}`));
  });

  test("structured mode through the SDK's emitter: one bulletin signal, accepted", async () => {
    const emit = emitterFor(httpTransport(endpoint), { mode: Mode.STRUCTURED });
    const before = emitted.length;
    const answer = (await emit(bulletin("s-1"), auth)) as { body: string };
    expect(JSON.parse(answer.body)).toEqual({ status: "accepted", kind: "notification.security_bulletin" });
    expect(emitted.slice(before)).toEqual([
      expect.objectContaining({
        kind: "notification.security_bulletin",
        severity: "warning",
        uid: "notification:prod/GCP-2026-042",
      }),
    ]);
  });

  test("binary mode through the SDK's emitter: an upgrade, info", async () => {
    const emit = emitterFor(httpTransport(endpoint), { mode: Mode.BINARY });
    const before = emitted.length;
    const upgrade = new CloudEvent({
      id: "b-1",
      source: SOURCE,
      type: `${GKE}.UpgradeEvent`,
      subject: "prod",
      data: { resourceType: "NODE_POOL", currentVersion: "1.30.1", targetVersion: "1.30.2" },
    });
    const answer = (await emit(upgrade, auth)) as { body: string };
    expect(JSON.parse(answer.body)).toEqual({ status: "accepted", kind: "notification.upgrade" });
    expect(emitted.slice(before)).toEqual([
      expect.objectContaining({ kind: "notification.upgrade", severity: "info", uid: "notification:prod/1.30.2" }),
    ]);
  });

  test("a redelivery (same id and source, either mode) is emitted once", async () => {
    const before = emitted.length;
    const event = bulletin("r-1");
    const statuses: string[] = [];
    for (const message of [HTTP.structured(event), HTTP.binary(event), HTTP.structured(event)]) {
      const response = await fetch(endpoint, {
        method: "POST",
        headers: { ...(message.headers as Record<string, string>), ...auth.headers },
        body: message.body as string,
      });
      expect(response.status).toBe(202);
      statuses.push(((await response.json()) as { status: string }).status);
    }
    expect(statuses).toEqual(["accepted", "duplicate", "duplicate"]);
    expect(emitted.length - before).toBe(1);
  });

  test("an unknown type is 202 ignored, logged once per type, nothing emitted", async () => {
    const before = emitted.length;
    for (const id of ["u-1", "u-2"]) {
      const message = HTTP.structured(new CloudEvent({ id, source: SOURCE, type: "com.example.bucket.created" }));
      const response = await fetch(endpoint, {
        method: "POST",
        headers: { ...(message.headers as Record<string, string>), ...auth.headers },
        body: message.body as string,
      });
      expect(response.status).toBe(202);
      expect(await response.json()).toEqual({
        status: "ignored",
        reason: 'no notification kind for CloudEvent type "com.example.bucket.created"',
      });
    }
    expect(emitted.length).toBe(before);
    expect(lines.filter((line) => line.includes("com.example.bucket.created"))).toHaveLength(1);
  });

  test("another subscription's path is 404 naming the right one", async () => {
    const message = HTTP.structured(bulletin("o-1"));
    const response = await fetch(`${receiver.url}/notifications/other`, {
      method: "POST",
      headers: { ...(message.headers as Record<string, string>), ...auth.headers },
      body: message.body as string,
    });
    expect(response.status).toBe(404);
    expect(((await response.json()) as { error: string }).error).toContain("pushes go to /notifications/gke-notes");
  });
});

async function watcher(args: string[], env: Record<string, string>, log: string[], printed: string[] = []) {
  const parsed = watcherConfigFromArgv([
    "--dry-run",
    "--kubeconfig=/nonexistent",
    "--cluster-name=notes-test",
    "--storm=off",
    "--recovery-stable-for=0",
    // Warnings go to the watchboard (D418): a digest per warning, printed at once.
    "--watchboard-batch=1",
    "--access-recheck=0",
    ...args,
  ]);
  if (!parsed.ok) throw new Error(parsed.error);
  return startWatcher(
    parsed.value,
    createLogger("info", (line) => log.push(line)),
    { connection: { server: api.url, tls: {}, token: () => undefined }, stdout: (text) => printed.push(text), env },
  );
}

let api: FakeApiserver;

describe("notifications in the watcher", () => {
  beforeAll(async () => {
    api = await startFakeApiserver();
  });
  afterAll(() => api.stop());

  const named = [
    "--sources=cluster-events,notifications",
    `--notifications-subscription=${SUBSCRIPTION}`,
    "--notifications-addr=127.0.0.1:0",
  ];

  test("named: a bulletin pushed to the receiver reaches the sink", async () => {
    const log: string[] = [];
    const printed: string[] = [];
    const running = await watcher(
      [...named, "--notifications-token-env=NOTES_TOKEN"],
      { NOTES_TOKEN: TOKEN },
      log,
      printed,
    );
    try {
      expect(log).toContainEqual(expect.stringContaining("source notifications: enabled"));
      const url = /receiving CloudEvents on (\S+)/.exec(
        log.find((line) => line.includes("receiving CloudEvents")) ?? "",
      )?.[1];
      expect(url).toEndWith("/notifications/gke-notes");
      const emit = emitterFor(httpTransport(url ?? ""), { mode: Mode.STRUCTURED });
      await emit(bulletin("w-1"), auth);
      const page = await waitFor(
        () => printed.find((text) => text.includes('"kind": "notification.security_bulletin"')),
        8000,
        "the bulletin's payload",
      );
      expect(page).toContain('"severity": "warning"');
      expect(running.ready()).toBe(true);
    } finally {
      await running.stop();
    }
  });

  test("without --notifications-token-env the config refuses; with its variable unset startup refuses naming it", async () => {
    const config = watcherConfigFromArgv(["--dry-run", ...named]);
    expect(config.ok).toBe(false);
    expect(config.ok ? "" : config.error).toContain("--notifications-token-env");
    const subscriptionless = watcherConfigFromArgv([
      "--dry-run",
      "--sources=notifications",
      "--notifications-token-env=X",
    ]);
    expect(subscriptionless.ok ? "" : subscriptionless.error).toContain("--notifications-subscription");
    const badAddr = watcherConfigFromArgv(["--dry-run", "--notifications-addr=nowhere"]);
    expect(badAddr.ok ? "" : badAddr.error).toContain("--notifications-addr must be host:port");
    const refused = await watcher([...named, "--notifications-token-env=NOTES_TOKEN"], {}, []).catch(
      (error: unknown) => error,
    );
    expect(refused).toBeInstanceOf(StartupRefusal);
    expect(String((refused as Error).message)).toBe("--notifications-token-env=NOTES_TOKEN: the variable is not set");
  });

  test("auto never enables it", async () => {
    const log: string[] = [];
    const running = await watcher(["--sources=auto"], {}, log);
    await running.stop();
    expect(log.some((line) => line.includes("source notifications"))).toBe(false);
    expect(log.some((line) => line.includes("receiving CloudEvents"))).toBe(false);
  });
});
