/**
 * Builders for the objects the expiry and gateway sources read (D384, D387): TLS Secrets,
 * webhook configurations with a CA bundle, cert-manager Certificates, Gateway API Gateways and
 * HTTPRoutes with status conditions. Tests pass them to `scenario.create` / `apply`; PEM text is
 * base64-encoded here as the apiserver stores it.
 */
import type { KubeObject } from "./selectors.ts";

export interface GatewayConditionInput {
  type: "Programmed" | "Accepted" | "ResolvedRefs" | string;
  status: "True" | "False" | "Unknown";
  reason: string;
  message?: string;
  observedGeneration: number;
  /** RFC 3339; default now. */
  lastTransitionTime?: string;
}

const condition = (input: GatewayConditionInput) => ({
  message: "",
  lastTransitionTime: new Date().toISOString(),
  ...input,
});

export function tlsSecret(namespace: string, name: string, certificatePem: string): KubeObject {
  return {
    apiVersion: "v1",
    kind: "Secret",
    type: "kubernetes.io/tls",
    metadata: { namespace, name },
    data: { "tls.crt": btoa(certificatePem), "tls.key": btoa("unused") },
  };
}

export function validatingWebhooks(name: string, webhooks: { name: string; caPem: string }[]): KubeObject {
  return {
    apiVersion: "admissionregistration.k8s.io/v1",
    kind: "ValidatingWebhookConfiguration",
    metadata: { name },
    webhooks: webhooks.map((hook) => ({ name: hook.name, clientConfig: { caBundle: btoa(hook.caPem) } })),
  };
}

export function certificate(
  namespace: string,
  name: string,
  status: { notAfter?: string; lastFailureTime?: string; conditions?: Record<string, unknown>[] },
): KubeObject {
  return { apiVersion: "cert-manager.io/v1", kind: "Certificate", metadata: { namespace, name }, status };
}

export function gateway(input: {
  namespace: string;
  name: string;
  generation: number;
  conditions: GatewayConditionInput[];
  listeners?: { name: string; conditions: GatewayConditionInput[] }[];
}): KubeObject {
  return {
    apiVersion: "gateway.networking.k8s.io/v1",
    kind: "Gateway",
    metadata: { namespace: input.namespace, name: input.name, generation: input.generation },
    spec: { gatewayClassName: "example", listeners: [] },
    status: {
      conditions: input.conditions.map(condition),
      listeners: (input.listeners ?? []).map((listener) => ({
        name: listener.name,
        conditions: listener.conditions.map(condition),
      })),
    },
  };
}

export function httpRoute(input: {
  namespace: string;
  name: string;
  generation: number;
  parents: { gateway: string; conditions: GatewayConditionInput[] }[];
}): KubeObject {
  return {
    apiVersion: "gateway.networking.k8s.io/v1",
    kind: "HTTPRoute",
    metadata: { namespace: input.namespace, name: input.name, generation: input.generation },
    spec: { parentRefs: input.parents.map((parent) => ({ name: parent.gateway })) },
    status: {
      parents: input.parents.map((parent) => ({
        parentRef: { name: parent.gateway },
        controllerName: "example.com/gateway",
        conditions: parent.conditions.map(condition),
      })),
    },
  };
}
