/**
 * The daemon sink (docs/watcher-pipeline.md#sinks): `POST {daemon}/sessions` with no body but
 * `Content-Type: application/json` (daemons with the CSRF guard answer 415 without it),
 * `Authorization: Bearer <token>` and `X-Asserted-Caller: <owner>`; 201 with `sessionID`, then
 * `POST {daemon}/sessions/{sid}/inject` with the same headers (the owner's session is the owner's)
 * and `{"message": "<payload JSON>"}`. In shared mode every payload is an inject into
 * --target-session. One attempt per call, 10 s timeout; a failure says whether it is worth retrying
 * and carries the daemon's Retry-After (503 while it restarts), for the delivery queue that does
 * the retrying.
 */
import { sha256Hex } from "../../surfaces/http/caller-auth.ts";
import { tracedFetch } from "../../telemetry/client-spans.ts";
import type { AppendResult, IncidentSink, OpenResult } from "../core/sink.ts";
import { httpFailure, networkFailure } from "./sink-failure.ts";

export const SINK_TIMEOUT_MS = 10_000;

export interface DaemonSinkOptions {
  daemonUrl: string;
  token: string | undefined;
  owner?: string;
  /** Shared mode: every payload goes into this session. */
  targetSession?: string;
  timeoutMs?: number;
}

export class DaemonSink implements IncidentSink {
  readonly name = "daemon";
  readonly targetSession: string | undefined;

  constructor(private readonly options: DaemonSinkOptions) {
    this.targetSession = options.targetSession;
  }

  private headers(): Record<string, string> {
    const headers: Record<string, string> = { "content-type": "application/json" };
    if (this.options.token) headers.authorization = `Bearer ${this.options.token}`;
    if (this.options.owner) headers["x-asserted-caller"] = this.options.owner;
    return headers;
  }

  private async post(
    path: string,
    body: string | undefined,
    extraHeaders: Record<string, string> = {},
  ): Promise<Response> {
    return await tracedFetch(`${this.options.daemonUrl}${path}`, {
      method: "POST",
      headers: { ...this.headers(), ...extraHeaders },
      signal: AbortSignal.timeout(this.options.timeoutMs ?? SINK_TIMEOUT_MS),
      ...(body === undefined ? {} : { body }),
    });
  }

  /** Creates a session (per-incident mode); its id, or an error. */
  async createSession(): Promise<OpenResult> {
    try {
      const response = await this.post("/sessions", undefined);
      if (response.status !== 201) return await httpFailure("session create", response);
      const body = (await response.json().catch(() => ({}))) as { sessionID?: unknown };
      if (typeof body.sessionID !== "string" || body.sessionID === "")
        return { error: "session create: reply has no sessionID", permanent: true };
      return { id: body.sessionID };
    } catch (error) {
      return networkFailure("session create", error);
    }
  }

  async open(payload: object): Promise<OpenResult> {
    if (this.options.targetSession) {
      const appended = await this.append(this.options.targetSession, payload);
      return appended.ok ? { id: this.options.targetSession } : { ...appended, id: this.options.targetSession };
    }
    const created = await this.createSession();
    if (created.id === undefined) return created;
    const appended = await this.append(created.id, payload);
    return appended.ok ? created : { ...appended, id: created.id };
  }

  async append(id: string, payload: object): Promise<AppendResult> {
    try {
      const body = JSON.stringify({ message: JSON.stringify(payload) });
      // The payload's hash names it: a retry after a lost answer (or a watcher restart) is a no-op
      // in the daemon, which derives the prompt id from the session and this key.
      const response = await this.post(`/sessions/${encodeURIComponent(id)}/inject`, body, {
        "idempotency-key": sha256Hex(body),
      });
      if (response.status >= 200 && response.status < 300) {
        await response.arrayBuffer();
        return { ok: true };
      }
      return { ok: false, ...(await httpFailure("inject", response)) };
    } catch (error) {
      return { ok: false, ...networkFailure("inject", error) };
    }
  }
}
