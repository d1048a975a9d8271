/**
 * A TCP proxy for fault tests: 127.0.0.1:<port 0> forwarding to a target, which can be
 * partitioned as a network partition is: both directions stop being delivered while every socket
 * stays open (no FIN, no RST: neither end learns anything), and healed: what was sent meanwhile is
 * delivered then, in order, as TCP's retransmissions would. A partition can also be armed to
 * begin at the first client packet that carries a marker (a statement's text): that packet and
 * everything after it is held, so a transaction can be cut at a chosen statement. Each accepted
 * connection gets its own upstream connection.
 */
import type { Socket, TCPSocketListener } from "bun";

export interface TcpProxy {
  /** The port clients connect to. */
  readonly port: number;
  /** Whether deliveries are stopped now. */
  readonly partitioned: boolean;
  /** Stop delivering in both directions; sockets stay open. */
  partition(): void;
  /** Partition from the first client-to-server packet containing `marker` (that packet held too). */
  partitionOn(marker: string): void;
  /** Deliver again, what was held first. */
  heal(): void;
  /** Close the listener and every connection. */
  close(): void;
}

/** One direction of one connection: bytes waiting to be written to `to`. */
class Pipe {
  to: Socket<unknown> | undefined;
  readonly #held: Uint8Array[] = [];
  /** The sending side closed: `to` is ended once what is held is delivered (a partition holds the FIN too). */
  #ending = false;
  constructor(
    private readonly blocked: () => boolean,
    private readonly inspect: (bytes: Uint8Array) => void = () => {},
  ) {}

  push(bytes: Uint8Array): void {
    this.inspect(bytes);
    this.#held.push(bytes.slice());
    this.flush();
  }

  end(): void {
    this.#ending = true;
    this.flush();
  }

  /** Write what is held while delivering and the peer accepts it; the rest waits for drain or heal. */
  flush(): void {
    const to = this.to;
    if (to === undefined || this.blocked()) return;
    while (this.#held.length > 0) {
      const bytes = this.#held[0] as Uint8Array;
      const written = to.write(bytes);
      if (written < bytes.byteLength) {
        this.#held[0] = bytes.subarray(Math.max(0, written));
        return;
      }
      this.#held.shift();
    }
    if (this.#ending) to.end();
  }
}

interface Link {
  up: Pipe;
  down: Pipe;
  client: Socket<unknown>;
  upstream: Socket<unknown> | undefined;
}

export async function startTcpProxy(targetHost: string, targetPort: number): Promise<TcpProxy> {
  let partitioned = false;
  let marker: string | undefined;
  const blocked = () => partitioned;
  const latin1 = new TextDecoder("latin1");
  const inspect = (bytes: Uint8Array): void => {
    if (marker !== undefined && latin1.decode(bytes).includes(marker)) {
      marker = undefined;
      partitioned = true;
    }
  };
  const links = new Set<Link>();
  const listener: TCPSocketListener<Link | undefined> = Bun.listen<Link | undefined>({
    hostname: "127.0.0.1",
    port: 0,
    socket: {
      open(client) {
        const link: Link = { up: new Pipe(blocked, inspect), down: new Pipe(blocked), client, upstream: undefined };
        link.down.to = client as Socket<unknown>;
        client.data = link;
        links.add(link);
        Bun.connect<Link>({
          hostname: targetHost,
          port: targetPort,
          data: link,
          socket: {
            open(upstream) {
              link.upstream = upstream as Socket<unknown>;
              link.up.to = upstream as Socket<unknown>;
              link.up.flush();
            },
            data(_upstream, bytes) {
              link.down.push(bytes);
            },
            drain() {
              link.up.flush();
            },
            close() {
              link.down.end();
            },
            error() {
              link.down.end();
            },
          },
        }).catch(() => client.end());
      },
      data(client, bytes) {
        client.data?.up.push(bytes);
      },
      drain(client) {
        client.data?.down.flush();
      },
      close(client) {
        client.data?.up.end();
      },
    },
  });
  return {
    port: listener.port,
    get partitioned() {
      return partitioned;
    },
    partition: () => {
      partitioned = true;
    },
    partitionOn: (text) => {
      marker = text;
    },
    heal: () => {
      marker = undefined;
      partitioned = false;
      for (const link of links) {
        link.up.flush();
        link.down.flush();
      }
    },
    close: () => {
      for (const link of links) {
        link.client.end();
        link.upstream?.end();
      }
      links.clear();
      listener.stop(true);
    },
  };
}
