/**
 * The `capabilities` frame: first frame of every /events stream. Advertises the protocol
 * version, the typed frames this daemon emits, feature flags and the agent's identity.
 */
import { PROTOCOL_VERSION } from "./attach-protocol.ts";
import type { AttachContext, Caller } from "./attach-context.ts";
import { SLASH_COMMAND_NAMES } from "./slash-routes.ts";
import { encodeFrame } from "./sse-frames.ts";
import { LIVE_EVENT_NAMES } from "./wire-frame.ts";

/** Encoded frames a cache holds before it starts over. */
const CAPABILITIES_CACHE_SIZE = 256;

export function capabilitiesFrame(context: AttachContext, caller: Caller, url: string): Record<string, unknown> {
  const daemon = context.daemon;
  return {
    protocol_version: PROTOCOL_VERSION,
    event_types: [...LIVE_EVENT_NAMES],
    server: `spar/${daemon.version}`,
    features: {
      multi_session: context.sessions.multiSession,
      cross_daemon: false,
      cost_ceiling: daemon.costCeiling,
      guardrails: true,
      observer_mode: false,
      interrupt: true,
      perms_stream: true,
      pause: true,
      ...(context.mcp ? { mcp: true } : {}),
    },
    // Exactly the POST /slash/<name> routes this listener serves (one table: slash-routes.ts).
    slash_commands: [...SLASH_COMMAND_NAMES],
    agent: {
      name: daemon.name,
      version: daemon.version,
      description: daemon.description,
      model: daemon.model,
      provider: daemon.provider,
      url,
    },
    caller_id: caller.identity,
  };
}

/**
 * The encoded capabilities frame per (caller, base URL): it changes with nothing else, and a
 * thousand dashboards attaching at once should not each build and encode it. One per listener.
 */
export class CapabilitiesCache {
  readonly #encoded = new Map<string, Uint8Array>();

  encoded(context: AttachContext, caller: Caller, baseUrl: string): Uint8Array {
    const key = `${caller.identity}\n${baseUrl}`;
    const cached = this.#encoded.get(key);
    if (cached) return cached;
    if (this.#encoded.size >= CAPABILITIES_CACHE_SIZE) this.#encoded.clear();
    const bytes = encodeFrame("capabilities", capabilitiesFrame(context, caller, baseUrl));
    this.#encoded.set(key, bytes);
    return bytes;
  }
}
