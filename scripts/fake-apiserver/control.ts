/**
 * The HTTP control surface under `/_fake/`, so a spawned fake (`bun scripts/fake-apiserver/main.ts`)
 * can be driven like the in-process one: objects, kubelet-style events, pod logs, grants,
 * bookmarks, faults, restart, and the request log. Unauthenticated (a test tool bound to
 * loopback). Bodies are JSON; a refused change answers a Status (400/404), never a crash.
 * The route table is in docs/fake-apiserver.md.
 */
import type { Grant } from "./access.ts";
import type { EventInput, EventV1Input, NodeInput, PodInput, WorkloadInput } from "./builders.ts";
import { deployment, node, pod, replicaSet } from "./builders.ts";
import type { FailRule } from "./faults.ts";
import type { ObjectRef, Scenario } from "./scenario.ts";
import type { KubeObject } from "./selectors.ts";
import { badRequest, failure, jsonResponse } from "./status.ts";
import type { FakeApiserver, FaultControls } from "./server.ts";
import type { EndpointSliceInput, PodDisruptionBudgetInput } from "./builders-objectstate.ts";
import type { ResourceQuotaInput } from "./builders-quota.ts";
import type { ContainerUsageInput, VolumeUsageInput } from "./builders-metrics.ts";
import {
  type AutoscalerEventInput,
  type AutoscalerGroupInput,
  type CapacityNodeInput,
  type CapacityPodInput,
  autoscalerStatusText,
  autoscalerStatusYaml,
} from "./builders-capacity.ts";
import {
  type ComputeClassInput,
  computeClass,
  type SpreadDeploymentInput,
  type SpreadPodInput,
  spreadDeployment,
  spreadPod,
  type ZonedNodeInput,
  zonedNode,
} from "./builders-topology.ts";

export interface ControlTarget {
  scenario: Scenario;
  faults: FaultControls;
  server: FakeApiserver;
}

type Body = Record<string, unknown>;
type Route = (body: Body, url: URL, target: ControlTarget) => unknown;

function objectsRoute(body: Body, url: URL, { scenario }: ControlTarget): unknown {
  const mode = url.searchParams.get("mode") ?? "apply";
  const object = body as KubeObject;
  if (mode === "create") return scenario.create(object);
  if (mode === "update") return scenario.update(object);
  return scenario.apply(object);
}

function failRule(body: Body): FailRule {
  if (typeof body.code !== "number") throw new Error("fail-next needs a numeric code");
  const rule: FailRule = { code: body.code };
  if (typeof body.count === "number") rule.count = body.count;
  if (typeof body.message === "string") rule.message = body.message;
  if (typeof body.method === "string") rule.method = body.method;
  if (typeof body.path === "string") rule.path = body.path;
  if (typeof body.pathRegex === "string") rule.path = new RegExp(body.pathRegex);
  if (body.verb === "list" || body.verb === "watch") rule.verb = body.verb;
  if (typeof body.retryAfterSeconds === "number") rule.retryAfterSeconds = body.retryAfterSeconds;
  return rule;
}

