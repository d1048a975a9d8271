/**
 * One raw HTTP exchange over a TCP socket (node:net), for requests fetch will not send: no Host
 * (HTTP/1.0), a malformed Host. The request asks the server to close, and the answer is read to
 * the end; a chunked body is returned undecoded.
 */
import { connect } from "node:net";

export interface RawAnswer {
  status: number;
  headers: Record<string, string>;
  body: string;
}

export function rawHttp(port: number, requestHead: string, timeoutMs = 5_000): Promise<RawAnswer> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, "127.0.0.1");
    const chunks: Buffer[] = [];
    // Deadline: no complete answer by then is an error.
    const timer = setTimeout(() => {
      socket.destroy();
      reject(
        new Error(`no complete answer within ${timeoutMs} ms to ${JSON.stringify(requestHead.split("\r\n", 1)[0])}`),
      );
    }, timeoutMs);
    socket.on("connect", () => socket.write(requestHead));
    socket.on("data", (chunk: Buffer) => chunks.push(chunk));
    socket.on("error", (error) => {
      clearTimeout(timer);
      reject(error);
    });
    socket.on("close", () => {
      clearTimeout(timer);
      const text = Buffer.concat(chunks).toString("utf8");
      const split = text.indexOf("\r\n\r\n");
      const head = split < 0 ? text : text.slice(0, split);
      const [statusLine = "", ...lines] = head.split("\r\n");
      const headers: Record<string, string> = {};
      for (const line of lines) {
        const colon = line.indexOf(":");
        if (colon > 0) headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
      }
      resolve({ status: Number(statusLine.split(" ")[1] ?? 0), headers, body: split < 0 ? "" : text.slice(split + 4) });
    });
  });
}
