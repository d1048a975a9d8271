/**
 * Oversized requests and out-of-range cursors: every refusal is a JSON error, including bodies
 * far past the old 1 MiB cap Bun answered with an empty 413, a chunked body with no length, and
 * headers past the daemon's 16 KiB header cap; `since` takes the whole int64 range (a cursor past
 * the end replays nothing) and refuses what is past it with a 400.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { connect } from "node:net";
import { type Daemon, postJson, startDaemon, waitFor } from "../support/daemon.ts";
import { collect } from "../support/sse-client.ts";

let daemon: Daemon;
beforeAll(async () => {
  daemon = await startDaemon();
});
afterAll(async () => {
  await daemon.sigterm();
});

/** Send a request head (and maybe the start of a body) and read the answer, without finishing the request. */
function firstAnswer(head: string): Promise<{ status: number; headers: Record<string, string>; body: string }> {
  return new Promise((resolve, reject) => {
    const socket = connect(daemon.port, "127.0.0.1");
    let text = "";
    const timer = setTimeout(() => reject(new Error(`no answer: ${text}`)), 5000); // deadline
    socket.on("connect", () => socket.write(head));
    socket.on("error", reject);
    socket.on("data", (chunk: Buffer) => {
      text += chunk.toString();
      const split = text.indexOf("\r\n\r\n");
      if (split < 0) return;
      const [statusLine = "", ...lines] = text.slice(0, split).split("\r\n");
      const headers: Record<string, string> = {};
      for (const line of lines)
        headers[line.slice(0, line.indexOf(":")).toLowerCase()] = line.slice(line.indexOf(":") + 1).trim();
      const body = text.slice(split + 4);
      if (body.length < Number(headers["content-length"] ?? 0)) return;
      clearTimeout(timer);
      socket.destroy();
      resolve({ status: Number(statusLine.split(" ")[1]), headers, body });
    });
  });
}

function expectJsonError(
  answer: { status: number; headers: Record<string, string>; body: string },
  status: number,
  words: string,
): void {
  expect(answer.status).toBe(status);
  expect(answer.headers["content-type"]).toContain("application/json");
  expect((JSON.parse(answer.body) as { error: string }).error).toContain(words);
}

describe("bodies", () => {
  test("a 5 GB Content-Length is a JSON 413 at once, without the body being read", async () => {
    const answer = await firstAnswer(
      "POST /sessions/default/inject HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 5000000000\r\n\r\n{",
    );
    expectJsonError(answer, 413, "larger than 8192 bytes");
  });

  test("a 2 MiB body sent whole is a JSON 413", async () => {
    const response = await postJson(`${daemon.baseUrl}/sessions/default/inject`, {
      message: "x".repeat(2 * 1024 * 1024),
    });
    expect(response.status).toBe(413);
    expect(((await response.json()) as { error: string }).error).toContain("larger than 8192 bytes");
  });

  test("a chunked body with no length is cut at the cap and answered with a JSON 413", async () => {
    const answer = await new Promise<string>((resolve, reject) => {
      const socket = connect(daemon.port, "127.0.0.1");
      const chunks: Buffer[] = [];
      socket.on("connect", () => {
        socket.write(
          "POST /sessions/default/inject HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n",
        );
        const piece = "x".repeat(4096);
        // Far past the cap; the server answers without waiting for the end.
        for (let index = 0; index < 64; index++) socket.write(`${piece.length.toString(16)}\r\n${piece}\r\n`);
      });
      socket.on("data", (chunk: Buffer) => {
        chunks.push(chunk);
        if (Buffer.concat(chunks).toString().includes("}")) {
          socket.destroy();
          resolve(Buffer.concat(chunks).toString());
        }
      });
      socket.on("error", reject);
      setTimeout(() => reject(new Error("no answer")), 5000); // deadline
    });
    expect(answer).toStartWith("HTTP/1.1 413");
    expect(answer).toContain("application/json");
    expect(answer).toContain("larger than 8192 bytes");
    const usage = (await (await fetch(`${daemon.baseUrl}/sessions/default/usage`)).json()) as {
      overall: { turns: number };
    };
    expect(usage.overall.turns).toBe(0);
  });
});

describe("headers", () => {
  test("headers past the daemon's 16 KiB limit are a JSON 431 naming it, not Bun's bodiless one", async () => {
    const answer = await firstAnswer(
      `GET /sessions HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Padding: ${"p".repeat(20_000)}\r\n\r\n`,
    );
    expectJsonError(answer, 431, "larger than 16384 bytes");
    expect((await fetch(`${daemon.baseUrl}/sessions`, { headers: { "x-padding": "p".repeat(15_000) } })).status).toBe(
      200,
    );
  });
});

describe("since", () => {
  test("every int64 is a cursor: past the end replays nothing but live frames still arrive", async () => {
    expect((await postJson(`${daemon.baseUrl}/sessions/default/inject`, { message: "before" })).status).toBe(200);
    await waitFor(
      async () =>
        ((await (await fetch(`${daemon.baseUrl}/sessions/default/usage`)).json()) as { overall: { turns: number } })
          .overall.turns >= 1 || undefined,
      10_000,
      "the first turn",
    );
    const stream = collect(`${daemon.baseUrl}/sessions/default/events?since=9223372036854775807`);
    try {
      await stream.waitFor((frame) => frame.event === "capabilities");
      expect((await postJson(`${daemon.baseUrl}/sessions/default/inject`, { message: "live one" })).status).toBe(200);
      await stream.waitFor((frame) => frame.event === "turn-complete");
      const texts = stream.frames.filter((frame) => frame.event === "agent").map((frame) => JSON.stringify(frame.data));
      expect(texts.some((text) => text.includes("before"))).toBe(false);
      expect(texts.some((text) => text.includes("live one"))).toBe(true);
    } finally {
      stream.close();
    }
  });

  test("past the int64 range, negative or not a number is a JSON 400", async () => {
    for (const since of ["9223372036854775808", "99999999999999999999", "-1", "1e3", "0x10"]) {
      const response = await fetch(`${daemon.baseUrl}/sessions/default/events?since=${since}`);
      expect({ since, status: response.status }).toEqual({ since, status: 400 });
      expect(((await response.json()) as { error: string }).error).toContain("int64");
    }
  });
});
