/**
 * Wake-loop helpers for integration tests (D360-D363): the `agent/wake-loop` rows a collector
 * received, the prompt rows, and a session's /status.
 */
import type { Collector } from "./sse-client.ts";

export interface LoopRow {
  name: string;
  metadata: Record<string, unknown>;
}

type LegacyEvent = {
  Author: string;
  CustomMetadata: Record<string, unknown> | null;
  Content: { parts: Array<{ text?: string }> } | null;
};

const legacyEvents = (events: Collector): LegacyEvent[] =>
  events.frames.filter((frame) => frame.event === "agent").map((frame) => frame.data.event as LegacyEvent);

/** The wake-loop audit rows, in order (optionally one name only). */
export function loopRows(events: Collector, name?: string): LoopRow[] {
  return legacyEvents(events)
    .filter((event) => event.Author === "agent/wake-loop")
    .map((event) => {
      const { event: rowName, ...metadata } = event.CustomMetadata ?? {};
      return { name: String(rowName), metadata };
    })
    .filter((row) => name === undefined || row.name === name);
}

/** The text of every prompt row (`user`), in order. */
export function promptTexts(events: Collector): string[] {
  return legacyEvents(events)
    .filter((event) => event.Author === "user")
    .map((event) => event.Content?.parts.map((part) => part.text ?? "").join("") ?? "");
}

export async function sessionStatus(base: string): Promise<Record<string, unknown>> {
  return (await (await fetch(`${base}/status`)).json()) as Record<string, unknown>;
}
