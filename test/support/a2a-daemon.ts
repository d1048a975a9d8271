/**
 * A svc daemon serving the gated workload (gated-workload.ts) over A2A: the bundle gains an `a2a`
 * block (exposed, optional scopes), the daemon `--a2a-listen=127.0.0.1:0`, and the A2A port is read
 * back from its startup line. Plus a JWT signer for the protocol bearer (HS256 over the secret).
 */
import { appendFileSync, mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { type Daemon, tempDir, waitFor } from "./daemon.ts";
import { signJwt as signHs256 } from "./jwt.ts";
import type { DaemonScope } from "./daemon-scope.ts";
import { type GatedWorkload, gatedDaemonOptions, gatedWorkload } from "./gated-workload.ts";

export const A2A_SECRET = "a2a-s3cret-for-tests";

export interface A2aDaemon {
  daemon: Daemon;
  /** `http://127.0.0.1:<a2a port>` */
  a2aUrl: string;
  workload: GatedWorkload;
}

export interface A2aDaemonOptions {
  scopes?: string[];
  /** SVC_A2A_TOKEN (default A2A_SECRET; null: none). */
  token?: string | null;
  env?: Record<string, string>;
  sessionDb?: string;
  workload?: GatedWorkload;
  /** SVC_INJECT_TOKEN set (default true). */
  injectToken?: boolean;
}

/** Write the gated workload with `a2a.expose: true` (and `scopes`). */
export function a2aWorkload(scopes: string[] = []): GatedWorkload {
  const workload = gatedWorkload();
  appendFileSync(
    join(workload.directory, "workload.yaml"),
    ["a2a:", "  expose: true", "  skill_name: Gated change", "  auth:", `    scopes: [${scopes.join(", ")}]`, ""].join(
      "\n",
    ),
  );
  return workload;
}

export async function startA2aDaemon(
  scope: DaemonScope,
  lines: readonly unknown[],
  options: A2aDaemonOptions = {},
): Promise<A2aDaemon> {
  const workload = options.workload ?? a2aWorkload(options.scopes);
  const token = options.token === undefined ? A2A_SECRET : options.token;
  const daemon = await scope.start(
    gatedDaemonOptions(workload, lines, {
      ...(options.sessionDb === undefined ? {} : { sessionDb: options.sessionDb }),
      args: ["--a2a-listen=127.0.0.1:0"],
      token: options.injectToken ?? true,
      env: { ...(token === null ? {} : { SVC_A2A_TOKEN: token }), ...options.env },
    }),
  );
  const match = /A2A listener at (http:\/\/[^\s]+)/.exec(daemon.log());
  if (!match?.[1]) throw new Error(`no A2A listener line in:\n${daemon.log()}`);
  return { daemon, a2aUrl: match[1], workload };
}

/** An HS256 JWT signed with `secret` (an hour's `exp` unless the claims name one; jwt.ts). */
export function signJwt(claims: Record<string, unknown>, secret = A2A_SECRET): string {
  return signHs256(claims, secret);
}

/** POST a JSON-RPC call to `/a2a`; answers the HTTP status, headers and parsed body. */
export async function rpc(url: string, method: string, params: unknown, token: string | null = A2A_SECRET) {
  const response = await fetch(`${url}/a2a`, {
    method: "POST",
    headers: {
      "content-type": "application/json",
      ...(token === null ? {} : { authorization: `Bearer ${token}` }),
    },
    body: JSON.stringify({ jsonrpc: "2.0", id: 1, method, params }),
  });
  return { status: response.status, headers: response.headers, body: (await response.json()) as Record<string, any> };
}

export function textMessage(text: string, extra: Record<string, unknown> = {}) {
  return { kind: "message", messageId: crypto.randomUUID(), role: "user", parts: [{ kind: "text", text }], ...extra };
}

/** A fetch that adds `Authorization: Bearer <token>` to every request. */
export function bearerFetch(token: string): typeof fetch {
  const authed = (input: string | URL | Request, init?: RequestInit) => {
    const headers = new Headers(init?.headers);
    headers.set("authorization", `Bearer ${token}`);
    return fetch(input, { ...init, headers });
  };
  return authed as typeof fetch;
}

/** A workload of one tool-less specialist exposed over A2A (no tool server). */
export function plainA2aWorkload(): GatedWorkload {
  const directory = tempDir("spar-a2a-plain-");
  mkdirSync(join(directory, "specialists"));
  writeFileSync(
    join(directory, "workload.yaml"),
    ["name: plain", "description: Answers.", "specialists:", "  - helper", "a2a:", "  expose: true", ""].join("\n"),
  );
  writeFileSync(
    join(directory, "specialists", "helper.tmpl"),
    ["---", "description: Answers.", "tools:", "  mcp: []", "---", "Answer in one sentence.", ""].join("\n"),
  );
  return { directory, countDir: directory };
}

/** A raw `message/stream` whose task is working: its id, and `rest()` reading the stream to its end (all text). */
export async function streamingTask(a2aUrl: string, message: string) {
  const response = await fetch(`${a2aUrl}/a2a`, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: `Bearer ${A2A_SECRET}` },
    body: JSON.stringify({
      jsonrpc: "2.0",
      id: 5,
      method: "message/stream",
      params: { message: textMessage(message) },
    }),
  });
  const reader = response.body?.getReader();
  if (!reader) throw new Error("no stream");
  const decoder = new TextDecoder();
  let text = decoder.decode((await reader.read()).value);
  const id = /"id":"(a2a-[0-9a-f]{32})"/.exec(text)?.[1] ?? "";
  await waitFor(
    async () => ((await rpc(a2aUrl, "tasks/get", { id })).body.result.status.state === "working" ? true : undefined),
    10_000,
    `task ${id} working`,
  );
  const rest = async (): Promise<string> => {
    for (;;) {
      const chunk = await reader.read();
      if (chunk.done) return text;
      text += decoder.decode(chunk.value);
    }
  };
  return { id, rest };
}

/** The `result` of each `data:` frame of a stream's text. */
export function streamResults(text: string): Array<Record<string, unknown>> {
  return text
    .split("\n\n")
    .filter((frame) => frame.startsWith("data: "))
    .map((frame) => JSON.parse(frame.slice(6)).result);
}
