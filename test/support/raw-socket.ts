/**
 * Raw bytes to a listener over one TCP socket (node:net), for requests no HTTP client sends:
 * smuggling shapes (Content-Length with Transfer-Encoding, duplicate lengths, folded or bare-LF
 * headers), pipelined requests, partial heads. Reads until the server closes the socket or sends
 * nothing for `settleMs`, then splits what came back into responses.
 */
import { connect } from "node:net";

export interface RawResponse {
  status: number;
  headers: Record<string, string>;
  body: string;
}

export interface RawExchange {
  /** Everything the server sent, as latin-1 text. */
  text: string;
  responses: RawResponse[];
  statuses: number[];
  /** The server closed the connection (rather than the exchange settling with it open). */
  closedByServer: boolean;
}

export interface RawExchangeOptions {
  /** Stop reading after this long without new bytes (keep-alive answers). Default 400 ms. */
  settleMs?: number;
  /** Give up after this long in all. Default 5 s. */
  timeoutMs?: number;
}

function parseHead(head: string): Omit<RawResponse, "body"> {
  const [statusLine = "", ...lines] = head.split("\r\n");
  const headers: Record<string, string> = {};
  for (const line of lines) {
    const colon = line.indexOf(":");
    if (colon > 0) headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
  }
  return { status: Number(statusLine.split(" ")[1] ?? 0), headers };
}

/** Split a byte stream of HTTP/1.1 responses (Content-Length, chunked, or read-to-close bodies). */
export function splitResponses(text: string): RawResponse[] {
  const responses: RawResponse[] = [];
  let rest = text;
  while (rest.startsWith("HTTP/")) {
    const split = rest.indexOf("\r\n\r\n");
    if (split < 0) break;
    const head = parseHead(rest.slice(0, split));
    rest = rest.slice(split + 4);
    const length = head.headers["content-length"];
    if (length !== undefined) {
      responses.push({ ...head, body: rest.slice(0, Number(length)) });
      rest = rest.slice(Number(length));
      continue;
    }
    if (/chunked/i.test(head.headers["transfer-encoding"] ?? "")) {
      let body = "";
      for (;;) {
        const lineEnd = rest.indexOf("\r\n");
        if (lineEnd < 0) break;
        const size = Number.parseInt(rest.slice(0, lineEnd), 16);
        if (!(size > 0)) {
          rest = rest.slice(lineEnd + 4);
          break;
        }
        body += rest.slice(lineEnd + 2, lineEnd + 2 + size);
        rest = rest.slice(lineEnd + 2 + size + 2);
      }
      responses.push({ ...head, body });
      continue;
    }
    responses.push({ ...head, body: rest });
    rest = "";
  }
  return responses;
}

export function rawExchange(
  port: number,
  request: string | Uint8Array,
  options: RawExchangeOptions = {},
): Promise<RawExchange> {
  const settleMs = options.settleMs ?? 400;
  return new Promise((resolve, reject) => {
    const socket = connect(port, "127.0.0.1");
    const chunks: Buffer[] = [];
    let closedByServer = false;
    let settle: ReturnType<typeof setTimeout> | undefined;
    const finish = () => {
      clearTimeout(settle);
      clearTimeout(deadline);
      socket.destroy();
      const text = Buffer.concat(chunks).toString("latin1");
      const responses = splitResponses(text);
      resolve({ text, responses, statuses: responses.map((response) => response.status), closedByServer });
    };
    const arm = () => {
      clearTimeout(settle);
      // Deadline: the exchange is over once the server has been quiet for settleMs.
      settle = setTimeout(finish, settleMs);
    };
    const deadline = setTimeout(finish, options.timeoutMs ?? 5_000); // deadline: the exchange's bound
    socket.on("connect", () => {
      socket.write(typeof request === "string" ? Buffer.from(request, "latin1") : request);
      arm();
    });
    socket.on("data", (chunk: Buffer) => {
      chunks.push(chunk);
      arm();
    });
    socket.on("end", () => {
      closedByServer = true;
    });
    socket.on("close", () => {
      closedByServer = true;
      finish();
    });
    socket.on("error", (error: NodeJS.ErrnoException) => {
      if (error.code === "ECONNRESET" || error.code === "EPIPE") {
        closedByServer = true;
        finish();
        return;
      }
      clearTimeout(settle);
      clearTimeout(deadline);
      reject(error);
    });
  });
}
