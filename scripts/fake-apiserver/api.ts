/**
 * The Kubernetes API surface of the fake: discovery, version, a minimal openapi, and the resource
 * verbs (get, list, watch, create, update, merge patch, delete, pods/log, SelfSubjectAccessReview)
 * over the store, each authenticated and authorized first. Every refusal is a Status body with the
 * apiserver's code and reason. Fault injection and request recording happen in the server before
 * a request gets here.
 */
import { type AccessAttributes, type AccessControl, reviewAccess } from "./access.ts";
import { fromEventsV1, toEventsV1 } from "./events-v1.ts";
import { serveList } from "./list.ts";
import type { PodLogs } from "./logs.ts";
import type { NodeStats } from "./node-stats.ts";
import { type ResourcePath, parseResourcePath } from "./paths.ts";
import { decodeAccessReview } from "./protobuf.ts";
import {
  type ResourceInfo,
  apiGroupDocument,
  apiGroupListDocument,
  apiResourceListDocument,
  apiVersionOf,
  apiVersionsDocument,
  versionDocument,
} from "./resources.ts";
import { type KubeObject, type Matcher, parseFieldSelector, parseLabelSelector } from "./selectors.ts";
import { badRequest, expiredStatus, failure, jsonResponse, notFound, statusObject, statusResponse } from "./status.ts";
import type { ServedApis } from "./served-apis.ts";
import type { ObjectStore } from "./store.ts";
import type { WatchHub } from "./watch.ts";

export interface ApiOptions {
  /** How a watch from a compacted resourceVersion is refused: an HTTP 410 (default) or a 200 stream with one ERROR event. */
  expiredWatch: "http" | "event";
  /** timeoutSeconds of a watch that does not set one. */
  defaultWatchTimeoutSeconds: number;
}

export interface ApiContext {
  store: ObjectStore;
  watches: WatchHub;
  logs: PodLogs;
  access: AccessControl;
  options: ApiOptions;
  /** Group/versions served now (all unless a test took some away). */
  served?: ServedApis;
  /** The kubelet stats served through the node proxy. */
  stats?: NodeStats;
}

const OPENAPI_V2 = { swagger: "2.0", info: { title: "Kubernetes", version: "v1.32.0" }, paths: {}, definitions: {} };

/** The stored (core) object → its wire form for the requested resource. */
export function encoderFor(info: ResourceInfo): (object: KubeObject) => KubeObject {
  if (info.group === "events.k8s.io") return toEventsV1;
  const apiVersion = apiVersionOf(info);
  return (object) => ({ kind: info.kind, apiVersion, ...object });
}

/** A request body → the stored (core) form. */
function decodeBody(info: ResourceInfo, body: KubeObject): KubeObject {
  const object = info.group === "events.k8s.io" ? fromEventsV1(body) : body;
  return { ...object, kind: info.kind, apiVersion: info.group === "events.k8s.io" ? "v1" : apiVersionOf(info) };
}

function verbOf(method: string, path: ResourcePath, query: URLSearchParams): string {
  const watching = path.legacyWatch || query.get("watch") === "true" || query.get("watch") === "1";
  switch (method) {
    case "GET":
      return path.name === undefined ? (watching ? "watch" : "list") : "get";
    case "POST":
      return "create";
    case "PUT":
      return "update";
    case "PATCH":
      return "patch";
    case "DELETE":
      return path.name === undefined ? "deletecollection" : "delete";
    default:
      return method.toLowerCase();
  }
}

/** The apiserver's answer to a body it cannot decode (client-go falls back to JSON on a 415). */
function unsupportedMediaType(contentType: string): Response {
  return statusResponse(
    statusObject(
      415,
      "UnsupportedMediaType",
      `the body of the request was in an unknown format (${contentType}) - accepted media types include: application/json, application/merge-patch+json`,
    ),
  );
}

async function readJson(request: Request): Promise<KubeObject | Response> {
  const contentType = request.headers.get("content-type") ?? "";
  if (contentType !== "" && !contentType.includes("json")) return unsupportedMediaType(contentType);
  try {
    const body = (await request.json()) as unknown;
    if (typeof body !== "object" || body === null || Array.isArray(body))
      return badRequest("the request body must be a JSON object");
    return body as KubeObject;
  } catch {
    return badRequest("the request body is not valid JSON");
  }
}

function mergePatch(target: unknown, patch: unknown): unknown {
  if (typeof patch !== "object" || patch === null || Array.isArray(patch)) return patch;
  const result: Record<string, unknown> =
    typeof target === "object" && target !== null && !Array.isArray(target)
      ? { ...(target as Record<string, unknown>) }
      : {};
  for (const [key, value] of Object.entries(patch)) {
    if (value === null) delete result[key];
    else result[key] = mergePatch(result[key], value);
  }
  return result;
}

export class KubeApi {
  constructor(private readonly context: ApiContext) {}

