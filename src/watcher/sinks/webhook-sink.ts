/**
 * The webhook sink v1 (docs/watcher-pipeline.md#sinks): `POST {sink}/incidents` opens an incident
 * with the bare schema-v1 payload as the body (2xx, `{"id": "..."}`); `POST
 * {sink}/incidents/{id}/events` appends follow-ups. A receiver that answers without an id gets a
 * local one (`local-` + 32 hex). Bearer token optional. One attempt per call, 10 s timeout; a
 * failure says whether it is worth retrying (the delivery queue retries).
 */
import { tracedFetch } from "../../telemetry/client-spans.ts";
import type { AppendResult, IncidentSink, OpenResult } from "../core/sink.ts";
import { SINK_TIMEOUT_MS } from "./daemon-sink.ts";
import { httpFailure, networkFailure } from "./sink-failure.ts";

export interface WebhookSinkOptions {
  sinkUrl: string;
  token: string | undefined;
  timeoutMs?: number;
  /** Told once per process when ids start being generated locally. */
  onLocalId?: () => void;
}

function localId(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(16));
  return `local-${[...bytes].map((byte) => byte.toString(16).padStart(2, "0")).join("")}`;
}

export class WebhookSink implements IncidentSink {
  readonly name = "webhook";
  private toldLocal = false;

  constructor(private readonly options: WebhookSinkOptions) {}

  private async post(path: string, payload: object): Promise<Response> {
    const headers: Record<string, string> = { "content-type": "application/json" };
    if (this.options.token) headers.authorization = `Bearer ${this.options.token}`;
    return await tracedFetch(`${this.options.sinkUrl}${path}`, {
      method: "POST",
      headers,
      body: JSON.stringify(payload),
      signal: AbortSignal.timeout(this.options.timeoutMs ?? SINK_TIMEOUT_MS),
    });
  }

  async open(payload: object): Promise<OpenResult> {
    try {
      const response = await this.post("/incidents", payload);
      if (response.status < 200 || response.status > 299) return await httpFailure("open incident", response);
      const text = await response.text();
      let id: unknown;
      try {
        id = (JSON.parse(text) as { id?: unknown }).id;
      } catch {
        id = undefined;
      }
      if (typeof id === "string" && id !== "") return { id };
      if (!this.toldLocal) {
        this.toldLocal = true;
        this.options.onLocalId?.();
      }
      return { id: localId() };
    } catch (error) {
      return networkFailure("open incident", error);
    }
  }

  async append(id: string, payload: object): Promise<AppendResult> {
    try {
      const response = await this.post(`/incidents/${encodeURIComponent(id)}/events`, payload);
      if (response.status >= 200 && response.status < 300) {
        await response.arrayBuffer();
        return { ok: true };
      }
      return { ok: false, ...(await httpFailure("append", response)) };
    } catch (error) {
      return { ok: false, ...networkFailure("append", error) };
    }
  }
}
