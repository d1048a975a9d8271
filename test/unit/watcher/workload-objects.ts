/**
 * Builders of the Kubernetes objects the rollout, workload, autoscaling and degradation detector
 * tests feed in: just the fields those detectors read.
 */
type Json = Record<string, unknown>;

export const T0 = Date.parse("2026-07-01T12:00:00Z");
export const MIN = 60_000;

export function iso(ms: number): string {
  return new Date(ms).toISOString();
}

function metadata(uid: string, name: string, namespace = "shop", extra: Json = {}): Json {
  return { uid, name, namespace, ...extra };
}

function owned(kind: string, name: string, uid: string): Json {
  return { ownerReferences: [{ kind, name, uid, controller: true }] };
}

export function deployment(uid: string, name: string): Json {
  return { metadata: metadata(uid, name) };
}

export function replicaSet(uid: string, deploymentUid: string, revision: number, desired: number, ready: number): Json {
  return {
    metadata: metadata(uid, `web-${revision}`, "shop", {
      annotations: { "deployment.kubernetes.io/revision": String(revision) },
      ...owned("Deployment", "web", deploymentUid),
    }),
    spec: { replicas: desired },
    status: { readyReplicas: ready },
  };
}

export function statefulSet(uid: string, current: string, update: string): Json {
  return { metadata: metadata(uid, "db"), status: { currentRevision: current, updateRevision: update } };
}

export function pod(
  uid: string,
  options: { ready: boolean; owner?: [string, string, string]; revision?: string },
): Json {
  return {
    metadata: metadata(uid, `pod-${uid}`, "shop", {
      ...(options.owner ? owned(...options.owner) : {}),
      ...(options.revision ? { labels: { "controller-revision-hash": options.revision } } : {}),
    }),
    status: { conditions: [{ type: "Ready", status: options.ready ? "True" : "False" }] },
  };
}

export function job(uid: string, failed: boolean, cronJob?: string): Json {
  return {
    metadata: metadata(uid, `job-${uid}`, "batch", cronJob ? owned("CronJob", cronJob, `${cronJob}-uid`) : {}),
    status: failed
      ? {
          conditions: [
            {
              type: "Failed",
              status: "True",
              reason: "BackoffLimitExceeded",
              message: "Job has reached the specified backoff limit",
            },
          ],
        }
      : {},
  };
}

export function cronJob(
  uid: string,
  schedule: string,
  options: { created: number; lastSchedule?: number; suspend?: boolean; timeZone?: string },
): Json {
  return {
    metadata: metadata(uid, `cron-${uid}`, "batch", { creationTimestamp: iso(options.created) }),
    spec: { schedule, suspend: options.suspend ?? false, ...(options.timeZone ? { timeZone: options.timeZone } : {}) },
    status: options.lastSchedule === undefined ? {} : { lastScheduleTime: iso(options.lastSchedule) },
  };
}

export function hpa(
  uid: string,
  options: { current: number; max: number; limited?: [string, string, number]; active?: [string, string, number] },
): Json {
  const conditions: Json[] = [];
  if (options.limited)
    conditions.push({
      type: "ScalingLimited",
      status: options.limited[0],
      reason: options.limited[1],
      lastTransitionTime: iso(options.limited[2]),
    });
  if (options.active)
    conditions.push({
      type: "ScalingActive",
      status: options.active[0],
      reason: options.active[1],
      lastTransitionTime: iso(options.active[2]),
    });
  return {
    metadata: metadata(uid, `hpa-${uid}`),
    spec: { maxReplicas: options.max },
    status: { currentReplicas: options.current, conditions },
  };
}

export function endpointSlice(uid: string, service: string, ready: number, total: number): Json {
  return {
    metadata: metadata(uid, `${service}-${uid}`, "shop", {
      labels: { "kubernetes.io/service-name": service },
      ...owned("Service", service, `${service}-uid`),
    }),
    endpoints: Array.from({ length: total }, (_, index) => ({
      addresses: [`10.0.0.${index}`],
      conditions: { ready: index < ready },
    })),
  };
}
