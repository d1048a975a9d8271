/**
 * The triage recipe's files for a local run (the demo, scripts/demo-triage, and the end-to-end
 * test): the agent's config (multi-session auth with the watcher as a proxy for the on-call owner,
 * plan-first, wait_and_verify over the Kubernetes server's read tools, the `oncall` alert target,
 * the write tools disabled), its caller table, and the tool-server catalog that runs the real
 * kubernetes-mcp-server read-only against a kubeconfig. The same keys deploy/ ships
 * (docs/deploy.md); here everything points at local processes.
 */
import { writeFileSync } from "node:fs";
import { join, resolve } from "node:path";

export const REPO = resolve(import.meta.dir, "..", "..");
export const OWNER = "oncall@example.com";
export const ONCALL_TOKEN = "tok-oncall";
export const WATCHER_TOKEN = "tok-watcher";
/** The Kubernetes tool server (npm `kubernetes-mcp-server`, a devDependency). */
export const K8S_MCP_SERVER = join(REPO, "node_modules", ".bin", "kubernetes-mcp-server");

/** The read tools wait_and_verify may poll, as the recipe spells them (`<server>_<tool>`). */
export const POLL_ALLOW = [
  "k8s_pods_get",
  "k8s_resources_get",
  "k8s_events_list",
  "k8s_pods_log",
  "k8s_resources_list",
];

export interface RecipeFiles {
  /** Flags for `spar agent` naming the files written (add the model, listen and store flags). */
  agentArgs: string[];
  /** The environment variable the alert target reads its URL from. */
  alertUrlEnv: string;
}

/** Writes the recipe into `dir`: the agent reaches the cluster through `kubeconfig`. */
export function writeTriageRecipe(dir: string, kubeconfig: string): RecipeFiles {
  const callers = join(dir, "callers.yaml");
  writeFileSync(
    callers,
    [
      "callers:",
      "  - identity: watcher",
      "    token_env: WATCHER_TOKEN",
      `  - identity: ${OWNER}`,
      `    token_sha256: ${new Bun.CryptoHasher("sha256").update(ONCALL_TOKEN).digest("hex")}`,
      "",
    ].join("\n"),
  );
  const catalog = join(dir, "mcp.json");
  writeFileSync(
    catalog,
    JSON.stringify({
      version: 1,
      servers: {
        k8s: {
          transport: "stdio",
          command: K8S_MCP_SERVER,
          args: ["--read-only", "--list-output=yaml", "--disable-multi-cluster", `--kubeconfig=${kubeconfig}`],
          env_mode: "clean",
        },
      },
    }),
  );
  const config = join(dir, "config.json");
  writeFileSync(
    config,
    JSON.stringify({
      attach: { multi_session: { auth: { proxy_identities: ["watcher"] } } },
      permissions: { mode: "yolo", require_plan_artifact: true },
      tools: {
        disable: ["bash", "write_file", "edit_file", "delete_file", "fetch_url"],
        wait_and_verify: { poll_allow: POLL_ALLOW, max_timeout_seconds: 300, max_attempts: 40 },
      },
      alerts: {
        rate_limit_per_target: "10/min",
        targets: [
          { name: "oncall", url_env: "ONCALL_WEBHOOK_URL", template: "generic", description: "Page the on-call SRE" },
        ],
      },
    }),
  );
  return {
    agentArgs: [
      "--multi-session",
      `--auth-table=${callers}`,
      `--config=${config}`,
      `--mcp-config=${catalog}`,
      `--skills-dir=${join(REPO, "skills")}`,
      `--plans-dir=${join(dir, "plans")}`,
    ],
    alertUrlEnv: "ONCALL_WEBHOOK_URL",
  };
}

/** Flags for `spar watcher watch` injecting into `daemonUrl` as the watcher for the on-call owner. */
export function watcherArgs(daemonUrl: string, kubeconfig: string): string[] {
  return [
    `--daemon-url=${daemonUrl}`,
    "--token-env=WATCHER_TOKEN",
    `--owner=${OWNER}`,
    "--cluster-name=kind-test",
    `--kubeconfig=${kubeconfig}`,
    "--sources=cluster-events",
    "--storm=off",
    "--enrich=off",
    // One inject per incident here: no `resolved` follow-up within the run.
    "--recovery-stable-for=1h",
    "--metrics-addr=127.0.0.1:0",
  ];
}
