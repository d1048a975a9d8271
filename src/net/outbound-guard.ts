/**
 * The outbound guard: the one way a URL that a model or a remote caller supplied is fetched
 * (fetch_url today; call_peer and A2A client calls next). It decides on the address it connects
 * to, not on the URL text: the host is resolved once, every answer is classified
 * (core/address-ranges.ts) and refused unless public or opened by the allow list, and the
 * request then goes to exactly that address (the URL's host goes in `Host` and, for https, in
 * the TLS server name the certificate is checked against), so a name that answers differently
 * on a second lookup never matters. Redirects are followed by hand, each hop checked the same
 * way. Environment proxies are not used: a proxy would connect to an address nobody checked.
 * URLs the operator configures (sinks, MCP HTTP servers, pricing sources) do not come here, but
 * for the alert targets (D462): their URLs come from secrets, so their guard opens each target's own
 * host (outbound-allow-list.ts `declaredHostEntry`) and nothing more.
 * Every hop is an HTTP client span carrying the caller's trace context (telemetry/client-spans.ts);
 * W3C baggage only when the caller asks for it, and never past a redirect to another origin.
 */
import { lookup } from "node:dns/promises";
import { type AddressClass, classifyAddress } from "../core/address-ranges.ts";
import { type IpAddress, formatIpAddress, parseIpAddress, parseIpv4 } from "../core/ip-address.ts";
import { EMPTY_ALLOW_LIST, type OutboundAllowList, allowListPermits } from "./outbound-allow-list.ts";
import { clientSpan } from "../telemetry/client-spans.ts";
import { redactUrl } from "./redact-url.ts";

/** A host name's addresses, as text; throws when the name does not resolve. */
export type Resolver = (hostname: string) => Promise<readonly string[]>;

/** The system resolver (getaddrinfo), every answer in its order. */
export const systemResolver: Resolver = async (hostname) =>
  (await lookup(hostname, { all: true, verbatim: true })).map((entry) => entry.address);

export interface OutboundGuardOptions {
  allow?: OutboundAllowList;
  /** Injected in tests; the system resolver otherwise. */
  resolve?: Resolver;
  /** Extra trust for https (a private CA, a client certificate). Verification is never turned off. */
  tls?: { ca?: string | string[]; cert?: string; key?: string };
  /** Redirects followed before giving up (default 5). */
  maxRedirects?: number;
}

export interface OutboundRequest {
  signal: AbortSignal;
  method?: string;
  headers?: ConstructorParameters<typeof Headers>[0];
  /** Kept in memory so a 307/308 can send it again. */
  body?: string | Uint8Array;
  /** `follow` (default): every hop is checked and followed; `manual`: a redirect response is returned as is. */
  redirect?: "follow" | "manual";
  /** Send the caller's W3C baggage to the URL's origin (default false: only traceparent and tracestate). */
  baggage?: boolean;
}

export type OutboundRefusalReason = "invalid-url" | "scheme" | "unresolved" | "forbidden-address" | "redirect-limit";

/** Why nothing was fetched; `message` is a sentence for the model or the caller (no credentials in it). */
export interface OutboundRefusal {
  ok: false;
  reason: OutboundRefusalReason;
  message: string;
}

/** The host a URL names and the one address it will be reached at. */
export interface CheckedTarget {
  ok: true;
  url: URL;
  address: IpAddress;
}

export type OutboundAnswer = { ok: true; response: Response; url: URL; address: string } | OutboundRefusal;

/** One hop's request as the redirect loop has it. */
interface Hop {
  method: string;
  headers: Headers;
  body: string | Uint8Array | undefined;
  /** 0 for the first request, n for the n-th redirect followed. */
  hop: number;
  baggage: boolean;
}

const REDIRECT_STATUSES = new Set([301, 302, 303, 307, 308]);
const CROSS_ORIGIN_DROPPED = ["authorization", "cookie", "proxy-authorization"];

function refusal(reason: OutboundRefusalReason, message: string): OutboundRefusal {
  return { ok: false, reason, message };
}

