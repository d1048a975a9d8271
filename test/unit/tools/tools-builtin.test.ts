/**
 * The builtin tools run directly (src/tools/builtin-tools.ts): file tools inside the workspace
 * (ranges, edits, deletes, symlink escapes), fetch_url against a local server (status, cap,
 * cancel), input validation, classes matching the gate's table (D62), specs matching their
 * validators, the tools flags, and the turn loop offering the specs to the model.
 */
import { afterAll, describe, expect, test } from "bun:test";
import { mkdirSync, readFileSync, realpathSync, symlinkSync, writeFileSync, existsSync } from "node:fs";
import { join } from "node:path";
import { resolveToolsSettings } from "../../../src/cli/tools-flags.ts";
import { MODEL_SPEC_VERSION, type Model, type ModelRequest } from "../../../src/core/model.ts";
import { classifyTool } from "../../../src/core/tool-class.ts";
import { ZERO_USAGE } from "../../../src/core/usage.ts";
import type { RunTurnMessage } from "../../../src/runtime/channel.ts";
import { runTurnLoop } from "../../../src/runtime/turn-loop.ts";
import { parseOutboundAllowList } from "../../../src/net/outbound-allow-list.ts";
import { OutboundGuard } from "../../../src/net/outbound-guard.ts";
import { WorkerPool } from "../../../src/runtime/worker-pool.ts";
import { BUILTIN_TOOLS, builtinSpecs, runBuiltin } from "../../../src/tools/builtin-tools.ts";
import { toolInputSchema } from "../../../src/tools/tool-input-schema.ts";
import { toolEnvironment } from "../../../src/tools/tool-environment.ts";
import { tempDir } from "../../support/daemon.ts";
const DEFAULT_DIGEST = { strategy: "structural" as const, thresholdBytes: 16384 };

const root = realpathSync(tempDir("spar-tools-unit-"));
const loopbackAllowed = parseOutboundAllowList(["127.0.0.1"]);
if (!loopbackAllowed.ok) throw new Error(loopbackAllowed.error);
/** The local test server lives on 127.0.0.1, which the outbound guard refuses unless allowed. */
const settings = { root, disabled: new Set<string>(), outbound: new OutboundGuard({ allow: loopbackAllowed.value }) };
const never = new AbortController().signal;
let callCount = 0;
const run = (name: string, args: Record<string, unknown>, signal = never) =>
  runBuiltin({ callId: `c${callCount++}`, name, args }, settings, signal);

describe("file tools", () => {
  test("read_file: line ranges, directories and binary files refused", async () => {
    writeFileSync(join(root, "lines.txt"), "one\ntwo\nthree\nfour\n");
    expect(await run("read_file", { path: "lines.txt", offset: 2, limit: 2 })).toEqual({
      output: { path: "lines.txt", content: "two\nthree", size_bytes: 19 },
      isError: false,
    });
    expect((await run("read_file", { path: "." })).output.error).toBe(". is a directory");
    writeFileSync(join(root, "bin.dat"), new Uint8Array([1, 0, 2]));
    expect(String((await run("read_file", { path: "bin.dat" })).output.error)).toContain("binary");
    expect(await run("read_file", { path: "missing.txt" })).toEqual({
      output: { error: "missing.txt does not exist" },
      isError: true,
    });
  });

  test("edit_file: one unique match, replace_all, not found and ambiguous refused", async () => {
    writeFileSync(join(root, "e.txt"), "a-b-a $& end");
    expect(await run("edit_file", { path: "e.txt", old_string: "b", new_string: "$&B" })).toEqual({
      output: { path: "e.txt", replacements: 1 },
      isError: false,
    });
    expect(readFileSync(join(root, "e.txt"), "utf8")).toBe("a-$&B-a $& end");
    expect(
      String((await run("edit_file", { path: "e.txt", old_string: "a", new_string: "x" })).output.error),
    ).toContain("occurs 2 times");
    expect(
      await run("edit_file", { path: "e.txt", old_string: "a", new_string: "x", replace_all: true }),
    ).toMatchObject({ output: { replacements: 2 }, isError: false });
    expect(readFileSync(join(root, "e.txt"), "utf8")).toBe("x-$&B-x $& end");
    expect(
      String((await run("edit_file", { path: "e.txt", old_string: "zzz", new_string: "y" })).output.error),
    ).toContain("not found");
  });

  test("delete_file: files only; write_file creates parents and reports overwrite", async () => {
    expect(await run("write_file", { path: "d/e/f.txt", content: "x" })).toEqual({
      output: { path: "d/e/f.txt", bytes_written: 1, created: true },
      isError: false,
    });
    expect(await run("write_file", { path: "d/e/f.txt", content: "été" })).toEqual({
      output: { path: "d/e/f.txt", bytes_written: 5, created: false },
      isError: false,
    });
    expect(String((await run("delete_file", { path: "d/e" })).output.error)).toContain("is a directory");
    expect(await run("delete_file", { path: "d/e/f.txt" })).toEqual({
      output: { path: "d/e/f.txt", deleted: true },
      isError: false,
    });
    expect(existsSync(join(root, "d/e/f.txt"))).toBe(false);
    expect((await run("delete_file", { path: root })).output.error).toBe("the workspace root cannot be deleted");
  });

  test("paths cannot leave the workspace, through .. or a symlink", async () => {
    const outside = tempDir("spar-outside-");
    writeFileSync(join(outside, "secret.txt"), "secret");
    symlinkSync(outside, join(root, "link"));
    expect(String((await run("read_file", { path: "../x" })).output.error)).toContain("outside the workspace");
    expect(String((await run("read_file", { path: "link/secret.txt" })).output.error)).toContain("through a symlink");
    expect(String((await run("write_file", { path: "link/new.txt", content: "x" })).output.error)).toContain(
      "through a symlink",
    );
    expect(existsSync(join(outside, "new.txt"))).toBe(false);
    mkdirSync(join(root, "inside"), { recursive: true });
    expect((await run("write_file", { path: join(root, "inside/abs.txt"), content: "ok" })).isError).toBe(false);
  });
});

