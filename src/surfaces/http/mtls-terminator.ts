/**
 * The mTLS front of a listener. Bun.serve enforces client certificates at the handshake but
 * does not hand the verified peer certificate to request handlers, and the spec makes its
 * subject the caller's identity. So with a client CA the public port is a node:tls server: it
 * verifies the client, reads the subject, and splices the connection to the HTTP server on a
 * private loopback port, remembering which local port carries which subject. The HTTP side
 * looks the subject up by the connection's remote port; a connection the terminator did not
 * open has no subject and is refused, so the private port cannot be used to skip the check.
 */
import { readFileSync } from "node:fs";
import { type Socket, connect } from "node:net";
import { type PeerCertificate, createServer } from "node:tls";

export interface MtlsTerminator {
  readonly port: number;
  /** The verified subject of the client connected through `upstreamLocalPort`, if any. */
  identityOf(upstreamLocalPort: number): string | undefined;
  /** Stop accepting and cut every spliced connection. */
  close(): Promise<void>;
}

export interface MtlsOptions {
  hostname: string;
  port: number;
  cert: string;
  key: string;
  ca: string;
  /** Loopback port of the plain HTTP server behind the terminator. */
  upstreamPort: number;
}

/** A certificate subject as `CN=alice,O=Example` (attributes in the certificate's order). */
export function subjectString(subject: PeerCertificate["subject"] | undefined): string {
  if (!subject) return "";
  return Object.entries(subject)
    .map(([attribute, value]) => `${attribute}=${Array.isArray(value) ? value.join("+") : String(value)}`)
    .join(",");
}

export function startMtlsTerminator(options: MtlsOptions): Promise<MtlsTerminator> {
  const identities = new Map<number, string>();
  const open = new Set<Socket>();
  const server = createServer(
    { cert: readFileSync(options.cert), key: readFileSync(options.key), ca: readFileSync(options.ca), requestCert: true, rejectUnauthorized: true },
    (client) => {
      const identity = subjectString(client.getPeerCertificate()?.subject);
      if (!client.authorized || identity === "") {
        client.destroy();
        return;
      }
      const upstream = connect({ host: "127.0.0.1", port: options.upstreamPort });
      open.add(client);
      open.add(upstream);
      let localPort: number | undefined;
      upstream.on("connect", () => {
        localPort = upstream.localPort;
        if (localPort !== undefined) identities.set(localPort, identity);
        client.pipe(upstream);
        upstream.pipe(client);
      });
      const finish = () => {
        if (localPort !== undefined) identities.delete(localPort);
        open.delete(client);
        open.delete(upstream);
        client.destroy();
        upstream.destroy();
      };
      client.on("close", finish);
      client.on("error", finish);
      upstream.on("close", finish);
      upstream.on("error", finish);
    },
  );
  server.on("tlsClientError", () => {
    // A client without an acceptable certificate: the handshake already failed; nothing to do.
  });
  return new Promise((resolve, reject) => {
    server.once("error", reject);
    server.listen(options.port, options.hostname, () => {
      const address = server.address();
      const port = typeof address === "object" && address ? address.port : options.port;
      resolve({
        port,
        identityOf: (upstreamLocalPort) => identities.get(upstreamLocalPort),
        close: () =>
          new Promise<void>((done) => {
            for (const socket of open) socket.destroy();
            server.close(() => done());
          }),
      });
    });
  });
}
