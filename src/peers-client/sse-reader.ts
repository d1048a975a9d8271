/**
 * The Server-Sent Events frames of an attach `/events` stream, as a client reads them: a pure
 * parser (`SseParser`: text in, `{event, data}` frames out, comments and `id:` lines skipped,
 * one line capped so a peer cannot grow the buffer without end) and `readFrames`, which feeds it
 * a response body. Owns no HTTP: peer-attach-client.ts opens the stream.
 */

export interface SseFrame {
  event: string;
  /** The frame's `data:` lines joined by newlines (JSON on the attach wire). */
  data: string;
}

/** The longest line kept (an attach row is at most a few MiB: a tool result's digest and its metadata). */
export const MAX_SSE_LINE = 8 * 1024 * 1024;

export class SseParser {
  #buffer = "";
  #event = "";
  #data: string[] = [];
  readonly #maxLine: number;

  constructor(maxLine = MAX_SSE_LINE) {
    this.#maxLine = maxLine;
  }

  /** Feed decoded text; returns the frames it completed. Throws when one line outgrows the cap. */
  push(text: string): SseFrame[] {
    this.#buffer += text;
    const frames: SseFrame[] = [];
    for (;;) {
      const end = this.#buffer.indexOf("\n");
      if (end < 0) break;
      const line = this.#buffer.slice(0, end).replace(/\r$/, "");
      this.#buffer = this.#buffer.slice(end + 1);
      const frame = this.#line(line);
      if (frame !== undefined) frames.push(frame);
    }
    if (this.#buffer.length > this.#maxLine)
      throw new Error(`an event-stream line is longer than ${this.#maxLine} bytes`);
    return frames;
  }

  #line(line: string): SseFrame | undefined {
    if (line === "") {
      const frame =
        this.#data.length > 0 ? { event: this.#event || "message", data: this.#data.join("\n") } : undefined;
      this.#event = "";
      this.#data = [];
      return frame;
    }
    if (line.startsWith(":")) return undefined;
    const colon = line.indexOf(":");
    const field = colon < 0 ? line : line.slice(0, colon);
    const value = colon < 0 ? "" : line.slice(colon + 1).replace(/^ /, "");
    if (field === "event") this.#event = value;
    else if (field === "data") this.#data.push(value);
    return undefined;
  }
}

/** Every frame of a response body, in order; ends with the body. The reader is released on exit. */
export async function* readFrames(body: ReadableStream<Uint8Array>): AsyncGenerator<SseFrame> {
  const reader = body.getReader();
  const decoder = new TextDecoder();
  const parser = new SseParser();
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) return;
      for (const frame of parser.push(decoder.decode(value, { stream: true }))) yield frame;
    }
  } finally {
    await reader.cancel().catch(() => {});
  }
}
