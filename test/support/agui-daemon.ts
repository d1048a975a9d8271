/**
 * AG-UI test helpers: the gated workload (gated-workload.ts) exposed over AG-UI, a svc daemon with
 * `--agui-listen` (its AG-UI port read back from the log), HS256 tokens signed with the listener's
 * secret, and a run of the real `@ag-ui/client` HttpAgent that records every event it accepted
 * (its own schema and ordering checks judge the stream).
 */
import { appendFileSync } from "node:fs";
import { join } from "node:path";
import { HttpAgent, type BaseEvent, type Interrupt, type RunAgentParameters } from "@ag-ui/client";
import type { Daemon } from "./daemon.ts";
import { signJwt } from "./jwt.ts";
import type { DaemonScope } from "./daemon-scope.ts";
import { type GatedWorkload, gatedDaemonOptions, gatedWorkload } from "./gated-workload.ts";

export const AGUI_SECRET = "agui-s3cret";

export interface AguiWorkloadOptions {
  sessionModel?: "per_thread" | "per_run";
  scopes?: string[];
}

/** The gated workload with an `agui:` block (endpoint /agui/gated unless told). */
export function aguiWorkload(options: AguiWorkloadOptions = {}): GatedWorkload {
  const workload = gatedWorkload();
  appendFileSync(
    join(workload.directory, "workload.yaml"),
    [
      "agui:",
      "  expose: true",
      "  description: The gated worker over AG-UI.",
      `  session_model: ${options.sessionModel ?? "per_thread"}`,
      "  auth:",
      `    scopes: [${(options.scopes ?? []).join(", ")}]`,
      "",
    ].join("\n"),
  );
  return workload;
}

export interface AguiDaemon {
  daemon: Daemon;
  /** `http://127.0.0.1:<agui port>`. */
  base: string;
  /** The run endpoint's URL. */
  url: string;
}

/** A svc daemon running `workload` on the scripted `lines`, with the AG-UI listener on port 0. */
export async function startAgui(
  scope: DaemonScope,
  workload: GatedWorkload,
  lines: readonly unknown[],
  extra: { env?: Record<string, string>; args?: string[]; sessionDb?: string } = {},
): Promise<AguiDaemon> {
  const daemon = await scope.start(
    gatedDaemonOptions(workload, lines, {
      ...(extra.sessionDb === undefined ? {} : { sessionDb: extra.sessionDb }),
      args: ["--agui-listen=127.0.0.1:0", ...(extra.args ?? [])],
      env: extra.env ?? {},
    }),
  );
  const match = /AG-UI listener at (http:\/\/[^\s]+)/.exec(daemon.log());
  if (!match?.[1]) throw new Error(`no AG-UI listener line in the log:\n${daemon.log()}`);
  const base = match[1];
  return { daemon, base, url: `${base}/agui/gated` };
}

/** An HS256 JWT signed with `secret` (an hour's `exp` unless the claims name one; jwt.ts). */
export function signedToken(claims: Record<string, unknown>, secret = AGUI_SECRET): string {
  return signJwt(claims, secret);
}

export interface AgentRun {
  events: BaseEvent[];
  interrupts: Interrupt[] | undefined;
  outcome: string | undefined;
  runError: { message: string; code?: string } | undefined;
}

/** One `runAgent` of `agent`, recording what it accepted. */
export async function runOnce(agent: HttpAgent, parameters: RunAgentParameters = {}): Promise<AgentRun> {
  const run: AgentRun = { events: [], interrupts: undefined, outcome: undefined, runError: undefined };
  await agent.runAgent(parameters, {
    onEvent: ({ event }) => {
      run.events.push(event);
    },
    onRunFinishedEvent: (finished) => {
      run.outcome = finished.outcome;
      if (finished.outcome === "interrupt") run.interrupts = finished.interrupts;
    },
    onRunErrorEvent: ({ event }) => {
      run.runError = { message: event.message, ...(event.code === undefined ? {} : { code: event.code }) };
    },
  });
  return run;
}

/** A thread's agent with one user message added. */
export function agentSaying(url: string, threadId: string, text: string, headers: Record<string, string> = {}) {
  const agent = new HttpAgent({ url, threadId, headers });
  agent.addMessage({ id: crypto.randomUUID(), role: "user", content: text });
  return agent;
}

export const types = (run: AgentRun): string[] => run.events.map((event) => String(event.type));