  async handle(request: Request, url: URL, user: string): Promise<Response> {
    const discovery = this.discovery(url);
    if (discovery) return discovery;
    const proxied = this.context.stats?.serve(request.method, url.pathname, user, this.context);
    if (proxied) return proxied;
    const parsed = parseResourcePath(url.pathname);
    const path = parsed && this.isServed(parsed.info.group, parsed.info.version) ? parsed : undefined;
    if (!path) return failure(404, "the server could not find the requested resource");
    const verb = verbOf(request.method, path, url.searchParams);
    const attributes: AccessAttributes = {
      user,
      verb,
      group: path.info.group,
      resource: path.info.resource,
      subresource: path.subresource ?? "",
      namespace: path.namespace ?? "",
      name: path.name ?? "",
    };
    if (path.info.virtual) return this.createReview(request, path, user);
    if (!path.info.verbs.includes(verb) && path.subresource === undefined)
      return failure(405, "the server does not allow this method on the requested resource");
    if (!this.context.access.allows(attributes)) return statusResponse(this.context.access.forbidden(attributes));
    return this.dispatch(request, url, path, verb);
  }

  private readonly isServed = (group: string, version: string): boolean =>
    this.context.served?.served(group, version) ?? true;

  private discovery(url: URL): Response | undefined {
    const pathname = url.pathname.replace(/\/+$/, "") || "/";
    if (pathname === "/api") return jsonResponse(apiVersionsDocument(url.host));
    if (pathname === "/apis") return jsonResponse(apiGroupListDocument(this.isServed));
    if (pathname === "/version") return jsonResponse(versionDocument());
    if (pathname === "/openapi/v2") return jsonResponse(OPENAPI_V2);
    if (pathname === "/openapi/v3") return jsonResponse({ paths: {} });
    const groupVersion = /^\/(?:api\/(v1)|apis\/([^/]+)\/([^/]+))$/.exec(pathname);
    if (groupVersion) {
      const document = groupVersion[1]
        ? apiResourceListDocument("", groupVersion[1], this.isServed)
        : apiResourceListDocument(groupVersion[2] ?? "", groupVersion[3] ?? "", this.isServed);
      return document ? jsonResponse(document) : failure(404, "the server could not find the requested resource");
    }
    const group = /^\/apis\/([^/]+)$/.exec(pathname)?.[1];
    if (group) {
      const entry = (
        apiGroupListDocument(this.isServed).groups as { name: string; preferredVersion: { version: string } }[]
      ).find((candidate) => candidate.name === group);
      return entry
        ? jsonResponse(apiGroupDocument(group, entry.preferredVersion.version))
        : failure(404, "the server could not find the requested resource");
    }
    return undefined;
  }

  private selectors(path: ResourcePath, query: URLSearchParams): Matcher | Response {
    const fields = parseFieldSelector(
      query.get("fieldSelector"),
      path.info.storage,
      path.info.group === "events.k8s.io",
    );
    if (!fields.ok) return badRequest(fields.error);
    const labels = parseLabelSelector(query.get("labelSelector"));
    if (!labels.ok) return badRequest(labels.error);
    return (object) => fields.value(object) && labels.value(object);
  }

  private async dispatch(request: Request, url: URL, path: ResourcePath, verb: string): Promise<Response> {
    const { store, logs } = this.context;
    const { info } = path;
    const encode = encoderFor(info);
    const namespace = path.namespace ?? "";
    if (verb === "list" || verb === "watch") {
      const match = this.selectors(path, url.searchParams);
      if (match instanceof Response) return match;
      if (verb === "watch") return this.watch(request, url.searchParams, path, match);
      return serveList(store, { info, namespace: path.namespace, match, query: url.searchParams, encode });
    }
    if (path.name === undefined) {
      if (verb !== "create") return failure(405, `the server does not allow this method on the requested resource`);
      return this.create(request, path);
    }
    const existing = store.get(info.storage, namespace, path.name);
    if (path.subresource === "log" && info.resource === "pods" && verb === "get")
      return logs.serve(namespace, path.name, existing, url.searchParams);
    if (path.subresource !== undefined && path.subresource !== "status")
      return failure(404, "the server could not find the requested resource");
    switch (verb) {
      case "get":
        return existing ? jsonResponse(encode(existing)) : notFound(info.resource, path.name, info.group);
      case "delete": {
        const result = store.delete(info.storage, namespace, path.name);
        return result.ok ? jsonResponse(encode(result.object)) : notFound(info.resource, path.name, info.group);
      }
      case "update":
      case "patch":
        return this.replace(request, path, existing, verb);
      default:
        return failure(405, "the server does not allow this method on the requested resource");
    }
  }

