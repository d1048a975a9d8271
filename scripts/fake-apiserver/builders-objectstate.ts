/**
 * Builders for what the object-state source reads besides pods, nodes and Deployments:
 * discovery.k8s.io/v1 EndpointSlices of a Service (labelled kubernetes.io/service-name, owned by
 * the Service, each endpoint ready or not) and policy/v1 PodDisruptionBudgets with their status.
 * Pure functions returning plain objects; the scenario stores them.
 */
import type { KubeObject } from "./selectors.ts";

export interface EndpointSliceInput {
  namespace?: string;
  /** The Service the slice belongs to. */
  service: string;
  /** Slice name; default `<service>-<n>` with n = 0. */
  name?: string;
  /** One entry per endpoint: its `conditions.ready`. */
  ready: boolean[];
  /** The Service's UID, written as the slice's owner reference when given. */
  serviceUid?: string;
}

export function endpointSlice(input: EndpointSliceInput): KubeObject {
  return {
    apiVersion: "discovery.k8s.io/v1",
    kind: "EndpointSlice",
    metadata: {
      name: input.name ?? `${input.service}-0`,
      namespace: input.namespace ?? "default",
      labels: { "kubernetes.io/service-name": input.service, "endpointslice.kubernetes.io/managed-by": "fake" },
      ...(input.serviceUid
        ? {
            ownerReferences: [
              { apiVersion: "v1", kind: "Service", name: input.service, uid: input.serviceUid, controller: true },
            ],
          }
        : {}),
    },
    addressType: "IPv4",
    endpoints: input.ready.map((ready, index) => ({
      addresses: [`10.1.0.${index + 1}`],
      conditions: { ready, serving: ready, terminating: false },
    })),
    ports: [{ name: "http", port: 8080, protocol: "TCP" }],
  };
}

export interface PodDisruptionBudgetInput {
  namespace?: string;
  name: string;
  disruptionsAllowed: number;
  currentHealthy?: number;
  expectedPods?: number;
  minAvailable?: number;
}

export function podDisruptionBudget(input: PodDisruptionBudgetInput): KubeObject {
  const expected = input.expectedPods ?? input.currentHealthy ?? 0;
  return {
    apiVersion: "policy/v1",
    kind: "PodDisruptionBudget",
    metadata: { name: input.name, namespace: input.namespace ?? "default" },
    spec: { minAvailable: input.minAvailable ?? 1, selector: { matchLabels: { app: input.name } } },
    status: {
      disruptionsAllowed: input.disruptionsAllowed,
      currentHealthy: input.currentHealthy ?? expected,
      desiredHealthy: input.minAvailable ?? 1,
      expectedPods: expected,
      observedGeneration: 1,
    },
  };
}
