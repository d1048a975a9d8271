/**
 * A gated svc workload for tests, after the original's `gated` fixture (reference 1.10): a
 * coordinator with one specialist `worker` whose tools are the counting MCP server's
 * (test/fixtures/mcp/counting-server.ts) `read_status` (marked read-only) and `apply_change`
 * (mutating, so gated), a scripted model, and helpers to inject, resume and read the store.
 */
import { SqliteReader } from "../../src/store/sqlite/read-only-reader.ts";
import type { SessionKey } from "../../src/core/session-key.ts";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { SqliteStore } from "../../src/store/sqlite/sqlite-store.ts";
import type { CommittedRow } from "../../src/core/events.ts";
import { countingServerEntry } from "../fixtures/mcp/counting.ts";
import type { Daemon, DaemonOptions } from "./daemon.ts";
import { tempDir } from "./daemon.ts";
import { writeScript } from "./scripted.ts";

export const APPLY = "blocker__apply_change";
export const READ = "blocker__read_status";
export const TOKEN = "gate-s3cret";
export const AUTH = { authorization: `Bearer ${TOKEN}` };

export interface GatedWorkload {
  directory: string;
  /** Where the counting server records its executions. */
  countDir: string;
}

export interface GatedWorkloadOptions {
  onMutation?: string;
  precondition?: boolean;
  changeSetTtl?: string;
  /** Extra environment of the counting server (the bench's `COUNT_TIMESTAMPS=1`). */
  serverEnv?: Record<string, string>;
}

/** Write the workload directory (and its counting server's directory) in a fresh temp dir. */
export function gatedWorkload(options: GatedWorkloadOptions = {}): GatedWorkload {
  return writeGatedWorkload(tempDir("spar-gated-"), options);
}

/** Write the workload into `directory`: workload.yaml, mcp.json, specialists/worker.tmpl, counts/. */
export function writeGatedWorkload(directory: string, options: GatedWorkloadOptions = {}): GatedWorkload {
  const countDir = join(directory, "counts");
  mkdirSync(countDir);
  mkdirSync(join(directory, "specialists"));
  writeFileSync(
    join(directory, "workload.yaml"),
    [
      "name: gated",
      "description: One worker that can read status and apply a change; writes need approval.",
      "tool_catalog:",
      "  mcp:",
      "    - server: blocker",
      "  tools:",
      "    - name: read_status",
      "      mutating: false",
      "    - name: apply_change",
      "      mutating: true",
      ...(options.precondition
        ? ["      precondition:", "        read: read_status", "        fields: [output.state]"]
        : []),
      "specialists:",
      "  - worker",
      "hitl:",
      `  on_mutation: ${options.onMutation ?? "require_approval"}`,
      `  change_set_ttl: ${options.changeSetTtl ?? "10m"}`,
      "",
    ].join("\n"),
  );
  writeFileSync(
    join(directory, "mcp.json"),
    JSON.stringify({ version: 1, servers: { blocker: countingServerEntry(countDir, options.serverEnv) } }),
  );
  writeFileSync(
    join(directory, "specialists", "worker.tmpl"),
    [
      "---",
      "description: Reads status and, when asked, applies the change.",
      "mode: Task",
      "capability: change_executor",
      "tools:",
      "  mcp:",
      "    - server: blocker",
      "      tools: [read_status, apply_change]",
      "---",
      "Do what the incident asks, then call finish_task with a short result.",
      "",
    ].join("\n"),
  );
  return { directory, countDir };
}

/** The options of a svc daemon running the workload on a scripted model. */
export function gatedDaemonOptions(
  workload: GatedWorkload,
  lines: readonly unknown[],
  extra: { sessionDb?: string; token?: boolean; env?: Record<string, string>; args?: string[] } = {},
): DaemonOptions {
  return {
    role: "svc",
    ...(extra.sessionDb === undefined ? {} : { sessionDb: extra.sessionDb }),
    args: [`--workload=${workload.directory}`, "--model=scripted", ...(extra.args ?? [])],
    env: {
      SVC_SCRIPT: writeScript(lines),
      ...(extra.token === false ? {} : { SVC_INJECT_TOKEN: TOKEN }),
      ...extra.env,
    },
  };
}

export async function postTo(daemon: Daemon, path: string, body: unknown, headers: Record<string, string> = AUTH) {
  const response = await fetch(`${daemon.baseUrl}${path}`, {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body: JSON.stringify(body),
  });
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
}

export interface Pending {
  interrupt_id: string;
  agent: string;
  message: string;
}

/** Inject an incident and return the answer (its pending questions typed). */
export async function injectIncident(daemon: Daemon, uid: string, headers: Record<string, string> = AUTH) {
  const answer = await postTo(daemon, "/inject", { uid, reason: "ScaleUp", name: "web" }, headers);
  return { ...answer, pending: (answer.body.pending ?? []) as Pending[] };
}

export function resume(
  daemon: Daemon,
  sessionId: string,
  interruptId: string,
  response: unknown,
  headers: Record<string, string> = AUTH,
) {
  return postTo(daemon, "/resume", { session_id: sessionId, interrupt_id: interruptId, response }, headers);
}

/**
 * Read a running daemon's store beside it, read-only (no lock taken): its session ids, and the
 * rows of the sessions asked.
 */
export async function readLive<T>(
  sessionDb: string,
  read: (view: { sessionIds(): Promise<string[]>; rows(key: SessionKey): Promise<CommittedRow[]> }) => Promise<T>,
): Promise<T> {
  const reader = SqliteReader.open(sessionDb);
  try {
    return await read({
      sessionIds: async () => (await reader.listSessions()).map((session) => session.id),
      rows: async (key) => (await reader.readRows([key]))[0] ?? [],
    });
  } finally {
    await reader.close();
  }
}

/** A session's rows read from the store once the daemon has stopped (`app` svc, or svc.<specialist>). */
export async function storedRows(sessionDb: string, app: string, id: string): Promise<CommittedRow[]> {
  const store = SqliteStore.open(sessionDb);
  try {
    return await store.read({ app, id }, 0, 10_000);
  } finally {
    await store.close();
  }
}
