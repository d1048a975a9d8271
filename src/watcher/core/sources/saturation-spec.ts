/**
 * The saturation source's spec (D389): polls, not informers. Every `--saturation-interval` it
 * reads metrics.k8s.io/v1beta1 PodMetrics, the pods list (paged: the containers' limits) and, for
 * PVCs, the nodes list and each node's kubelet stats summary through `nodes/proxy`. It runs only
 * where discovery serves `metrics.k8s.io/v1beta1 pods` (`auto`: one line, install metrics-server;
 * named: refused). `get nodes/proxy` is optional: denied, the node stats are not read and the
 * source runs without PVC forecasts, said on its startup line. The node stats fan out one GET per
 * node, so sources/saturation-runner.ts runs that poll itself (D391); DetectorSource runs the
 * others. Pure.
 */
import type { AccessCheck } from "../access-check.ts";
import type { SourcePoll, SourceSpec } from "../source-spec.ts";
import {
  SATURATION_DEFAULTS,
  SATURATION_POLLS,
  SaturationDetector,
  type SaturationSettings,
} from "./saturation-detector.ts";

/** Pods per page of the limits list. */
export const SATURATION_PAGE_SIZE = 500;

const METRICS = "metrics.k8s.io";

/** The grant without which the source has no PVC forecasts (GKE Autopilot denies it to everyone). */
export const NODE_PROXY: AccessCheck = { verb: "get", group: "", resource: "nodes", subresource: "proxy" };

function saturationPolls(settings: Pick<SaturationSettings, "intervalMs">): SourcePoll[] {
  const everyMs = settings.intervalMs;
  return [
    { name: SATURATION_POLLS.metrics, path: `/apis/${METRICS}/v1beta1/pods`, everyMs },
    { name: SATURATION_POLLS.pods, path: "/api/v1/pods", everyMs, pageSize: SATURATION_PAGE_SIZE },
    // The nodes list, then each node's /proxy/stats/summary (the runner's fan-out).
    {
      name: SATURATION_POLLS.stats,
      path: "/api/v1/nodes",
      everyMs,
      optional: [NODE_PROXY],
      loses: "no PVC forecasts",
    },
  ];
}

export const SATURATION_SPEC: SourceSpec<SaturationSettings> = {
  name: "saturation",
  reasons: ["forecast_cpu", "forecast_memory", "forecast_pvc"],
  scope: "cluster",
  required: [
    { verb: "get", group: METRICS, resource: "pods" },
    { verb: "list", group: METRICS, resource: "pods" },
    { verb: "list", group: "", resource: "pods" },
    { verb: "list", group: "", resource: "nodes" },
  ],
  discovery: { groupVersion: `${METRICS}/v1beta1`, resources: ["pods"], missing: "install metrics-server" },
  watches: [],
  polls: saturationPolls(SATURATION_DEFAULTS),
  scoped: (settings) => ({ required: SATURATION_SPEC.required, polls: saturationPolls(settings) }),
  detector: (settings) => new SaturationDetector(settings),
};
