/**
 * Kubeconfig and certificate helpers for clients of the fake apiserver: a kubeconfig (JSON, which
 * is valid YAML for kubectl and client-node) with a bearer token or client certificates, and a
 * throwaway CA, server certificate (localhost, 127.0.0.1) and client certificate made with the
 * `openssl` command. Key type is EC P-256 (fast to generate; Go, Bun and OpenSSL all accept it).
 */
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";

export interface KubeconfigInput {
  server: string;
  token?: string;
  /** CA certificate (PEM) the client trusts for the server. */
  caPem?: string;
  clientCertPem?: string;
  clientKeyPem?: string;
  insecureSkipTlsVerify?: boolean;
  /** Context, cluster and user name. Default `fake`. */
  name?: string;
  namespace?: string;
}

const base64 = (text: string): string => Buffer.from(text).toString("base64");

export function kubeconfigText(input: KubeconfigInput): string {
  const name = input.name ?? "fake";
  const cluster: Record<string, unknown> = { server: input.server };
  if (input.caPem) cluster["certificate-authority-data"] = base64(input.caPem);
  if (input.insecureSkipTlsVerify) cluster["insecure-skip-tls-verify"] = true;
  const user: Record<string, unknown> = {};
  if (input.token) user.token = input.token;
  if (input.clientCertPem) user["client-certificate-data"] = base64(input.clientCertPem);
  if (input.clientKeyPem) user["client-key-data"] = base64(input.clientKeyPem);
  const context: Record<string, unknown> = {
    cluster: name,
    user: name,
    ...(input.namespace ? { namespace: input.namespace } : {}),
  };
  const config = {
    apiVersion: "v1",
    kind: "Config",
    clusters: [{ name, cluster }],
    users: [{ name, user }],
    contexts: [{ name, context }],
    "current-context": name,
    preferences: {},
  };
  return `${JSON.stringify(config, null, 2)}\n`;
}

export function writeKubeconfig(path: string, input: KubeconfigInput): string {
  writeFileSync(path, kubeconfigText(input), { mode: 0o600 });
  return path;
}

export interface CertificateSet {
  dir: string;
  caCert: string;
  caKey: string;
  serverCert: string;
  serverKey: string;
  clientCert: string;
  clientKey: string;
}

function openssl(dir: string, args: string[]): void {
  const result = Bun.spawnSync(["openssl", ...args], { cwd: dir, stderr: "pipe", stdout: "ignore" });
  if (result.exitCode !== 0) throw new Error(`openssl ${args.join(" ")}: ${result.stderr.toString()}`);
}

function issue(dir: string, name: string, subject: string, extensions: string): void {
  openssl(dir, [
    "req",
    "-new",
    "-newkey",
    "ec",
    "-pkeyopt",
    "ec_paramgen_curve:prime256v1",
    "-nodes",
    "-keyout",
    `${name}.key`,
    "-out",
    `${name}.csr`,
    "-subj",
    subject,
  ]);
  writeFileSync(join(dir, `${name}.ext`), extensions);
  openssl(dir, [
    "x509",
    "-req",
    "-in",
    `${name}.csr`,
    "-CA",
    "ca.crt",
    "-CAkey",
    "ca.key",
    "-CAcreateserial",
    "-out",
    `${name}.crt`,
    "-days",
    "2",
    "-extfile",
    `${name}.ext`,
  ]);
}

/**
 * A CA, a server certificate for localhost/127.0.0.1 and a client certificate whose subject is
 * `CN=<user>,O=<group>` (how Kubernetes names a certificate user), written to `dir`; returns PEM text.
 */
export function generateCertificates(dir: string, client: { user?: string; group?: string } = {}): CertificateSet {
  mkdirSync(dir, { recursive: true });
  openssl(dir, [
    "req",
    "-x509",
    "-newkey",
    "ec",
    "-pkeyopt",
    "ec_paramgen_curve:prime256v1",
    "-nodes",
    "-keyout",
    "ca.key",
    "-out",
    "ca.crt",
    "-days",
    "2",
    "-subj",
    "/CN=fake-apiserver-ca",
  ]);
  issue(
    dir,
    "server",
    "/CN=fake-apiserver",
    "subjectAltName=DNS:localhost,IP:127.0.0.1\nextendedKeyUsage=serverAuth\n",
  );
  issue(
    dir,
    "client",
    `/O=${client.group ?? "system:masters"}/CN=${client.user ?? "watcher"}`,
    "extendedKeyUsage=clientAuth\n",
  );
  const read = (file: string) => readFileSync(join(dir, file), "utf8");
  return {
    dir,
    caCert: read("ca.crt"),
    caKey: read("ca.key"),
    serverCert: read("server.crt"),
    serverKey: read("server.key"),
    clientCert: read("client.crt"),
    clientKey: read("client.key"),
  };
}
