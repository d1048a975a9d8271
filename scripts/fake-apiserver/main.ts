/**
 * Command line entry of the fake kube-apiserver:
 *
 *   bun scripts/fake-apiserver/main.ts --port 0 --token t0k3n=watcher --kubeconfig-out /tmp/fake.kubeconfig
 *
 * prints the URL as the first stdout line, then serves until SIGTERM/SIGINT. Flags:
 *   --port N             listen port (0 picks a free one; default 0)
 *   --host H             listen address (default 127.0.0.1)
 *   --token T[=USER]     accepted bearer token (repeatable); none means no authentication
 *   --tls-cert F --tls-key F   serve HTTPS with these PEM files
 *   --client-ca F        require client certificates signed by this CA (mTLS)
 *   --generate-certs DIR make a CA, server and client certificate in DIR and serve mTLS with them
 *   --kubeconfig-out F   write a kubeconfig for this server (token or client certificate)
 *   --grants F           JSON file: an array of grants (see access.ts); default allows everything
 *   --objects F          JSON file: an array of objects to apply at startup
 *   --bookmark-interval-ms N   --history-limit N   --expired-watch http|event   --no-control
 * The control surface (/_fake/...) drives the scenario and faults over HTTP (docs/fake-apiserver.md).
 */
import { readFileSync } from "node:fs";
import type { Grant } from "./access.ts";
import { type CertificateSet, generateCertificates, writeKubeconfig } from "./kubeconfig.ts";
import type { KubeObject } from "./selectors.ts";
import { type FakeApiserverOptions, startFakeApiserver } from "./server.ts";

interface CliArgs {
  options: FakeApiserverOptions;
  kubeconfigOut?: string;
  objectsFile?: string;
  certificates?: CertificateSet;
  firstToken?: string;
}

function fail(message: string): never {
  process.stderr.write(`fake-apiserver: ${message}\n`);
  process.exit(2);
}

function integer(flag: string, value: string | undefined): number {
  if (value === undefined || !/^\d+$/.test(value)) fail(`${flag} needs a non-negative integer, got ${String(value)}`);
  return Number(value);
}

export function parseArgs(argv: string[]): CliArgs {
  const options: FakeApiserverOptions = {};
  const args: CliArgs = { options };
  const tls: { cert?: string; key?: string; clientCa?: string } = {};
  for (let index = 0; index < argv.length; index++) {
    const [flag, inline] = (argv[index] ?? "").split(/=(.*)/s, 2) as [string, string | undefined];
    const value = (): string => inline ?? argv[++index] ?? fail(`${flag} needs a value`);
    switch (flag) {
      case "--port":
        options.port = integer(flag, value());
        break;
      case "--host":
        options.hostname = value();
        break;
      case "--token": {
        const [token, user] = value().split("=", 2);
        if (!token) fail("--token needs a value");
        options.tokens = { ...(options.tokens ?? {}), [token]: user || "fake-user" };
        args.firstToken ??= token;
        break;
      }
      case "--tls-cert":
        tls.cert = readFileSync(value(), "utf8");
        break;
      case "--tls-key":
        tls.key = readFileSync(value(), "utf8");
        break;
      case "--client-ca":
        tls.clientCa = readFileSync(value(), "utf8");
        break;
      case "--generate-certs":
        args.certificates = generateCertificates(value());
        break;
      case "--kubeconfig-out":
        args.kubeconfigOut = value();
        break;
      case "--grants":
        options.grants = JSON.parse(readFileSync(value(), "utf8")) as Grant[];
        break;
      case "--objects":
        args.objectsFile = value();
        break;
      case "--bookmark-interval-ms":
        options.bookmarkIntervalMs = integer(flag, value());
        break;
      case "--history-limit":
        options.historyLimit = integer(flag, value());
        break;
      case "--expired-watch": {
        const mode = value();
        if (mode !== "http" && mode !== "event") fail("--expired-watch is http or event");
        options.expiredWatch = mode;
        break;
      }
      case "--no-control":
        options.control = false;
        break;
      default:
        fail(`unknown flag ${flag}`);
    }
  }
  if (args.certificates)
    options.tls = {
      cert: args.certificates.serverCert,
      key: args.certificates.serverKey,
      clientCa: args.certificates.caCert,
    };
  else if (tls.cert || tls.key) {
    if (!tls.cert || !tls.key) fail("--tls-cert and --tls-key go together");
    options.tls = { cert: tls.cert, key: tls.key, ...(tls.clientCa ? { clientCa: tls.clientCa } : {}) };
  } else if (tls.clientCa) fail("--client-ca needs --tls-cert and --tls-key");
  return args;
}

async function main(): Promise<void> {
  const args = parseArgs(process.argv.slice(2));
  const fake = await startFakeApiserver(args.options);
  if (args.objectsFile) {
    for (const object of JSON.parse(readFileSync(args.objectsFile, "utf8")) as KubeObject[])
      fake.scenario.apply(object);
  }
  if (args.kubeconfigOut) {
    const certificates = args.certificates;
    writeKubeconfig(args.kubeconfigOut, {
      server: fake.url,
      ...(args.firstToken ? { token: args.firstToken } : {}),
      ...(certificates
        ? { caPem: certificates.caCert, clientCertPem: certificates.clientCert, clientKeyPem: certificates.clientKey }
        : {}),
      ...(args.options.tls && !certificates ? { insecureSkipTlsVerify: true } : {}),
    });
  }
  process.stdout.write(`${fake.url}\n`);
  if (args.kubeconfigOut) process.stderr.write(`fake-apiserver: kubeconfig written to ${args.kubeconfigOut}\n`);
  const shutdown = () => void fake.stop().then(() => process.exit(0));
  process.on("SIGTERM", shutdown);
  process.on("SIGINT", shutdown);
}

if (import.meta.main) await main();
