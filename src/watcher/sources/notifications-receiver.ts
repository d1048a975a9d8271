/**
 * The notifications source's runner (D400-D402): a CloudEvents HTTP receiver of its own on
 * `--notifications-addr` (the runner owns it, so it starts from the flag values and the context
 * alone, in a worker as on the main thread). A provider's push subscription posts to
 * `POST /notifications/<subscription>`, `<subscription>` the last segment of
 * `--notifications-subscription`; another path is 404. The listener is a guardedApp as every
 * listener: a well-formed Host (400), the bearer token from the variable
 * `--notifications-token-env` names (401, compared in constant time), `Content-Type:
 * application/json` (binary mode) or `application/cloudevents+json` (structured mode) else 415,
 * a body of at most 64 KiB (413), JSON (400). The cloudevents SDK reads the event (not one: 400
 * naming why; a batch: 400); the pure NotificationDetector maps it. Answers are JSON: 202
 * `{status: "accepted", kind}`, `{status: "duplicate"}` for a redelivery, `{status: "ignored",
 * reason}` for a type with no kind (logged once per type).
 */
import { type CloudEventV1, HTTP, ValidationError } from "cloudevents";
import { Elysia } from "elysia";
import { SparError } from "../../core/errors.ts";
import { bindHostname, parseListenAddress } from "../../config/listen-address.ts";
import { LOCAL_CALLER } from "../../surfaces/http/caller-auth.ts";
import { guardedApp, listenOn } from "../../surfaces/http/guarded-app.ts";
import { json } from "../../surfaces/http/responses.ts";
import { EMPTY_BODY } from "../../surfaces/http/body-guards.ts";
import { NotificationDetector, type ReceivedCloudEvent } from "../core/sources/notification-detector.ts";
import { SourceRefusal, type SourceRunner, type SourceRunnerContext } from "./source-runner.ts";

/** The receiver's body cap: GKE's notifications are a few KiB; a security bulletin's text fits. */
export const NOTIFICATIONS_BODY_LIMIT = 64 * 1024;
export const CLOUDEVENTS_JSON = "application/cloudevents+json";
const LOGGED_TYPES_MAX = 100;

export interface ReceiverSettings {
  /** The route's last segment: the subscription's bare name. */
  subscription: string;
  address: string;
  token: string;
}

function flag(context: SourceRunnerContext, name: string): string | undefined {
  const value = context.values.get(name);
  return typeof value === "string" && value.trim() !== "" ? value.trim() : undefined;
}

/** Settings from the flag values and the environment, or the refusal naming what is missing. */
export function receiverSettings(context: SourceRunnerContext): ReceiverSettings {
  const subscription = flag(context, "notifications-subscription")?.split("/").at(-1);
  if (!subscription) throw new SourceRefusal("the notifications source requires --notifications-subscription");
  const tokenEnv = flag(context, "notifications-token-env");
  if (!tokenEnv)
    throw new SourceRefusal(
      "the notifications source requires --notifications-token-env (the variable holding the bearer token its pushes carry)",
    );
  const token = context.env[tokenEnv];
  if (!token) throw new SourceRefusal(`--notifications-token-env=${tokenEnv}: the variable is not set`);
  return { subscription, address: flag(context, "notifications-addr") ?? ":8090", token };
}

function headersOf(request: Request): Record<string, string> {
  const headers: Record<string, string> = {};
  request.headers.forEach((value, name) => {
    headers[name.toLowerCase()] = value;
  });
  return headers;
}

