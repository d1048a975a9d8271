/**
 * Non-session routes: /healthz (exact path, no identities or counts in the body, 503 when a
 * check fails, 405 on other methods), /metrics (Prometheus text, `spar_*`) and /whoami.
 */
import { SparError } from "../../core/errors.ts";
import { json } from "../http/responses.ts";
import type { AttachContext } from "./attach-context.ts";
import { Elysia } from "elysia";
import { withCaller } from "../http/with-caller.ts";
import * as v from "valibot";
import { responses } from "../http/wire-schemas.ts";

const Health = v.object({
  ok: v.boolean(),
  checks: v.optional(v.record(v.string(), v.picklist(["ready", "failed", "timeout"]))),
});
const Whoami = v.object({
  identity: v.string(),
  admin: v.boolean(),
  source: v.string(),
  proxy_by: v.optional(v.string()),
});
const MetricsText = v.pipe(v.string(), v.description("Prometheus text format, spar_* series"));
const DAEMON = ["daemon"];

export function daemonRoutes(context: AttachContext) {
  return new Elysia({ name: "spar.attach.daemon" })
    .use(withCaller)
    .get(
      "/healthz",
      async () => {
        const checks = await context.checks();
        const ok = Object.values(checks).every((state) => state === "ready");
        return json(ok ? 200 : 503, Object.keys(checks).length > 0 ? { ok, checks } : { ok });
      },
      {
        response: responses({ 200: Health, 503: Health }),
        detail: { summary: "Readiness: 200 when every check passes (no auth)", tags: DAEMON },
      },
    )
    .get(
      "/metrics",
      ({ caller }) => {
        // Every tenant's activity is in there: with per-caller auth, admins only.
        if (context.identitiesRequired && !caller.admin) {
          throw new SparError(
            "forbidden",
            "/metrics is for admins on a daemon with per-caller auth (attach.multi_session.auth.admin_identities)",
          );
        }
        return new Response(context.metrics.render(), { headers: { "content-type": "text/plain; version=0.0.4" } });
      },
      {
        response: responses({ 200: MetricsText }),
        detail: { summary: "Prometheus metrics (admins only with per-caller auth)", tags: DAEMON },
      },
    )
    .get(
      "/whoami",
      ({ caller }) =>
        json(200, {
          identity: caller.identity,
          admin: caller.admin,
          source: caller.source,
          ...(caller.source === "asserted" && caller.proxyBy ? { proxy_by: caller.proxyBy } : {}),
        }),
      { response: responses({ 200: Whoami }), detail: { summary: "The verified caller", tags: DAEMON } },
    );
}
