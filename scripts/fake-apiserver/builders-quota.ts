/**
 * Builders for what the quota source reads: v1 ResourceQuotas with their `status.hard` and
 * `status.used` (the quota controller's work in a real cluster, written here by the scenario).
 * Pure functions returning plain objects; the scenario stores them.
 */
import type { KubeObject } from "./selectors.ts";

export interface ResourceQuotaInput {
  namespace?: string;
  name: string;
  /** Limits by resource (`{"requests.cpu": "2", pods: "10"}`), also written as `spec.hard`. */
  hard: Record<string, string>;
  /** Usage by resource; a resource left out reads as unused. */
  used?: Record<string, string>;
}

export function resourceQuota(input: ResourceQuotaInput): KubeObject {
  return {
    apiVersion: "v1",
    kind: "ResourceQuota",
    metadata: { name: input.name, namespace: input.namespace ?? "default" },
    spec: { hard: { ...input.hard } },
    status: { hard: { ...input.hard }, used: { ...(input.used ?? {}) } },
  };
}
