/**
 * Lists with the apiserver's resourceVersion semantics: unset or `0` reads the current state
 * (`0` ignores `limit`, as the watch cache does), `N` with `resourceVersionMatch=Exact` reads the
 * state at N, `N` newer than the store is a 504 "Too large resource version". `limit`/`continue`
 * page through one consistent snapshot: the continue token carries the list's version and the last
 * key, so every page is read at that version, and a token whose version was compacted is 410
 * Expired. Items carry no kind/apiVersion (the List does); events.k8s.io lists are converted.
 */
import type { ResourceInfo } from "./resources.ts";
import { apiVersionOf } from "./resources.ts";
import type { KubeObject, Matcher } from "./selectors.ts";
import { CONTINUE_EXPIRED_MESSAGE, badRequest, failure, jsonResponse, statusObject, statusResponse } from "./status.ts";
import type { ObjectStore } from "./store.ts";

export interface ListRequest {
  info: ResourceInfo;
  namespace: string | undefined;
  match: Matcher;
  query: URLSearchParams;
  encode: (object: KubeObject) => KubeObject;
}

interface ContinueToken {
  rv: number;
  start: string;
}

function keyOf(object: KubeObject): string {
  return `${String(object.metadata?.namespace ?? "")}/${String(object.metadata?.name ?? "")}`;
}

function encodeContinue(token: ContinueToken): string {
  return Buffer.from(JSON.stringify(token)).toString("base64url");
}

function decodeContinue(value: string): ContinueToken | undefined {
  try {
    const token = JSON.parse(Buffer.from(value, "base64url").toString("utf8")) as Partial<ContinueToken>;
    return typeof token.rv === "number" && typeof token.start === "string"
      ? { rv: token.rv, start: token.start }
      : undefined;
  } catch {
    return undefined;
  }
}

function withoutTypeMeta(object: KubeObject): KubeObject {
  const { kind: _kind, apiVersion: _apiVersion, ...rest } = object;
  return rest;
}

/** The state to list from: [version, objects] or an error Response. */
function snapshot(
  store: ObjectStore,
  request: ListRequest,
  token: ContinueToken | undefined,
): [number, KubeObject[]] | Response {
  const { info, namespace, query } = request;
  if (token) {
    const objects = store.listAt(info.storage, namespace, token.rv);
    if (!objects) return statusResponse(statusObject(410, "Expired", CONTINUE_EXPIRED_MESSAGE));
    return [token.rv, objects];
  }
  const requested = query.get("resourceVersion") ?? "";
  if (requested === "" || requested === "0") return [store.resourceVersion, store.list(info.storage, namespace)];
  if (!/^\d+$/.test(requested))
    return badRequest(`resourceVersion: Invalid value: "${requested}": must be a decimal integer`);
  const version = Number(requested);
  if (version > store.resourceVersion) {
    return statusResponse(
      statusObject(504, "Timeout", `Too large resource version: ${version}, current: ${store.resourceVersion}`, {
        causes: [{ reason: "ResourceVersionTooLarge", message: "Too large resource version" }],
        retryAfterSeconds: 1,
      }),
    );
  }
  if (query.get("resourceVersionMatch") !== "Exact")
    return [store.resourceVersion, store.list(info.storage, namespace)];
  const objects = store.listAt(info.storage, namespace, version);
  if (!objects)
    return statusResponse(
      statusObject(410, "Expired", `too old resource version: ${version} (${store.compactedResourceVersion})`),
    );
  return [version, objects];
}

export function serveList(store: ObjectStore, request: ListRequest): Response {
  const { info, query } = request;
  const continueParam = query.get("continue") ?? "";
  const token = continueParam === "" ? undefined : decodeContinue(continueParam);
  if (continueParam !== "" && !token) return failure(400, `continue key is not valid: ${continueParam}`);
  const limitParam = query.get("limit") ?? "";
  if (limitParam !== "" && !/^\d+$/.test(limitParam))
    return badRequest(`limit: Invalid value: "${limitParam}": must be a non-negative integer`);
  const state = snapshot(store, request, token);
  if (state instanceof Response) return state;
  const [version, objects] = state;
  let matching = objects.filter(request.match);
  if (token) matching = matching.filter((object) => keyOf(object) > token.start);
  const limit = limitParam === "" || query.get("resourceVersion") === "0" ? 0 : Number(limitParam);
  const page = limit > 0 ? matching.slice(0, limit) : matching;
  const metadata: Record<string, unknown> = { resourceVersion: String(version) };
  const last = page[page.length - 1];
  if (limit > 0 && matching.length > page.length && last) {
    metadata.continue = encodeContinue({ rv: version, start: keyOf(last) });
    metadata.remainingItemCount = matching.length - page.length;
  }
  return jsonResponse({
    kind: `${info.kind}List`,
    apiVersion: apiVersionOf(info),
    metadata,
    items: page.map((object) => withoutTypeMeta(request.encode(object))),
  });
}
