/**
 * The README's three tours, run as the README prints them: every command of a tour is read from
 * its `sh` blocks and run in order against real processes (only addresses, ports and temporary
 * paths are swapped in; placeholders like `<prompt id>`, `gate-...` and `mrt_...` take the values
 * the earlier steps printed). The agent tour approves a prompt and really interrupts a turn in
 * flight, then steers it; the watcher tour prints a payload whose bundle holds the crashed
 * container's log tail; the svc tour's operator CLI answers the gate by interrupt id on the gated
 * example, pauses, resumes by token, aborts, exports and stops the daemon.
 */
import { expect, test } from "bun:test";
import { existsSync, mkdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { REPO_ROOT, sparCommand, startDaemon, tempDir, waitFor } from "../support/daemon.ts";
import { daemonScope, runToExit } from "../support/daemon-scope.ts";
import { curlRequest, readmeSection, send, shellLines, shellWords, spawnCollected } from "../support/readme-shell.ts";
import { type Collector, collect } from "../support/sse-client.ts";

const scope = daemonScope();

/** `--name=value` out of `args`, asserting the README passes it. */
function takeFlag(args: string[], name: string): { value: string; rest: string[] } {
  const found = args.find((arg) => arg.startsWith(`--${name}=`));
  if (found === undefined) throw new Error(`the README's command has no --${name}`);
  return { value: found.slice(name.length + 3), rest: args.filter((arg) => arg !== found) };
}

const agentText = (frame: { event: string; data: Record<string, unknown> }) =>
  frame.event === "agent"
    ? ((frame.data.event as { Content: { parts: Array<{ text?: string }> } | null }).Content?.parts ?? [])
        .map((part) => part.text ?? "")
        .join("")
    : "";

test("the agent tour: the prompt is answered, the slow turn is interrupted in flight, and steer runs", async () => {
  const section = readmeSection("Five minutes with the agent daemon");
  const lines = shellLines(section.slice(0, section.indexOf("**A real model.**")));
  const start = shellWords(lines[0] ?? "");
  expect(start.slice(0, 2)).toEqual(["scripts/spar", "agent"]);
  const listen = takeFlag(start.slice(2), "attach-listen");
  const db = takeFlag(listen.rest, "session-db");
  expect(db.rest).toContain("--script=docs/examples/tour.jsonl");
  const daemon = await scope.start({ args: db.rest });
  const streams: Collector[] = [];
  let events: Collector | undefined;
  let prompts: Collector | undefined;
  let interrupted = false;
  for (const line of lines.slice(1)) {
    const request = curlRequest(line);
    if (request.stream) {
      const url = new URL(request.url);
      const stream = scope.defer(collect(`${daemon.baseUrl}${url.pathname}${url.search}`), (s) => s.close());
      streams.push(stream);
      if (url.pathname.endsWith("/perms/stream")) prompts = stream;
      else if (events === undefined) events = stream;
      await waitFor(() => (stream.source.readyState === stream.source.OPEN ? true : undefined), 10_000, line);
      continue;
    }
    if (!events || !prompts) throw new Error("the tour attaches its streams before it writes");
    if (request.body?.includes("<prompt id>")) {
      const prompt = await prompts.waitFor((frame) => frame.event === "prompt", 10_000);
      expect(prompt.data).toMatchObject({ kind: "bash", detail: "echo hello from bash" });
      request.body = request.body.replace("<prompt id>", String(prompt.data.id));
    }
    const from = events.frames.length;
    if (request.url.endsWith("/interrupt")) {
      // What the README says to wait for: the slow turn's first line on the event stream.
      await events.waitFor(
        (frame) => frame.event === "text-delta" && frame.data.text === "Reading the last hour of events...",
        10_000,
      );
    }
    const response = await send(request, daemon.baseUrl);
    expect({ line, ok: response.ok }).toEqual({ line, ok: true });
    if (request.url.endsWith("/interrupt")) {
      expect(response.headers.get("x-interrupted")).toBeNull();
      expect(await response.json()).toMatchObject({ interrupted: true, paused: true });
      const error = await events.waitFor((frame) => frame.event === "turn-error", 10_000, from);
      expect(error.data).toMatchObject({ kind: "canceled" });
      interrupted = true;
    }
    if (request.url.endsWith("/perms/respond")) {
      // The approved command ran: the turn ends with its output in the answer.
      const done = await events.waitFor((frame) => agentText(frame).includes("The command printed"), 15_000, from);
      expect(agentText(done)).toBe("The command printed: hello from bash");
    }
  }
  expect(interrupted).toBe(true);
  const steered = await events?.waitFor((frame) => agentText(frame).startsWith("Checked the logs first"), 10_000);
  expect(agentText(steered ?? { event: "", data: {} })).toBe("Checked the logs first: no errors in the last hour.");
  // The reconnect with ?since=3 replays the rows after 3, once.
  const replay = streams[2];
  expect(streams.length).toBe(3);
  await replay?.waitFor((frame) => frame.event === "agent", 10_000);
  const seqs = (replay?.frames ?? []).filter((frame) => frame.event === "agent").map((frame) => Number(frame.id));
  expect(Math.min(...seqs)).toBe(4);
  expect(new Set(seqs).size).toBe(seqs.length);
}, 60_000);

test("the watcher tour against the fake apiserver: the payload's bundle holds the crashed container's log tail", async () => {
  const section = readmeSection("Five minutes with the watcher");
  const lines = shellLines(section.slice(section.indexOf("No cluster at hand?"), section.indexOf("Against a")));
  const dir = tempDir();
  const kubeconfig = join(dir, "fake.kubeconfig");
  const fakeWords = shellWords(lines[0] ?? "").map((word) => (word === "/tmp/fake.kubeconfig" ? kubeconfig : word));
  expect(fakeWords.slice(0, 2)).toEqual([".tools/node_modules/.bin/bun", "scripts/fake-apiserver/main.ts"]);
  const fake = spawnCollected([process.execPath, ...fakeWords.slice(1)]);
  scope.defer(fake, (running) => running.stop());
  const url = (await fake.waitFor("stdout", /^(http:\/\/\S+)\n/, "the fake's URL"))[1] ?? "";
  await fake.waitFor("stderr", /kubeconfig written/, "the fake's kubeconfig");
  const watcherWords = shellWords(lines[1] ?? "").map((word) => word.replace("/tmp/fake.kubeconfig", kubeconfig));
  expect(watcherWords.slice(0, 4)).toEqual(["scripts/spar", "watcher", "watch", "--dry-run"]);
  const watcher = spawnCollected(sparCommand(...watcherWords.slice(1)));
  scope.defer(watcher, (running) => running.stop());
  await watcher.waitFor("stderr", /watcher: watching/, "the watcher's watching line");
  const vars: Record<string, string> = {};
  for (const line of lines.slice(2)) {
    const assignment = /^(\w+)=(\S+)$/.exec(line);
    if (assignment) {
      vars[assignment[1] ?? ""] = assignment[1] === "U" ? url : (assignment[2] ?? "");
      continue;
    }
    const loop = /^for i in ([\d ]+); do (.*); done$/.exec(line);
    const times = loop ? (loop[1] ?? "").trim().split(/\s+/).length : 1;
    for (let i = 0; i < times; i++) {
      const response = await send(curlRequest(loop ? (loop[2] ?? "") : line, vars), url);
      expect({ line, ok: response.ok }).toEqual({ line, ok: true });
    }
  }
  await watcher.waitFor("stdout", /--- dry-run payload for session "dry-run-1" ---/, "the payload");
  const fire = (await watcher.waitFor("stderr", /fire BackOff .*\n/, "the fire line"))[0].trim();
  const prose = section.replace(/\s+/g, " ");
  expect(prose).toContain(fire);
  const payload = JSON.parse(watcher.stdout().split("---\n")[1] ?? "{}") as { enrichment?: { bundle?: string } };
  const bundle = payload.enrichment?.bundle ?? "";
  const tail = /the tail of the crashed container's log: `([^`]+)`/.exec(prose)?.[1] ?? "";
  expect(tail).not.toBe("");
  expect(bundle).toContain(`section=logs container=app line="${tail}"`);
  expect(bundle).not.toContain("enrichment_error");
  // Every source of the spec is built: `auto` resolves without a "not available" line (D338).
  const startup = watcher.stderr().split("\n");
  expect(startup.filter((text) => text.includes("not available in this build"))).toEqual([]);
  expect(startup.filter((text) => text.includes("sources: auto resolved → cluster-events,"))).toHaveLength(1);
}, 60_000);

test("the svc tour on the gated example: the operator CLI answers the gate, pauses, resumes, aborts, exports, stops", async () => {
  const section = readmeSection("The workflow daemon");
  const lines = shellLines(section.slice(0, section.indexOf("`--a2a-listen")));
  const dir = tempDir();
  const counts = join(dir, "counts");
  const env: Record<string, string> = {};
  const exported = /^export (.*?) && mkdir -p \$COUNT_DIR$/.exec(lines[0] ?? "");
  if (!exported) throw new Error(`the tour starts with its exports: ${lines[0]}`);
  for (const pair of shellWords(exported[1] ?? "")) {
    const [name = "", value = ""] = pair.split("=", 2);
    env[name] = name === "COUNT_DIR" ? counts : value;
  }
  mkdirSync(counts);
  const startWords = shellWords(lines[1] ?? "");
  const scriptVar = startWords.shift() ?? "";
  expect(scriptVar).toBe("SVC_SCRIPT=docs/examples/gate-tour.jsonl");
  env.SVC_SCRIPT = scriptVar.slice("SVC_SCRIPT=".length);
  expect(startWords.slice(0, 2)).toEqual(["scripts/spar", "svc"]);
  const store = takeFlag(startWords.slice(2), "session-db");
  const readmeStore = store.value;
  const sessionDb = join(dir, "svc-tour.db");
  const daemon = scope.adopt(
    await startDaemon({ role: "svc", args: store.rest, sessionDb, env: { ...env, SPAR_BUN: process.execPath } }),
  );
  const inject = await send(curlRequest(lines[2] ?? "", env), daemon.baseUrl);
  expect(inject.status).toBe(202);
  expect(await inject.json()).toMatchObject({ session_id: "incident-demo", state: "paused" });
  const seen: Record<string, string> = {};
  for (const line of lines.slice(3)) {
    const words = shellWords(line).map((word) =>
      word
        .replace(readmeStore, sessionDb)
        .replace("--out=decisions.jsonl", `--out=${join(dir, "decisions.jsonl")}`)
        .replace(/^--interrupt=gate-\.\.\.$/, `--interrupt=${seen.interrupt}`)
        .replace(/^--token=mrt_\.\.\.$/, `--token=${seen.token}`),
    );
    expect(words.slice(0, 2)).toEqual(["scripts/spar", "svc"]);
    const talksToDaemon = !words.some((word) => word.startsWith("--session-db="));
    const args = [...words.slice(1), ...(talksToDaemon ? [`--addr=${daemon.baseUrl}`] : [])];
    const result = await runToExit(sparCommand(...args), { cwd: REPO_ROOT, env });
    expect([line, result.code, result.stderr]).toEqual([
      line,
      0,
      result.stderr.startsWith("warning") ? result.stderr : "",
    ]);
    const interrupt = /Interrupt: (gate-\S+)/.exec(result.stdout)?.[1];
    if (interrupt) seen.interrupt = interrupt;
    const token = /"token":"(mrt_[^"]+)"/.exec(result.stdout)?.[1];
    if (token) seen.token = token;
  }
  expect(seen.interrupt).toStartWith("gate-");
  expect(seen.token).toStartWith("mrt_");
  expect(await daemon.process.exited).toBe(0);
  expect(readFileSync(join(counts, "apply_change.calls"), "utf8").trim().split("\n")).toHaveLength(1);
  expect(existsSync(join(dir, "decisions.jsonl"))).toBe(true);
}, 90_000);