const POST_ROUTES: Record<string, Route> = {
  "/_fake/objects": objectsRoute,
  "/_fake/objects/get": (body, _url, { scenario }) => scenario.get(body as unknown as ObjectRef) ?? null,
  "/_fake/objects/patch": (body, _url, { scenario }) =>
    scenario.patch(body.ref as ObjectRef, body.patch as Record<string, unknown>),
  "/_fake/objects/delete": (body, _url, { scenario }) => scenario.delete(body as unknown as ObjectRef),
  "/_fake/pods": (body, _url, { scenario }) => scenario.apply(pod(body as unknown as PodInput)),
  "/_fake/nodes": (body, _url, { scenario }) => scenario.apply(node(body as unknown as NodeInput)),
  "/_fake/replicasets": (body, _url, { scenario }) => scenario.apply(replicaSet(body as unknown as WorkloadInput)),
  "/_fake/deployments": (body, _url, { scenario }) => scenario.apply(deployment(body as unknown as WorkloadInput)),
  "/_fake/endpointslices": (body, _url, { scenario }) =>
    scenario.applyEndpointSlice(body as unknown as EndpointSliceInput),
  "/_fake/poddisruptionbudgets": (body, _url, { scenario }) =>
    scenario.applyPodDisruptionBudget(body as unknown as PodDisruptionBudgetInput),
  "/_fake/resourcequotas": (body, _url, { scenario }) =>
    scenario.applyResourceQuota(body as unknown as ResourceQuotaInput),
  "/_fake/metrics/usage": (body, _url, { scenario }) =>
    scenario.setContainerUsage(body as unknown as ContainerUsageInput),
  "/_fake/metrics/volumes": (body, _url, { scenario }) => {
    scenario.setVolumeUsage(body as unknown as VolumeUsageInput);
    return { ok: true };
  },
  "/_fake/events": (body, url, { scenario }) =>
    url.searchParams.get("api") === "events.k8s.io"
      ? scenario.createEventV1(body as unknown as EventV1Input)
      : scenario.recordEvent(body as unknown as EventInput),
  "/_fake/logs": (body, _url, { scenario }) => {
    const [namespace, podName, container] = [body.namespace, body.pod, body.container].map((value) =>
      String(value ?? ""),
    );
    if (body.append === true)
      scenario.appendPodLogs(namespace ?? "", podName ?? "", container ?? "", String(body.current ?? ""));
    else
      scenario.setPodLogs(namespace ?? "", podName ?? "", container ?? "", {
        current: String(body.current ?? ""),
        ...(typeof body.previous === "string" ? { previous: body.previous } : {}),
      });
    return { ok: true };
  },
  "/_fake/grants": (body, _url, { scenario }) => {
    scenario.setGrants(Array.isArray(body.grants) ? (body.grants as Grant[]) : undefined);
    return { ok: true };
  },
  "/_fake/bookmark": (_body, _url, { scenario }) => ({ sent: scenario.bookmark() }),
  // An API group/version taken away or served again (a CRD uninstalled; its objects kept).
  "/_fake/apis": (body, _url, { scenario }) => {
    const { groupVersion, served } = body as { groupVersion?: unknown; served?: unknown };
    if (typeof groupVersion !== "string" || typeof served !== "boolean")
      throw new Error("fake apiserver: /_fake/apis needs {groupVersion: string, served: boolean}");
    scenario.setApiServed(groupVersion, served);
    return { groupVersion, served };
  },
  "/_fake/faults/drop-watches": (body, _url, { faults }) => ({
    dropped: faults.dropWatches(body.mode === "reset" ? "reset" : "close"),
  }),
  "/_fake/faults/fail-next": (body, _url, { faults }) => {
    faults.failNext(failRule(body));
    return { ok: true };
  },
  "/_fake/faults/expire": (body, _url, { faults }) => ({
    errored: faults.expireResourceVersions({ midStream: body.midStream === true }),
  }),
  "/_fake/faults/watch-error": (body, _url, { faults }) => ({
    errored: faults.watchError(Number(body.code ?? 500), typeof body.message === "string" ? body.message : undefined),
  }),
  "/_fake/faults/clear": (_body, _url, { faults }) => {
    faults.clear();
    return { ok: true };
  },
  "/_fake/restart": (body, _url, { server }) => {
    const keepState = body.keepState !== false;
    const downtimeMs = typeof body.downtimeMs === "number" ? body.downtimeMs : 0;
    setTimeout(() => void server.restart({ keepState, downtimeMs }), 20);
    return { restarting: true, keepState, downtimeMs };
  },
  "/_fake/requests/clear": (_body, _url, { server }) => {
    server.clearRequests();
    return { ok: true };
  },
  "/_fake/capacity/nodes": (body, _url, { scenario }) =>
    scenario.applyCapacityNode(body as unknown as CapacityNodeInput),
  "/_fake/capacity/pods": (body, _url, { scenario }) => scenario.applyCapacityPod(body as unknown as CapacityPodInput),
  "/_fake/capacity/autoscaler-status": (body, _url, { scenario }) => scenario.setAutoscalerStatus(statusText(body)),
  "/_fake/capacity/events": (body, _url, { scenario }) =>
    scenario.recordAutoscalerEvent(body as unknown as AutoscalerEventInput),
  // topology-drift and compute-class (builders-topology.ts).
  "/_fake/zoned-nodes": (body, _url, { scenario }) => scenario.apply(zonedNode(body as unknown as ZonedNodeInput)),
  "/_fake/spread-deployments": (body, _url, { scenario }) =>
    scenario.apply(spreadDeployment(body as unknown as SpreadDeploymentInput)),
  "/_fake/spread-pods": (body, _url, { scenario }) => scenario.apply(spreadPod(body as unknown as SpreadPodInput)),
  "/_fake/computeclasses": (body, _url, { scenario }) =>
    scenario.apply(computeClass(body as unknown as ComputeClassInput)),
};

/** `{status}` as written, or `{groups, format?: "yaml" | "text"}` rendered in that shape. */
function statusText(body: Body): string {
  if (typeof body.status === "string") return body.status;
  if (!Array.isArray(body.groups)) throw new Error("autoscaler-status needs status (text) or groups");
  const groups = body.groups as AutoscalerGroupInput[];
  return body.format === "text" ? autoscalerStatusText(groups) : autoscalerStatusYaml(groups);
}

const GET_ROUTES: Record<string, (target: ControlTarget) => unknown> = {
  "/_fake/state": ({ scenario, server }) => ({
    url: server.url,
    resourceVersion: scenario.resourceVersion,
    openWatches: server.openWatches(),
  }),
  "/_fake/requests": ({ server }) => server.requests(),
};

export async function handleControl(request: Request, url: URL, target: ControlTarget): Promise<Response> {
  const pathname = url.pathname.replace(/\/+$/, "");
  if (request.method === "GET") {
    const route = GET_ROUTES[pathname];
    return route ? jsonResponse(route(target)) : failure(404, `no control route GET ${pathname}`);
  }
  const route = request.method === "POST" ? POST_ROUTES[pathname] : undefined;
  if (!route) return failure(404, `no control route ${request.method} ${pathname}`);
  let body: Body = {};
  const text = await request.text();
  if (text.trim() !== "") {
    try {
      const parsed = JSON.parse(text) as unknown;
      if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed))
        return badRequest("the control body must be a JSON object");
      body = parsed as Body;
    } catch {
      return badRequest("the control body is not valid JSON");
    }
  }
  try {
    return jsonResponse(route(body, url, target) ?? null);
  } catch (error) {
    return badRequest(error instanceof Error ? error.message : String(error));
  }
}
