/**
 * Session management over HTTP: create (201 with url, 409, 400 on owner, 501 without a
 * factory), delete (204, 403 for default, 500 on repeat, 404 unknown), both path shapes and the
 * ambiguous shortcut (409), wake, and the zero-valued read models.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { postJson, tempDir, waitFor } from "../../support/daemon.ts";
import { type InProcessAgent, startInProcessAgent } from "../../support/in-process-agent.ts";
import { say } from "../../support/scripted.ts";

let multi: InProcessAgent;
let single: InProcessAgent;
beforeAll(async () => {
  [multi, single] = await Promise.all([startInProcessAgent({ args: ["--multi-session"] }), startInProcessAgent()]);
});
afterAll(async () => {
  await Promise.all([multi.stop(), single.stop()]);
});

async function body(response: Response): Promise<Record<string, unknown>> {
  expect(response.headers.get("content-type")).toContain("application/json");
  return (await response.json()) as Record<string, unknown>;
}

describe("POST /sessions", () => {
  test("creates a session owned by the caller, with an absolute url built from Host", async () => {
    const response = await postJson(`${multi.baseUrl}/sessions`, {
      viewers: [" ann ", "", "bob", "ann"],
      contributors: ["cy"],
    });
    expect(response.status).toBe(201);
    const created = await body(response);
    expect(created).toMatchObject({ app: "spar", user: "local" });
    expect(created.url).toBe(`${multi.baseUrl}/sessions/spar/${created.sessionID}`);
    const listed = (await body(await fetch(`${multi.baseUrl}/sessions`))).sessions as Array<{
      sessionID: string;
      status: string;
    }>;
    expect(listed.find((row) => row.sessionID === created.sessionID)?.status).toBe("active");
    const acl = await body(await fetch(`${multi.baseUrl}/sessions/${created.sessionID}/acl`));
    expect(acl).toEqual({ owner: "local", viewers: ["ann", "bob"], contributors: ["cy"] });
  });

  test("a body-less create works; an existing id is 409; any owner field is 400", async () => {
    expect((await postJson(`${multi.baseUrl}/sessions`)).status).toBe(201);
    expect((await postJson(`${multi.baseUrl}/sessions`, { sessionID: "dup" })).status).toBe(201);
    const again = await postJson(`${multi.baseUrl}/sessions`, { sessionID: "dup" });
    expect(again.status).toBe(409);
    expect((await body(again)).error).toContain("dup");
    const owner = await postJson(`${multi.baseUrl}/sessions`, { owner: "local" });
    expect(owner.status).toBe(400);
    expect((await body(owner)).error).toContain("owner");
  });

  test("single-session mode has no factory: 501, after the body is parsed", async () => {
    expect((await postJson(`${single.baseUrl}/sessions`, {})).status).toBe(501);
    expect((await postJson(`${single.baseUrl}/sessions`, "{not json")).status).toBe(400);
    const listed = await body(await fetch(`${single.baseUrl}/sessions`));
    expect((listed.sessions as Array<{ sessionID: string }>).map((row) => row.sessionID)).toEqual(["default"]);
    expect((await fetch(`${single.baseUrl}/sessions/other/status`)).status).toBe(404);
  });
});

describe("DELETE /sessions/...", () => {
  test("204, then 500 on repeat; default is 403; unknown is 404", async () => {
    expect((await postJson(`${multi.baseUrl}/sessions`, { sessionID: "doomed" })).status).toBe(201);
    expect((await postJson(`${multi.baseUrl}/sessions/doomed/inject`, { message: "hi" })).status).toBe(200);
    const del = await fetch(`${multi.baseUrl}/sessions/spar/doomed`, {
      method: "DELETE",
      headers: { "content-type": "application/json" },
    });
    expect(del.status).toBe(204);
    const again = await fetch(`${multi.baseUrl}/sessions/doomed`, {
      method: "DELETE",
      headers: { "content-type": "application/json" },
    });
    expect(again.status).toBe(500);
    expect((await body(again)).error).toContain("already deleted");
    expect((await fetch(`${multi.baseUrl}/sessions/doomed/status`)).status).toBe(404);
    const bootstrap = await fetch(`${multi.baseUrl}/sessions/default`, {
      method: "DELETE",
      headers: { "content-type": "application/json" },
    });
    expect(bootstrap.status).toBe(403);
    const unknown = await fetch(`${multi.baseUrl}/sessions/never-was`, {
      method: "DELETE",
      headers: { "content-type": "application/json" },
    });
    expect(unknown.status).toBe(404);
  });

  test("a session another app names default can be deleted; this daemon's bootstrap default cannot", async () => {
    expect((await postJson(`${multi.baseUrl}/sessions`, { sessionID: "default", app: "other" })).status).toBe(201);
    expect((await fetch(`${multi.baseUrl}/sessions/default/status`)).status).toBe(409);
    expect(
      (
        await fetch(`${multi.baseUrl}/sessions/other/default`, {
          method: "DELETE",
          headers: { "content-type": "application/json" },
        })
      ).status,
    ).toBe(204);
    expect((await fetch(`${multi.baseUrl}/sessions/default/status`)).status).toBe(200);
    expect(
      (
        await fetch(`${multi.baseUrl}/sessions/spar/default`, {
          method: "DELETE",
          headers: { "content-type": "application/json" },
        })
      ).status,
    ).toBe(403);
  });

  test("concurrent DELETEs: one 204, the others 500; an inject racing them is 404, not accepted and lost", async () => {
    for (let round = 0; round < 5; round++) {
      const id = `raced-${round}`;
      expect((await postJson(`${multi.baseUrl}/sessions`, { sessionID: id })).status).toBe(201);
      expect((await postJson(`${multi.baseUrl}/sessions/${id}/inject`, { message: "busy" })).status).toBe(200);
      const remove = () =>
        fetch(`${multi.baseUrl}/sessions/${id}`, { method: "DELETE", headers: { "content-type": "application/json" } });
      const [first, second, third, injected] = await Promise.all([
        remove(),
        remove(),
        remove(),
        postJson(`${multi.baseUrl}/sessions/${id}/inject`, { message: "late" }),
      ]);
      expect([first.status, second.status, third.status].sort()).toEqual([204, 500, 500]);
      // The inject either landed before the delete began (200, then deleted with the session) or is refused.
      expect([200, 404]).toContain(injected.status);
      expect((await fetch(`${multi.baseUrl}/sessions/${id}/status`)).status).toBe(404);
    }
  });

  test("while a DELETE waits for a turn that will not stop, an inject and a second DELETE see the session as gone", async () => {
    // A spinning turn ignores its cancel until --worker-liveness replaces the worker: the DELETE
    // is held in between, long enough to race it deterministically.
    const script = join(tempDir(), "script.jsonl");
    writeFileSync(script, `${JSON.stringify(say("unused", { spin: true }))}\n`);
    const daemon = await startInProcessAgent({
      args: ["--multi-session", "--workers=1", "--worker-liveness=2s", "--model=scripted", `--script=${script}`],
    });
    try {
      expect((await postJson(`${daemon.baseUrl}/sessions`, { sessionID: "stuck" })).status).toBe(201);
      expect((await postJson(`${daemon.baseUrl}/sessions/stuck/inject`, { message: "spin" })).status).toBe(200);
      await waitFor(
        async () =>
          ((await (await fetch(`${daemon.baseUrl}/sessions/stuck/status`)).json()) as { turn_in_flight: boolean })
            .turn_in_flight || undefined,
        5000,
        "turn running",
      );
      const deleting = fetch(`${daemon.baseUrl}/sessions/stuck`, {
        method: "DELETE",
        headers: { "content-type": "application/json" },
      });
      let deleted = false;
      void deleting.then(() => {
        deleted = true;
      });
      // Messages that land before the DELETE closes the inbox go with the session; the first one
      // after it is refused as missing, while the DELETE still waits for the turn.
      const late = await waitFor(
        async () => {
          const answer = await postJson(`${daemon.baseUrl}/sessions/stuck/inject`, { message: "late" });
          if (answer.status === 404) return answer;
          expect(answer.status).toBe(200);
          await answer.arrayBuffer();
          return undefined;
        },
        5000,
        "an inject refused as the session closes",
      );
      expect(deleted).toBe(false);
      expect(late.status).toBe(404);
      expect((await body(late)).error).toContain("stuck");
      const again = await fetch(`${daemon.baseUrl}/sessions/stuck`, {
        method: "DELETE",
        headers: { "content-type": "application/json" },
      });
      expect(again.status).toBe(500);
      expect((await deleting).status).toBe(204);
    } finally {
      await daemon.stop();
    }
  }, 20_000);
});

describe("path shapes", () => {
  test("qualified and shortcut reach the same session; an id in two apps makes the shortcut 409", async () => {
    expect((await postJson(`${multi.baseUrl}/sessions`, { sessionID: "twin", app: "alpha" })).status).toBe(201);
    expect((await fetch(`${multi.baseUrl}/sessions/twin/status`)).status).toBe(200);
    expect((await postJson(`${multi.baseUrl}/sessions`, { sessionID: "twin", app: "beta" })).status).toBe(201);
    const ambiguous = await fetch(`${multi.baseUrl}/sessions/twin/status`);
    expect(ambiguous.status).toBe(409);
    expect((await body(ambiguous)).error).toContain("more than one app");
    expect((await fetch(`${multi.baseUrl}/sessions/alpha/twin/status`)).status).toBe(200);
    expect((await fetch(`${multi.baseUrl}/sessions/beta/twin/events?since=abc`)).status).toBe(400);
    expect((await fetch(`${multi.baseUrl}/sessions/gamma/twin/status`)).status).toBe(404);
  });
});

describe("inject and wake", () => {
  test("wake:false queues without a turn; the next wake drains it; /wake emits prompt_id only with a prompt", async () => {
    expect((await postJson(`${multi.baseUrl}/sessions`, { sessionID: "sleepy" })).status).toBe(201);
    const queued = await body(
      await postJson(`${multi.baseUrl}/sessions/sleepy/inject`, { message: "later", wake: false }),
    );
    // wake:false schedules nothing (SessionActor.inject): no turn can have started, now or later.
    expect(queued).toMatchObject({ injected: true, session: "sleepy", woke: false });
    const usage = async () =>
      ((await body(await fetch(`${multi.baseUrl}/sessions/sleepy/usage`))).overall as { turns: number }).turns;
    expect(await usage()).toBe(0);
    const bare = await body(await postJson(`${multi.baseUrl}/sessions/sleepy/wake`));
    expect(bare).toEqual({ woken: "sleepy", prompt: "" });
    await waitFor(async () => ((await usage()) === 1 ? true : undefined), 5000, "wake turn");
    const prompted = await body(await postJson(`${multi.baseUrl}/sessions/sleepy/wake`, { prompt: "now" }));
    expect(prompted).toMatchObject({ woken: "sleepy", prompt: "now" });
    expect(typeof prompted.prompt_id).toBe("string");
    expect((await postJson(`${multi.baseUrl}/sessions/sleepy/wake`, { target: "x" })).status).toBe(501);
    // A blank prompt is a bare wake: no message is injected (inject refuses a blank message).
    await waitFor(async () => ((await usage()) === 2 ? true : undefined), 5000, "prompted wake turn");
    const blank = await body(await postJson(`${multi.baseUrl}/sessions/sleepy/wake`, { prompt: "   " }));
    expect(blank.prompt_id).toBeUndefined();
  });
});

describe("read models not yet wired", () => {
  test("answer 200 with zero-valued bodies; missing mutations answer 501", async () => {
    const base = `${single.baseUrl}/sessions/default`;
    // The builtin tools are wired (GET /tools lists them; tools.test.ts covers it).
    expect(
      ((await body(await fetch(`${base}/tools`))).tools as Array<{ name: string }>).map((tool) => tool.name),
    ).toContain("read_file");
    expect(await body(await fetch(`${base}/mcp`))).toEqual({ servers: [] });
    expect((await body(await fetch(`${base}/guardrails`))).halted).toBe(false);
    expect((await body(await fetch(`${base}/agents/helper/events`))).branches).toEqual([
      "helper",
      "bg.helper",
      "sub.helper",
      "remote.helper",
    ]);
    expect((await fetch(`${base}/agents/bad.name/events`)).status).toBe(400);
    // No roster here: an unknown subagent is a 404 naming what is configured.
    expect((await postJson(`${base}/slash/subagent`, { name: "helper", goal: "x" })).status).toBe(404);
    const whoami = await body(await fetch(`${single.baseUrl}/whoami`));
    expect(whoami).toEqual({ identity: "local", admin: false, source: "anonymous" });
  });
});
