/**
 * Non-session routes: /healthz (exact path, no identities or counts in the body, 503 when a
 * check fails, 405 on other methods), /metrics (Prometheus text, `spar_*`) and /whoami.
 */
import { SparError } from "../../core/errors.ts";
import { json } from "../http/responses.ts";
import type { AttachContext } from "./attach-context.ts";
import { Elysia } from "elysia";
import { withCaller } from "./route-context.ts";

export function daemonRoutes(context: AttachContext) {
  return new Elysia({ name: "spar.attach.daemon" })
    .use(withCaller)
    .get("/healthz", async () => {
      const checks = await context.checks();
      const ok = Object.values(checks).every((state) => state === "ready");
      return json(ok ? 200 : 503, Object.keys(checks).length > 0 ? { ok, checks } : { ok });
    })
    .get("/metrics", ({ caller }) => {
      // Every tenant's activity is in there: with per-caller auth, admins only.
      if (context.identitiesRequired && !caller.admin) {
        throw new SparError(
          "forbidden",
          "/metrics is for admins on a daemon with per-caller auth (attach.multi_session.auth.admin_identities)",
        );
      }
      return new Response(context.metrics.render(), { headers: { "content-type": "text/plain; version=0.0.4" } });
    })
    .get("/whoami", ({ caller }) =>
      json(200, {
        identity: caller.identity,
        admin: caller.admin,
        source: caller.source,
        ...(caller.source === "asserted" && caller.proxyBy ? { proxy_by: caller.proxyBy } : {}),
      }),
    );
}
