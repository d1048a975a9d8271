/**
 * A real SSE client for tests: the `eventsource` npm package, collecting every frame with its
 * event name, id and parsed data.
 */
import { EventSource } from "eventsource";

export interface Frame {
  event: string;
  id: string | undefined;
  data: Record<string, unknown>;
}

export const FRAME_NAMES = [
  "prompt",
  "capabilities",
  "agent",
  "inbox",
  "status-update",
  "usage-update",
  "turn-complete",
  "turn-error",
  "wake",
  "pause",
  "guardrail-trip",
  "text-delta",
];

export interface Collector {
  readonly frames: Frame[];
  readonly source: EventSource;
  /** Resolves with the first frame (from `fromIndex` on) that matches. */
  waitFor(match: (frame: Frame) => boolean, timeoutMs?: number, fromIndex?: number): Promise<Frame>;
  close(): void;
}

export function collect(url: string, init?: { headers?: Record<string, string> }): Collector {
  const frames: Frame[] = [];
  const listeners = new Set<() => void>();
  const source = new EventSource(
    url,
    init?.headers
      ? {
          fetch: (input, options) =>
            fetch(input, { ...options, headers: { ...(options?.headers as Record<string, string>), ...init.headers } }),
        }
      : undefined,
  );
  for (const name of FRAME_NAMES) {
    source.addEventListener(name, (event) => {
      frames.push({
        event: name,
        id: event.lastEventId || undefined,
        data: JSON.parse(event.data) as Record<string, unknown>,
      });
      for (const listener of listeners) listener();
    });
  }
  return {
    frames,
    source,
    waitFor(match, timeoutMs = 10_000, fromIndex = 0) {
      return new Promise((resolve, reject) => {
        const check = () => {
          const found = frames.slice(fromIndex).find(match);
          if (found) {
            listeners.delete(check);
            clearTimeout(timer);
            resolve(found);
          }
        };
        // Deadline: no matching frame by then is an error naming the frames seen.
        const timer = setTimeout(() => {
          listeners.delete(check);
          reject(
            new Error(`no matching frame within ${timeoutMs} ms; got ${frames.map((frame) => frame.event).join(",")}`),
          );
        }, timeoutMs);
        listeners.add(check);
        check();
      });
    },
    close: () => source.close(),
  };
}