/** The SDK's reading of a request (binary or structured mode), or a 400 naming why it is not one event. */
export function readCloudEvent(request: Request, body: unknown): ReceivedCloudEvent {
  if (body === EMPTY_BODY || body === undefined)
    throw new SparError("bad_request", "request body is empty: not a CloudEvent");
  let event: CloudEventV1<unknown> | CloudEventV1<unknown>[];
  try {
    event = HTTP.toEvent({ headers: headersOf(request), body });
    if (Array.isArray(event))
      throw new SparError("bad_request", "a batch of CloudEvents is not accepted: send one event per request");
    // The SDK does not check what it parsed; a CloudEvent needs id, source, type and specversion.
    const { id, source, type } = event;
    if (!id || !source || !type) throw new ValidationError("id, source and type are required");
  } catch (error) {
    if (error instanceof SparError) throw error;
    throw new SparError("bad_request", `not a CloudEvent: ${error instanceof Error ? error.message : String(error)}`);
  }
  return {
    id: event.id,
    source: event.source,
    type: event.type,
    ...(event.subject ? { subject: event.subject } : {}),
    ...(event.data !== undefined ? { data: event.data } : {}),
  };
}

export class NotificationsReceiver implements SourceRunner {
  readonly name = "notifications";
  readonly #detector = new NotificationDetector();
  readonly #loggedTypes = new Set<string>();
  #server: Bun.Server<undefined> | undefined;

  constructor(
    private readonly context: SourceRunnerContext,
    private readonly settings: ReceiverSettings,
  ) {}

  get synced(): boolean {
    return this.#server !== undefined;
  }

  get lastError(): string | undefined {
    return undefined;
  }

  /** Where it listens (after start), e.g. `http://127.0.0.1:8090`. */
  get url(): string | undefined {
    return this.#server ? `http://${this.#server.hostname}:${this.#server.port}` : undefined;
  }

  app() {
    return guardedApp({
      transport: {
        token: this.settings.token,
        tokenLabel: "notifications",
        tokenSource: "the value of the variable --notifications-token-env names",
        readonly: false,
      },
      resolveCaller: () => LOCAL_CALLER,
      // Nothing is public: every path, an unknown one included, needs the token.
      publicPaths: new Set(),
      bodyLimit: () => NOTIFICATIONS_BODY_LIMIT,
      jsonTypes: [CLOUDEVENTS_JSON],
    }).use(
      new Elysia({ name: "spar.watcher-notifications" }).post(
        "/notifications/:subscription",
        ({ params, request, body }) => this.#receive(decodeURIComponent(params.subscription), request, body),
      ),
    );
  }

  #receive(subscription: string, request: Request, body: unknown): Response {
    if (subscription !== this.settings.subscription)
      throw new SparError(
        "not_found",
        `no subscription ${JSON.stringify(subscription)} here: pushes go to /notifications/${this.settings.subscription}`,
      );
    const event = readCloudEvent(request, body);
    const now = (this.context.now ?? Date.now)();
    const reception = this.#detector.receive(event, now);
    if (reception.outcome === "emitted") {
      this.context.emit(reception.signal);
      return json(202, { status: "accepted", kind: reception.signal.kind });
    }
    if (reception.outcome === "duplicate") return json(202, { status: "duplicate" });
    if (!this.#loggedTypes.has(event.type) && this.#loggedTypes.size < LOGGED_TYPES_MAX) {
      this.#loggedTypes.add(event.type);
      this.context.logger.warn(
        `source notifications: ignored: ${reception.reason} (source ${event.source}; logged once per type)`,
      );
    }
    return json(202, { status: "ignored", reason: reception.reason });
  }

  async start(): Promise<void> {
    const parsed = parseListenAddress(this.settings.address);
    if (!parsed.ok) throw new SourceRefusal(`--notifications-addr: ${parsed.error}`);
    this.#server = listenOn(this.app(), { hostname: bindHostname(parsed.value), port: parsed.value.port });
    this.context.logger.info(
      `source notifications: receiving CloudEvents on ${this.url}/notifications/${this.settings.subscription}`,
    );
  }

  async stop(): Promise<void> {
    await this.#server?.stop(true);
    this.#server = undefined;
  }
}

/** The SOURCE_RUNNERS factory: refuses (SourceRefusal) when a flag or the token is missing. */
export function notificationsRunner(context: SourceRunnerContext): SourceRunner {
  return new NotificationsReceiver(context, receiverSettings(context));
}
