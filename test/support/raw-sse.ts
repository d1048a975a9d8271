/**
 * A raw SSE client over one TCP socket (node:net): no fetch connection limits, so a test can
 * hold a thousand subscribers. Decodes chunked transfer encoding and SSE frames; can pause
 * reading to play a subscriber that stopped consuming.
 */
import { type Socket, connect } from "node:net";

export interface RawFrame {
  event: string;
  id: string | undefined;
  data: string;
}

export interface RawSubscriber {
  readonly frames: RawFrame[];
  /** Comment blocks (`: ping` heartbeats) received. */
  readonly comments: number;
  readonly status: Promise<number>;
  /** Resolves when the server ends the stream or the socket closes. */
  readonly ended: Promise<void>;
  readonly isEnded: boolean;
  pause(): void;
  resume(): void;
  close(): void;
  onFrame(listener: (frame: RawFrame) => void): void;
}

export function rawSubscribe(port: number, path: string, headers: Record<string, string> = {}): RawSubscriber {
  const frames: RawFrame[] = [];
  const listeners: Array<(frame: RawFrame) => void> = [];
  let buffer = Buffer.alloc(0);
  let headerDone = false;
  let body = "";
  let pendingChunk = Buffer.alloc(0);
  let ended = false;
  let comments = 0;
  let resolveStatus!: (status: number) => void;
  let resolveEnded!: () => void;
  const status = new Promise<number>((resolve) => (resolveStatus = resolve));
  const endedPromise = new Promise<void>((resolve) => (resolveEnded = resolve));
  const socket: Socket = connect({ host: "127.0.0.1", port });
  const extra = Object.entries(headers)
    .map(([name, value]) => `${name}: ${value}\r\n`)
    .join("");
  socket.on("connect", () =>
    socket.write(`GET ${path} HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nAccept: text/event-stream\r\n${extra}\r\n`),
  );

  const parseFrames = () => {
    for (let end = body.indexOf("\n\n"); end !== -1; end = body.indexOf("\n\n")) {
      const block = body.slice(0, end);
      body = body.slice(end + 2);
      const frame: RawFrame = { event: "message", id: undefined, data: "" };
      let isComment = true;
      for (const line of block.split("\n")) {
        if (line.startsWith(":")) continue;
        isComment = false;
        const colon = line.indexOf(":");
        const field = colon === -1 ? line : line.slice(0, colon);
        const value = colon === -1 ? "" : line.slice(colon + 1).replace(/^ /, "");
        if (field === "event") frame.event = value;
        else if (field === "id") frame.id = value;
        else if (field === "data") frame.data += value;
      }
      if (isComment) {
        comments++;
        continue;
      }
      frames.push(frame);
      for (const listener of listeners) listener(frame);
    }
  };

  const decodeChunks = () => {
    for (;;) {
      const lineEnd = pendingChunk.indexOf("\r\n");
      if (lineEnd === -1) return;
      const size = Number.parseInt(pendingChunk.subarray(0, lineEnd).toString("latin1"), 16);
      if (size === 0) return finish();
      if (pendingChunk.length < lineEnd + 2 + size + 2) return;
      body += pendingChunk.subarray(lineEnd + 2, lineEnd + 2 + size).toString("utf8");
      pendingChunk = pendingChunk.subarray(lineEnd + 2 + size + 2);
      parseFrames();
    }
  };

  const finish = () => {
    if (ended) return;
    ended = true;
    resolveStatus(0);
    resolveEnded();
    socket.destroy();
  };

  socket.on("data", (data: Buffer) => {
    if (!headerDone) {
      buffer = Buffer.concat([buffer, data]);
      const headerEnd = buffer.indexOf("\r\n\r\n");
      if (headerEnd === -1) return;
      const head = buffer.subarray(0, headerEnd).toString("latin1");
      resolveStatus(Number(head.split(" ")[1]));
      headerDone = true;
      pendingChunk = buffer.subarray(headerEnd + 4);
      buffer = Buffer.alloc(0);
      if (!/transfer-encoding:\s*chunked/i.test(head)) {
        body += pendingChunk.toString("utf8");
        pendingChunk = Buffer.alloc(0);
        parseFrames();
        return;
      }
      decodeChunks();
      return;
    }
    pendingChunk = Buffer.concat([pendingChunk, data]);
    decodeChunks();
  });
  socket.on("close", finish);
  socket.on("error", finish);

  return {
    frames,
    get comments() {
      return comments;
    },
    status,
    ended: endedPromise,
    get isEnded() {
      return ended;
    },
    pause: () => socket.pause(),
    resume: () => socket.resume(),
    close: () => finish(),
    onFrame: (listener) => listeners.push(listener),
  };
}