/** A URL host as an address literal (`[::1]`, `10.0.0.1`), else undefined for a name. */
function literalOf(hostname: string): IpAddress | undefined {
  if (hostname.startsWith("[")) return parseIpAddress(hostname);
  const bytes = parseIpv4(hostname);
  return bytes === undefined ? undefined : { family: 4, bytes };
}

/** "in 10.0.0.0/8", "(outside 2000::/3)". */
function rangeText(found: AddressClass): string {
  if (found.range === undefined) return "";
  return found.range.startsWith("outside") ? ` (${found.range})` : ` in ${found.range}`;
}

/** "refused: metadata.example resolves to 169.254.169.254, a cloud metadata address (...)". */
function forbiddenMessage(host: string, literal: boolean, address: IpAddress, found: AddressClass): string {
  const text = formatIpAddress(address);
  const carried = found.embedded ? `carries ${formatIpAddress(found.embedded.ipv4)} (${found.embedded.form}), ` : "";
  const subject = literal
    ? `${host} ${carried || "is "}`
    : `${host} resolves to ${text}, ${carried ? `which ${carried}` : ""}`;
  return `refused: ${subject}${found.label}${rangeText(found)}, not in the outbound allow list`;
}

function abortable<T>(work: Promise<T>, signal: AbortSignal): Promise<T> {
  signal.throwIfAborted();
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    signal.addEventListener("abort", onAbort, { once: true });
    work.then(resolve, reject).finally(() => signal.removeEventListener("abort", onAbort));
  });
}

export class OutboundGuard {
  readonly #allow: OutboundAllowList;
  readonly #resolve: Resolver;
  readonly #tls: OutboundGuardOptions["tls"];
  readonly #maxRedirects: number;

  constructor(options: OutboundGuardOptions = {}) {
    this.#allow = options.allow ?? EMPTY_ALLOW_LIST;
    this.#resolve = options.resolve ?? systemResolver;
    this.#tls = options.tls;
    this.#maxRedirects = options.maxRedirects ?? 5;
  }

  get allowList(): OutboundAllowList {
    return this.#allow;
  }

