/**
 * The `capabilities` frame: first frame of every /events stream. Advertises the protocol
 * version, the typed frames this daemon emits, feature flags and the agent's identity.
 */
import { LIVE_FRAME_TYPES } from "../../core/events.ts";
import { PROTOCOL_VERSION } from "../../core/protocol.ts";
import type { AttachContext, Caller } from "./attach-context.ts";

export function capabilitiesFrame(context: AttachContext, caller: Caller, url: string): Record<string, unknown> {
  const daemon = context.daemon;
  return {
    protocol_version: PROTOCOL_VERSION,
    event_types: [...LIVE_FRAME_TYPES],
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
    slash_commands: ["compact"],
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