  private watch(request: Request, query: URLSearchParams, path: ResourcePath, match: Matcher): Response {
    const { store, watches, options } = this.context;
    const requested = query.get("resourceVersion") ?? "";
    if (requested !== "" && !/^\d+$/.test(requested))
      return badRequest(`resourceVersion: Invalid value: "${requested}": must be a decimal integer`);
    const sendInitialEvents = query.get("sendInitialEvents") === "true";
    const allowBookmarks = query.get("allowWatchBookmarks") === "true" || query.get("allowWatchBookmarks") === "1";
    if (sendInitialEvents && (query.get("resourceVersionMatch") !== "NotOlderThan" || !allowBookmarks)) {
      return failure(
        422,
        "sendInitialEvents: Forbidden: sendInitialEvents requires setting resourceVersionMatch to NotOlderThan and allowWatchBookmarks to true",
      );
    }
    const timeoutParam = query.get("timeoutSeconds");
    if (timeoutParam !== null && !/^\d+$/.test(timeoutParam))
      return badRequest(`timeoutSeconds: Invalid value: "${timeoutParam}": must be a non-negative integer`);
    const fromResourceVersion =
      sendInitialEvents || requested === "" || requested === "0" ? undefined : Number(requested);
    if (fromResourceVersion !== undefined && fromResourceVersion < store.compactedResourceVersion) {
      const status = expiredStatus(fromResourceVersion, store.compactedResourceVersion);
      if (options.expiredWatch === "http") return statusResponse(status);
      return new Response(`\n${JSON.stringify({ type: "ERROR", object: status })}\n`, {
        headers: { "content-type": "application/json" },
      });
    }
    const timeoutSeconds =
      timeoutParam !== null && Number(timeoutParam) > 0 ? Number(timeoutParam) : options.defaultWatchTimeoutSeconds;
    return watches.stream(
      {
        info: path.info,
        namespace: path.namespace,
        match,
        fromResourceVersion,
        allowBookmarks,
        sendInitialEventsEnd: sendInitialEvents,
        timeoutSeconds,
        encode: encoderFor(path.info),
      },
      request.signal,
    );
  }

  private async create(request: Request, path: ResourcePath): Promise<Response> {
    const body = await readJson(request);
    if (body instanceof Response) return body;
    const object = decodeBody(path.info, body);
    const metadata = { ...((object.metadata ?? {}) as Record<string, unknown>) };
    if (path.info.namespaced) {
      if (path.namespace === undefined)
        return failure(405, "the server does not allow this method on the requested resource");
      if (metadata.namespace !== undefined && metadata.namespace !== path.namespace) {
        return badRequest("the namespace of the provided object does not match the namespace sent on the request");
      }
      metadata.namespace = path.namespace;
    }
    const result = this.context.store.create(path.info.storage, { ...object, metadata });
    if (!result.ok)
      return statusResponse(
        statusObject(result.code, result.code === 409 ? "AlreadyExists" : "Invalid", result.message),
      );
    return jsonResponse(encoderFor(path.info)(result.object), 201);
  }

  private async replace(
    request: Request,
    path: ResourcePath,
    existing: KubeObject | undefined,
    verb: string,
  ): Promise<Response> {
    if (!existing || path.name === undefined) return notFound(path.info.resource, path.name ?? "", path.info.group);
    const contentType = request.headers.get("content-type") ?? "";
    if (verb === "patch" && contentType.includes("json-patch"))
      return failure(415, `the fake apiserver supports merge patches only, not ${contentType}`);
    const body = await readJson(request);
    if (body instanceof Response) return body;
    const encode = encoderFor(path.info);
    const next = verb === "patch" ? (mergePatch(encode(existing), body) as KubeObject) : body;
    const metadata: Record<string, unknown> = {
      ...((next.metadata ?? {}) as Record<string, unknown>),
      name: path.name,
    };
    if (path.namespace !== undefined) metadata.namespace = path.namespace;
    const result = this.context.store.update(path.info.storage, decodeBody(path.info, { ...next, metadata }));
    if (!result.ok)
      return statusResponse(
        statusObject(
          result.code,
          result.code === 409 ? "Conflict" : result.code === 404 ? "NotFound" : "Invalid",
          result.message,
        ),
      );
    return jsonResponse(encode(result.object));
  }

  private async createReview(request: Request, path: ResourcePath, user: string): Promise<Response> {
    if (request.method !== "POST" || path.name !== undefined)
      return failure(405, "the server does not allow this method on the requested resource");
    const contentType = request.headers.get("content-type") ?? "";
    let body: KubeObject | Response;
    if (contentType.includes("protobuf"))
      body =
        decodeAccessReview(new Uint8Array(await request.arrayBuffer())) ??
        badRequest("the protobuf body is not a SelfSubjectAccessReview");
    else body = await readJson(request);
    if (body instanceof Response) return body;
    const review = reviewAccess(this.context.access, user, body);
    if (!review)
      return failure(
        422,
        "SelfSubjectAccessReview.authorization.k8s.io is invalid: spec: Invalid value: exactly one of nonResourceAttributes or resourceAttributes must be specified",
      );
    return jsonResponse(review, 201);
  }
}