  /** Resolve the URL's host once and pick the address to connect to, or say why not. */
  async check(input: string | URL, signal: AbortSignal): Promise<CheckedTarget | OutboundRefusal> {
    if (!(input instanceof URL) && !URL.canParse(input))
      return refusal("invalid-url", `refused: ${redactUrl(input)} is not an absolute URL`);
    const url = new URL(input);
    if (url.protocol !== "http:" && url.protocol !== "https:")
      return refusal("scheme", `refused: ${url.protocol} URLs are not fetched (http and https only)`);
    const literal = literalOf(url.hostname);
    const addresses = literal ? [literal] : await this.#lookup(url.hostname, signal);
    if (!Array.isArray(addresses)) return addresses as OutboundRefusal;
    for (const address of addresses) {
      const found = classifyAddress(address);
      if (found.kind === "public" || allowListPermits(this.#allow, literal ? undefined : url.hostname, address, found))
        continue;
      return refusal("forbidden-address", forbiddenMessage(url.hostname, literal !== undefined, address, found));
    }
    const chosen = addresses.find((address) => address.family === 4) ?? (addresses[0] as IpAddress);
    return { ok: true, url, address: chosen };
  }

  async #lookup(hostname: string, signal: AbortSignal): Promise<IpAddress[] | OutboundRefusal> {
    let answers: readonly string[];
    try {
      answers = await abortable(this.#resolve(hostname), signal);
    } catch (error) {
      if (signal.aborted) throw error;
      return refusal(
        "unresolved",
        `${hostname} does not resolve (${error instanceof Error ? error.message : String(error)})`,
      );
    }
    if (answers.length === 0) return refusal("unresolved", `${hostname} does not resolve (no addresses)`);
    const parsed: IpAddress[] = [];
    for (const answer of answers) {
      const address = parseIpAddress(answer);
      if (address === undefined)
        return refusal(
          "forbidden-address",
          `refused: ${hostname} resolves to ${JSON.stringify(answer)}, which is not an IP address`,
        );
      parsed.push(address);
    }
    return parsed;
  }

  /**
   * Send the request to the checked address of every hop. Resolves to the final response, or to a
   * refusal; rejects like `fetch` on a transport error or an abort.
   */
  async fetch(input: string | URL, request: OutboundRequest): Promise<OutboundAnswer> {
    const headers = new Headers(request.headers);
    let method = (request.method ?? "GET").toUpperCase();
    let body = request.body;
    let target = await this.check(input, request.signal);
    const origin = target.ok ? target.url.origin : undefined;
    for (let hop = 0; ; hop++) {
      if (!target.ok) return target;
      const baggage = request.baggage === true && target.url.origin === origin;
      const response = await this.#send(target, { method, headers, body, hop, baggage }, request.signal);
      const location = response.headers.get("location");
      const answer = { ok: true as const, response, url: target.url, address: formatIpAddress(target.address) };
      if (request.redirect === "manual" || !REDIRECT_STATUSES.has(response.status) || location === null) return answer;
      await response.body?.cancel().catch(() => {});
      if (hop >= this.#maxRedirects) return refusal("redirect-limit", `more than ${this.#maxRedirects} redirects`);
      if (!URL.canParse(location, target.url.href))
        return refusal("invalid-url", "refused: a redirect to an invalid URL");
      const next = new URL(location, target.url);
      if (next.protocol !== "http:" && next.protocol !== "https:")
        return refusal("scheme", `refused: a redirect to a ${next.protocol} URL`);
      if (response.status === 303 ? method !== "HEAD" : response.status <= 302 && method === "POST") {
        method = "GET";
        body = undefined;
        for (const name of ["content-type", "content-length", "content-encoding", "content-language"])
          headers.delete(name);
      }
      if (next.origin !== target.url.origin) for (const name of CROSS_ORIGIN_DROPPED) headers.delete(name);
      target = await this.check(next, request.signal);
    }
  }

  /** One request to the literal address, in its client span; the URL's host rides in `Host` and the TLS server name. */
  #send(target: CheckedTarget, hop: Hop, signal: AbortSignal): Promise<Response> {
    const peer = formatIpAddress(target.address);
    const attributes = {
      "network.peer.address": peer,
      ...(hop.hop > 0 ? { "http.request.resend_count": hop.hop } : {}),
    };
    return clientSpan(
      hop.method,
      target.url,
      (traceHeaders) => {
        const entries = Object.entries(traceHeaders);
        if (entries.length === 0) return this.#connect(target, hop.method, hop.headers, hop.body, signal);
        const headers = new Headers(hop.headers);
        for (const [name, value] of entries) headers.set(name, value);
        return this.#connect(target, hop.method, headers, hop.body, signal);
      },
      { baggage: hop.baggage, attributes },
    );
  }

  #connect(
    target: CheckedTarget,
    method: string,
    base: Headers,
    body: string | Uint8Array | undefined,
    signal: AbortSignal,
  ): Promise<Response> {
    const { url, address } = target;
    const connect = new URL(url.href);
    connect.username = "";
    connect.password = "";
    connect.hostname =
      address.family === 6 ? `[${formatIpAddress({ family: 6, bytes: address.bytes })}]` : formatIpAddress(address);
    const headers = new Headers(base);
    headers.set("host", url.host);
    if ((url.username !== "" || url.password !== "") && !headers.has("authorization")) {
      const credentials = `${decodeURIComponent(url.username)}:${decodeURIComponent(url.password)}`;
      headers.set("authorization", `Basic ${Buffer.from(credentials, "utf8").toString("base64")}`);
    }
    const isName = literalOf(url.hostname) === undefined;
    const tls =
      url.protocol === "https:"
        ? { ...this.#tls, ...(isName ? { serverName: url.hostname.replace(/\.$/, "") } : {}) }
        : undefined;
    return fetch(connect, {
      method,
      headers,
      body: body ?? null,
      signal,
      redirect: "manual",
      proxy: false,
      ...(tls ? { tls } : {}),
    });
  }
}
