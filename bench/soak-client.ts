/**
 * Soak subscriber process for bench/soak.ts: holds raw SSE subscribers (test/support/raw-sse.ts)
 * for a list of sessions and checks every `agent` row arrives exactly once and in seq order.
 * IPC in: {type: "connect", port, sessions: string[], perSession} | {type: "report"} | {type: "close"}
 * IPC out: {type: "ready"} | {type: "report", frames, rows, gaps, duplicates, ended}
 */
import { type RawSubscriber, rawSubscribe } from "../test/support/raw-sse.ts";

interface Watched {
  subscriber: RawSubscriber;
  lastSeq: number;
}

const watched: Watched[] = [];
let frames = 0;
let rows = 0;
let gaps = 0;
let duplicates = 0;

function watch(port: number, session: string): Watched {
  const entry: Watched = { subscriber: rawSubscribe(port, `/sessions/${session}/events`), lastSeq: 0 };
  entry.subscriber.onFrame((frame) => {
    frames++;
    if (frame.event !== "agent") return;
    rows++;
    const seq = Number(frame.id);
    if (seq <= entry.lastSeq) duplicates++;
    else if (seq !== entry.lastSeq + 1) gaps++;
    entry.lastSeq = Math.max(entry.lastSeq, seq);
  });
  return entry;
}

process.on("message", async (message: { type: string; port?: number; sessions?: string[]; perSession?: number }) => {
  if (message.type === "connect" && message.port && message.sessions) {
    for (const session of message.sessions)
      for (let i = 0; i < (message.perSession ?? 1); i++) watched.push(watch(message.port, session));
    while (watched.some((entry) => entry.subscriber.frames.length < 3 && !entry.subscriber.isEnded))
      await Bun.sleep(20);
    process.send?.({ type: "ready" });
  } else if (message.type === "report") {
    process.send?.({
      type: "report",
      frames,
      rows,
      gaps,
      duplicates,
      ended: watched.filter((entry) => entry.subscriber.isEnded).length,
    });
  } else if (message.type === "close") {
    for (const entry of watched) entry.subscriber.close();
    process.exit(0);
  }
});
process.send?.({ type: "hello" });
