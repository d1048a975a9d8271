/**
 * DNS rebinding, CSRF and body limits on svc's AG-UI listener without a token (loopback only):
 * a foreign Host is refused 421 before the body is read, a text/plain run (a simple cross-site
 * request) 415, a run over 1 MiB 413 (declared or chunked), broken JSON 400 as a JSON error;
 * none of them starts a run or creates a session.
 */
import { beforeAll, expect, test } from "bun:test";
import { type AguiDaemon, aguiWorkload, startAgui } from "../support/agui-daemon.ts";
import { daemonScope } from "../support/daemon-scope.ts";
import { readLive } from "../support/gated-workload.ts";
import { rawHttp } from "../support/raw-http.ts";
import { say } from "../support/scripted.ts";

const scope = daemonScope({ per: "file" });
let open: AguiDaemon;
let port: number;
beforeAll(async () => {
  open = await startAgui(scope, aguiWorkload(), [say("accepted")]);
  port = Number(new URL(open.base).port);
});

const run = (content: string) =>
  JSON.stringify({ threadId: "t-h", runId: "r-h", messages: [{ id: "m", role: "user", content }] });
const post = (body: string | ReadableStream<Uint8Array>, contentType = "application/json") =>
  fetch(open.url, { method: "POST", headers: { "content-type": contentType }, body });

const sessionExists = () =>
  readLive(open.daemon.sessionDb, async (store) => (await store.sessionIds()).includes("agui-t-h"));

async function noSessionCreated(): Promise<void> {
  expect(await sessionExists()).toBe(false);
}

test("DNS rebinding: a foreign Host on the run endpoint is refused 421", async () => {
  const body = run("hi");
  const answer = await rawHttp(
    port,
    `POST /agui/gated HTTP/1.1\r\nHost: attacker.example:${port}\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\nConnection: close\r\n\r\n${body}`,
  );
  expect(answer.status).toBe(421);
  expect(answer.body).toContain("attacker.example");
  await noSessionCreated();
});

test("DNS rebinding: a foreign Host cannot read the discovery descriptor either (421)", async () => {
  const answer = await rawHttp(
    port,
    "GET /agui/agents.json HTTP/1.1\r\nHost: attacker.example\r\nConnection: close\r\n\r\n",
  );
  expect(answer.status).toBe(421);
});

test("CSRF: a text/plain run (a simple cross-site request) is refused 415", async () => {
  expect((await post(run("hi"), "text/plain")).status).toBe(415);
  await noSessionCreated();
});

test("a run over 1 MiB is refused 413, declared or chunked", async () => {
  const huge = run("x".repeat(1100 * 1024));
  const declared = await post(huge);
  expect(declared.status).toBe(413);
  expect(declared.headers.get("content-type")).toContain("application/json");
  const bytes = new TextEncoder().encode(huge);
  const chunked = new ReadableStream<Uint8Array>({
    start(controller) {
      for (let offset = 0; offset < bytes.length; offset += 65536)
        controller.enqueue(bytes.slice(offset, offset + 65536));
      controller.close();
    },
  });
  expect((await post(chunked)).status).toBe(413);
  await noSessionCreated();
});

test("broken JSON is refused 400 as a JSON error, not a crash", async () => {
  const answer = await post('{"threadId":');
  expect(answer.status).toBe(400);
  expect(answer.headers.get("content-type")).toContain("application/json");
  await noSessionCreated();
});

test("control: the same run from the listener's own host is served and its session exists (the checks above can fail)", async () => {
  const answer = await post(run("hi"));
  expect(answer.status).toBe(200);
  expect(await answer.text()).toContain("RUN_FINISHED");
  expect(await sessionExists()).toBe(true);
});