describe("fetch_url", () => {
  /** Called when a /slow request arrives. */
  let slowAsked: () => void = () => {};
  const server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    fetch: async (request): Promise<Response> => {
      const path = new URL(request.url).pathname;
      if (path === "/big") return new Response("z".repeat(400_000), { headers: { "content-type": "text/plain" } });
      if (path === "/slow") {
        slowAsked();
        // Time under test: a server far slower than the cancel.
        await Bun.sleep(5000);
        return new Response("late");
      }
      if (path === "/missing") return new Response("nope", { status: 404 });
      if (path === "/hop") return Response.redirect(`http://127.0.0.1:${server.port}/ok`, 302);
      if (path === "/to-metadata") return Response.redirect("http://169.254.169.254/latest/meta-data/", 302);
      if (path === "/loop") return Response.redirect(`http://127.0.0.1:${server.port}/loop`, 307);
      return Response.json({ hello: "world" });
    },
  });
  afterAll(() => server.stop(true));
  const url = (path: string) => `http://127.0.0.1:${server.port}${path}`;

  test("status, content type and body; 404 is an error result; the body is capped", async () => {
    expect(await run("fetch_url", { url: url("/ok") })).toEqual({
      output: {
        url: url("/ok"),
        status: 200,
        content_type: "application/json;charset=utf-8",
        body: '{"hello":"world"}',
      },
      isError: false,
    });
    expect(await run("fetch_url", { url: url("/missing") })).toMatchObject({
      output: { status: 404, body: "nope", error: "HTTP 404" },
      isError: true,
    });
    const big = await run("fetch_url", { url: url("/big") });
    expect(String(big.output.body).length).toBe(256 * 1024);
    expect(big.output.truncated).toBe(true);
  });

  test("redirects are followed; link-local and metadata hosts are refused, also behind a redirect", async () => {
    expect(await run("fetch_url", { url: url("/hop") })).toMatchObject({
      output: { url: url("/ok"), status: 200 },
      isError: false,
    });
    const direct = await run("fetch_url", { url: "http://169.254.169.254/latest/meta-data/" });
    expect(direct).toMatchObject({ isError: true });
    expect(String(direct.output.error)).toBe(
      "refused: 169.254.169.254 is a cloud metadata address in 169.254.0.0/16, not in the outbound allow list",
    );
    const hidden = await run("fetch_url", { url: url("/to-metadata") });
    expect(String(hidden.output.error)).toContain("a cloud metadata address");
    expect(String((await run("fetch_url", { url: "http://[fe80::1]/" })).output.error)).toContain(
      "refused: [fe80::1] is a link-local address in fe80::/10",
    );
    expect(String((await run("fetch_url", { url: url("/loop") })).output.error)).toContain("more than 5 redirects");
  });

  test("a cancel stops a slow fetch", async () => {
    const controller = new AbortController();
    const asked = new Promise<void>((resolve) => (slowAsked = resolve));
    const started = Date.now();
    const fetching = run("fetch_url", { url: url("/slow") }, controller.signal);
    // Cancelled once the server holds the request.
    await asked;
    controller.abort();
    const result = await fetching;
    expect(Date.now() - started).toBeLessThan(2000);
    expect(result).toMatchObject({ output: { error: "fetch failed: the turn was cancelled" }, isError: true });
  });

  test("only absolute http(s) URLs", async () => {
    expect((await run("fetch_url", { url: "file:///etc/passwd" })).output.error).toBe(
      "invalid input for fetch_url: url: url must be an absolute http or https URL",
    );
  });
});

