/**
 * The mTLS front of a listener. Bun.serve enforces client certificates at the handshake but
 * does not hand the verified peer certificate to request handlers (oven-sh/bun#14097), and
 * node:https under Bun gives handlers a plain socket without it. So with a client CA the public
 * port is a node:tls server: it verifies the client and reads the subject, then a node:http
 * parser is fed that very TLS socket (`emit("connection")`) and each request it reads is handed
 * to the app in process (`forwardRequest`), the subject attached to that Request object. There is
 * no inner port or socket file: no other local process can pass itself off as a verified
 * connection. This module owns the connections: handshake, header and body deadlines, and the
 * drain on shutdown; it does not route or authorize.
 */
import { readFileSync } from "node:fs";
import { type IncomingMessage, type ServerResponse, createServer as createHttpServer } from "node:http";
import { type PeerCertificate, type TLSSocket, createServer as createTlsServer } from "node:tls";
import { type ForwardLimits, forwardRequest } from "./forward-request.ts";

export interface MtlsTerminator {
  readonly port: number;
  /** The verified subject of the client whose connection carried `request`, if it came through here. */
  identityOf(request: Request): string | undefined;
  /** Stop accepting, let requests in flight finish within `timeoutMs`, then cut every connection. */
  close(timeoutMs?: number): Promise<void>;
}

export interface MtlsOptions extends ForwardLimits {
  hostname: string;
  port: number;
  cert: string;
  key: string;
  ca: string;
  /** The app every verified request is handed to. */
  handle(request: Request): Promise<Response>;
}

/** A client must finish the TLS handshake within this. */
const HANDSHAKE_TIMEOUT_MS = 10_000;
/** An idle connection (no request in flight) must send a complete request head within this. */
const IDLE_TIMEOUT_MS = 10_000;
/** Once its head has arrived, a request's body must arrive within this. */
const BODY_TIMEOUT_MS = 30_000;

interface Connection {
  readonly socket: TLSSocket;
  readonly identity: string;
  /** Requests read and not yet answered. */
  active: number;
  timer: ReturnType<typeof setTimeout> | undefined;
}

/** A certificate subject as `CN=alice,O=Example` (attributes in the certificate's order). */
export function subjectString(subject: PeerCertificate["subject"] | undefined): string {
  if (!subject) return "";
  return Object.entries(subject)
    .map(([attribute, value]) => `${attribute}=${Array.isArray(value) ? value.join("+") : String(value)}`)
    .join(",");
}

/** Cut `connection` unless something clears the deadline within `ms`. */
function arm(connection: Connection, ms: number): void {
  clearTimeout(connection.timer);
  connection.timer = setTimeout(() => connection.socket.destroy(), ms);
  connection.timer.unref?.();
}

function disarm(connection: Connection): void {
  clearTimeout(connection.timer);
  connection.timer = undefined;
}

export function startMtlsTerminator(options: MtlsOptions): Promise<MtlsTerminator> {
  const identities = new WeakMap<Request, string>();
  const connections = new Map<TLSSocket, Connection>();
  let closing = false;
  const http = createHttpServer((incoming: IncomingMessage, outgoing: ServerResponse) => {
    const connection = connections.get(incoming.socket as TLSSocket);
    if (!connection) {
      // Only sockets this terminator verified are ever fed to the parser; refuse anything else.
      incoming.socket.destroy();
      return;
    }
    connection.active++;
    arm(connection, BODY_TIMEOUT_MS);
    outgoing.once("close", () => {
      connection.active--;
      if (closing) connection.socket.end();
      else if (connection.active === 0) arm(connection, IDLE_TIMEOUT_MS);
    });
    void forwardRequest(incoming, outgoing, options, {
      handle: options.handle,
      bodyRead: () => disarm(connection),
      attach: (request) => identities.set(request, connection.identity),
    });
  });
  const tls = createTlsServer(
    {
      cert: readFileSync(options.cert),
      key: readFileSync(options.key),
      ca: readFileSync(options.ca),
      requestCert: true,
      rejectUnauthorized: true,
      handshakeTimeout: HANDSHAKE_TIMEOUT_MS,
    },
    (socket) => {
      const identity = subjectString(socket.getPeerCertificate()?.subject);
      if (!socket.authorized || identity === "" || closing) {
        socket.destroy();
        return;
      }
      const connection: Connection = { socket, identity, active: 0, timer: undefined };
      connections.set(socket, connection);
      arm(connection, IDLE_TIMEOUT_MS);
      const forget = () => {
        disarm(connection);
        connections.delete(socket);
      };
      socket.once("close", forget);
      socket.on("error", () => socket.destroy());
      http.emit("connection", socket);
    },
  );
  tls.on("tlsClientError", (_error, socket) => {
    // No certificate, or one the CA did not sign: the handshake failed; make sure the socket goes.
    socket.destroy();
  });
  return new Promise((resolve, reject) => {
    tls.once("error", reject);
    tls.listen(options.port, options.hostname, () => {
      const address = tls.address();
      const port = typeof address === "object" && address ? address.port : options.port;
      resolve({
        port,
        identityOf: (request) => identities.get(request),
        close: async (timeoutMs = 0) => {
          closing = true;
          const stopped = new Promise<void>((done) => tls.close(() => done()));
          for (const connection of connections.values()) if (connection.active === 0) connection.socket.destroy();
          const deadline = Date.now() + timeoutMs;
          while (connections.size > 0 && Date.now() < deadline) await Bun.sleep(10);
          for (const connection of connections.values()) connection.socket.destroy();
          await stopped;
        },
      });
    });
  });
}
