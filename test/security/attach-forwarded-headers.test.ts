/**
 * Spoofed X-Forwarded-Host and X-Forwarded-Proto: a caller that is not a configured proxy cannot
 * make the daemon describe itself under a host of the caller's choosing (the agent card's `url`,
 * which A2A clients follow). They are believed only from --attach-trusted-proxies.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { usageError } from "../support/agent-startup.ts";
import { tempDir } from "../support/daemon.ts";
import { type InProcessAgent, startInProcessAgent } from "../support/in-process-agent.ts";

let untrusting: InProcessAgent;
let otherProxy: InProcessAgent;
let trusting: InProcessAgent;
const card = ["--agent-card-description=Triages"];
beforeAll(async () => {
  [untrusting, otherProxy, trusting] = await Promise.all([
    startInProcessAgent({ args: card }),
    startInProcessAgent({ args: [...card, "--attach-trusted-proxies=10.0.0.0/8,fd00::/8"] }),
    startInProcessAgent({ args: [...card, "--attach-trusted-proxies=127.0.0.0/8"] }),
  ]);
});
afterAll(async () => {
  await Promise.all([untrusting.stop(), otherProxy.stop(), trusting.stop()]);
});

const spoofed = { "x-forwarded-proto": "https", "x-forwarded-host": "phish.example" };
const cardUrl = async (daemon: InProcessAgent) =>
  (
    (await (await fetch(`${daemon.baseUrl}/.well-known/agent-card.json`, { headers: spoofed })).json()) as {
      url: string;
    }
  ).url;

test("without trusted proxies the forwarded headers are ignored", async () => {
  expect(await cardUrl(untrusting)).toBe(`http://127.0.0.1:${untrusting.port}`);
});

test("from a peer outside the trusted blocks they are ignored", async () => {
  expect(await cardUrl(otherProxy)).toBe(`http://127.0.0.1:${otherProxy.port}`);
});

test("from a trusted proxy they are believed", async () => {
  expect(await cardUrl(trusting)).toBe("https://phish.example");
});

test("a malformed trusted-proxy entry is a startup error naming it", () => {
  // A usage error (the command prints it and exits 2), decided in process.
  const dir = tempDir();
  const refusal = usageError(
    ["--attach-listen=127.0.0.1:0", `--session-db=${dir}/s.db`, "--attach-trusted-proxies=10.0.0.1/8"],
    dir,
  );
  expect(refusal).toContain("--attach-trusted-proxies");
  expect(refusal).toContain("did you mean 10.0.0.0/8");
});