describe("declarations", () => {
  test("bad input names the field; unknown and disabled tools are not available", async () => {
    expect((await run("bash", { command: 3 })).output.error).toBe(
      "invalid input for bash: command: command must be a string",
    );
    expect((await run("bash", { command: "true", timeout_seconds: 601 })).output.error).toBe(
      "invalid input for bash: timeout_seconds: timeout_seconds must be at most 600",
    );
    expect((await run("write_file", { path: "p" })).output.error).toStartWith("invalid input for write_file: content");
    expect((await run("nope", {})).output.error).toBe('tool "nope" is not available in this session');
    const disabled = await runBuiltin(
      { callId: "x", name: "bash", args: { command: "true" } },
      { root, disabled: new Set(["bash"]) },
      never,
    );
    expect(disabled.output.error).toContain("disabled by tools.disable");
  });

  test("every builtin declares the class the gate's table gives it (D62), a timeout, a cap, and a schema its validator agrees with", () => {
    expect(BUILTIN_TOOLS.map((tool) => [tool.name, tool.toolClass])).toEqual(
      BUILTIN_TOOLS.map((tool) => [tool.name, classifyTool(tool.name)]),
    );
    for (const tool of BUILTIN_TOOLS) {
      expect(tool.timeoutMs).toBeGreaterThan(0);
      expect(tool.capBytes).toBeGreaterThan(0);
      const schema = toolInputSchema(tool.input) as {
        type: string;
        properties: Record<string, unknown>;
        required: string[];
      };
      expect(schema.type).toBe("object");
      const entries = (tool.input as unknown as { entries: Record<string, { type: string }> }).entries;
      expect(Object.keys(schema.properties).sort()).toEqual(Object.keys(entries).sort());
      expect(schema.required.sort()).toEqual(
        Object.entries(entries)
          .filter(([, entry]) => entry.type !== "optional")
          .map(([name]) => name)
          .sort(),
      );
    }
    expect(builtinSpecs(new Set(["bash"])).map((spec) => spec.name)).toEqual([
      "read_file",
      "write_file",
      "edit_file",
      "delete_file",
      "fetch_url",
    ]);
  });
});

test("tools settings: root defaults to cwd, disable from a list or a comma string, unknown names and missing roots refused", () => {
  mkdirSync(join(root, "d"), { recursive: true });
  expect(resolveToolsSettings(new Map(), new Map(), root)).toEqual({
    ok: true,
    value: { root, disabled: [], outboundAllow: [], envPassthrough: [], digest: DEFAULT_DIGEST },
  });
  expect(resolveToolsSettings(new Map([["tools-disable", "bash, fetch_url"]]), new Map(), root)).toEqual({
    ok: true,
    value: { root, disabled: ["bash", "fetch_url"], outboundAllow: [], envPassthrough: [], digest: DEFAULT_DIGEST },
  });
  expect(
    resolveToolsSettings(
      new Map(),
      new Map<string, unknown>([
        ["tools.disable", ["write_file"]],
        ["tools.root", "d"],
      ]),
      root,
    ),
  ).toEqual({
    ok: true,
    value: {
      root: join(root, "d"),
      disabled: ["write_file"],
      outboundAllow: [],
      envPassthrough: [],
      digest: DEFAULT_DIGEST,
    },
  });
  expect(resolveToolsSettings(new Map(), new Map<string, unknown>([["tools.disable", ["bassh"]]]), root)).toMatchObject(
    { ok: false, error: expect.stringContaining('config key tools.disable: "bassh" is not a builtin tool') },
  );
  expect(resolveToolsSettings(new Map([["tools-root", "/no/such/dir"]]), new Map(), root)).toEqual({
    ok: false,
    error: "--tools-root: /no/such/dir does not exist",
  });
});

test("digest settings: structural over 16 KiB by default; flags win over tools.digest.*; bad values named", () => {
  const digest = (flags: [string, string | number][], config: [string, unknown][] = []) => {
    const resolved = resolveToolsSettings(new Map(flags), new Map(config), root);
    return resolved.ok ? resolved.value.digest : resolved.error;
  };
  expect(digest([])).toEqual(DEFAULT_DIGEST);
  expect(
    digest(
      [],
      [
        ["tools.digest.strategy", "agentic"],
        ["tools.digest.threshold_bytes", 4096],
      ],
    ),
  ).toEqual({
    strategy: "agentic",
    thresholdBytes: 4096,
  });
  expect(digest([["tools-digest", "passthrough"]], [["tools.digest.strategy", "agentic"]])).toEqual({
    strategy: "passthrough",
    thresholdBytes: 16384,
  });
  expect(digest([["tools-digest", "summary"]])).toBe("--tools-digest must be one of structural, agentic, passthrough");
  expect(digest([], [["tools.digest.threshold_bytes", 10]])).toBe(
    "config key tools.digest.threshold_bytes must be an integer from 1024 to 67108864",
  );
});

