/**
 * How long a client may keep a connection without sending, the same on every listener (D331):
 * Bun closes a connection that sends nothing for the listener's idle timeout (a stalled body, a
 * silent keep-alive; `--attach-idle-timeout`, default 1 minute), and the JSON body guard gives a
 * body that trickles in byte by byte the same time to arrive whole (408). What the server does
 * after that is not the client's idle time: once the handler runs the timeout is lifted, and put
 * back when the answer is out; an event stream keeps it lifted and closes its connection when it
 * ends, so no connection outlives its stream idle. Owns the timers, not the routes.
 */
import { Elysia } from "elysia";

/** The idle timeout a listener gets without a setting (the `--attach-idle-timeout` default). */
export const DEFAULT_IDLE_TIMEOUT_SECONDS = 60;
/**
 * The watcher's probe listener (no setting): it takes no bodies and answers at once, and its
 * clients (the kubelet, a scraper) open a connection per probe or reconnect freely.
 */
export const PROBE_IDLE_TIMEOUT_SECONDS = 10;

interface IdleTimer {
  timeout(request: Request, seconds: number): void;
}

function isEventStream(response: unknown): response is Response {
  return response instanceof Response && response.headers.get("content-type")?.startsWith("text/event-stream") === true;
}

/**
 * Lift a listener's idle timeout for one request's connection (an in-process request has no
 * server: nothing to lift). The guard does this for every handler; a route that answers before
 * its handler (none today) would call it itself.
 */
export function keepOpen(server: IdleTimer | null | undefined, request: Request): void {
  server?.timeout(request, 0);
}

/**
 * The Elysia plugin every guarded listener carries (guarded-app.ts), before the error mapper. The
 * timeout is put back before the answer goes out (once it is out, Bun no longer ties the request
 * to its connection), on the way out of the handler or of a failure.
 */
export function connectionDeadlines(idleTimeoutSeconds: number) {
  // Returns nothing: a value returned from an Elysia hook would become the answer.
  const restore = ({ request, server }: { request: Request; server: IdleTimer | null }): undefined => {
    server?.timeout(request, idleTimeoutSeconds);
  };
  return new Elysia({ name: "spar.connection-deadlines", seed: idleTimeoutSeconds })
    .onBeforeHandle({ as: "global" }, ({ request, server }) => {
      keepOpen(server, request);
    })
    .onAfterHandle({ as: "global" }, (context) => {
      const response = context.responseValue;
      if (!isEventStream(response)) return restore(context);
      // The stream ends the connection: a client cannot keep the lifted timeout for later idling.
      response.headers.set("connection", "close");
    })
    .onError({ as: "global" }, restore);
}