test("outbound allow list: a comma string or a list, canonical entries, a malformed entry refused by name", () => {
  expect(
    resolveToolsSettings(new Map([["outbound-allow", "10.0.0.0/8, internal.example,[::1]"]]), new Map(), root),
  ).toMatchObject({ ok: true, value: { outboundAllow: ["10.0.0.0/8", "internal.example", "::1/128"] } });
  expect(
    resolveToolsSettings(
      new Map(),
      new Map<string, unknown>([["outbound.allow", ["*.corp.example", "192.168.1.7"]]]),
      root,
    ),
  ).toMatchObject({ ok: true, value: { outboundAllow: ["*.corp.example", "192.168.1.7/32"] } });
  expect(
    resolveToolsSettings(new Map(), new Map<string, unknown>([["outbound.allow", ["10.0.0.0/8", "http://x"]]]), root),
  ).toEqual({
    ok: false,
    error:
      'config key outbound.allow: "http://x" is neither an IP address, a CIDR block nor a host name (a name may start with "*.")',
  });
  expect(resolveToolsSettings(new Map(), new Map<string, unknown>([["outbound.allow", 10]]), root)).toEqual({
    ok: false,
    error:
      "config key outbound.allow must be a list of addresses, CIDR blocks and host names (or one comma-separated string)",
  });
});

test("the turn loop offers the tool specs to the model on every call", async () => {
  const seen: ModelRequest["tools"][] = [];
  const model: Model = {
    specificationVersion: MODEL_SPEC_VERSION,
    name: "probe",
    provider: "test",
    async *stream(request) {
      seen.push(request.tools);
      yield { type: "text-delta", id: "t", text: "ok" };
      yield { type: "finish", finishReason: "stop", usage: ZERO_USAGE };
    },
  };
  const specs = builtinSpecs(new Set());
  const port = {
    part: () => {},
    commitResponse: async () => {},
    runTool: async () => ({ output: {}, isError: false }),
  };
  expect(await runTurnLoop(model, [{ role: "user", text: "hi" }], port, never, 3, specs)).toEqual({
    status: "completed",
  });
  expect(seen).toEqual([specs]);
});

test("the worker pool sends the catalog's specs with every run-turn message", async () => {
  const sent: unknown[] = [];
  const fake = {
    onmessage: null,
    onerror: null,
    postMessage: (message: unknown) => sent.push(message),
    terminate: () => {},
  };
  const specs = builtinSpecs(new Set(["fetch_url"]));
  const pool = new WorkerPool(1, { factory: () => fake as unknown as Worker, tools: () => specs });
  const turn = pool.runTurn(
    {
      turnId: "t1",
      model: { provider: "echo", name: "echo" },
      conversationKey: "k",
      conversation: [{ role: "user", text: "hi" }],
      maxSteps: 2,
    },
    { onPart: () => {}, onRequest: async () => ({}) },
  );
  // The job's messages after its first (the hello) go out together once its microtasks run (worker-port-transport.ts).
  await Promise.resolve();
  const message = sent.flat().find((item) => (item as { type: string }).type === "run-turn") as RunTurnMessage;
  expect(message.tools).toEqual(specs);
  await pool.close();
  expect(await turn.outcome).toEqual({ status: "canceled" });
});

test("tool environment: the default allow list and PREFIX_* patterns pass, the rest and the daemon's secrets do not", () => {
  const source = {
    PATH: "/bin",
    HOME: "/root",
    LC_ALL: "C",
    AWS_SECRET_ACCESS_KEY: "x",
    SPAR_TOKEN: "t",
    APP_ONE: "1",
    APP_TWO: "2",
    DATABASE_URL: "postgres://u:p@h/db",
  };
  expect(toolEnvironment(source, ["APP_*", "SPAR_TOKEN"], ["SPAR_TOKEN"])).toEqual({
    PATH: "/bin",
    HOME: "/root",
    LC_ALL: "C",
    APP_ONE: "1",
    APP_TWO: "2",
  });
  expect(resolveToolsSettings(new Map([["tools-env-passthrough", "GOOD, BAD-NAME"]]), new Map(), root)).toMatchObject({
    ok: false,
    error: expect.stringContaining('"BAD-NAME" is not a variable name'),
  });
  expect(
    resolveToolsSettings(new Map(), new Map<string, unknown>([["tools.env_passthrough", ["CI_*"]]]), root),
  ).toMatchObject({ ok: true, value: { envPassthrough: ["CI_*"] } });
});
