/**
 * The embedded dashboard on the attach listener (`--ui-dir`, D368): `/ui/*` serves the directory
 * (static-directory.ts) and `GET /config` answers the discovery descriptor the mast-web dashboard
 * asks its own origin for at boot (D370), so a dashboard served from `/ui/` drives this daemon
 * with no setup dialog. Both sit behind the listener's guards like every API route; neither exists
 * without a UI directory.
 */
import { Elysia } from "elysia";
import { json } from "../http/responses.ts";
import { staticDirectory } from "../http/static-directory.ts";
import { withCaller } from "../http/with-caller.ts";
import type { Caller } from "../http/caller-auth.ts";
import type { AllowedOrigins } from "../http/cors-policy.ts";

export const UI_PREFIX = "/ui";

/** How the listener authenticates, as the descriptor names it. */
export type UiAuthMode = "none" | "bearer" | "mtls";

export interface UiSettings {
  /** The directory's real path (checked at startup). */
  root: string;
  authMode: UiAuthMode;
}

/**
 * The descriptor (D370): `proxy` mode with the API at the origin's root (`/`), the one shape the
 * dashboard turns into a same-origin endpoint without asking; one daemon, no backend list; the
 * caller this request authenticated as (`local` in single-user mode). `no-store`: the body names the caller.
 */
export function configDescriptor(settings: UiSettings, caller: Caller) {
  return {
    mode: "proxy",
    api_prefix: "/",
    auth: {
      mode: settings.authMode,
      // The route sits behind the listener's gate: with one, reaching it means authenticated.
      authenticated: settings.authMode !== "none" || caller.source !== "anonymous",
      identity: caller.identity,
    },
    multi_daemon: false,
    backends: [],
  };
}

/** The attach context's browser parts from the settings (`--ui-dir`, `--attach-cors-origins`). */
export function browserParts(
  settings: { uiDir?: string; corsOrigins: AllowedOrigins },
  authMode: UiAuthMode,
): { ui?: UiSettings; corsOrigins?: AllowedOrigins } {
  return {
    ...(settings.uiDir !== undefined ? { ui: { root: settings.uiDir, authMode } } : {}),
    ...(settings.corsOrigins.size > 0 ? { corsOrigins: settings.corsOrigins } : {}),
  };
}

export function uiRoutes(settings: UiSettings) {
  return new Elysia({ name: "spar.attach.ui", seed: settings.root })
    .use(withCaller)
    .use(staticDirectory(UI_PREFIX, settings.root))
    .get("/config", ({ caller }) => json(200, configDescriptor(settings, caller), { "cache-control": "no-store" }), {
      detail: { summary: "The dashboard's discovery descriptor (only with --ui-dir)", tags: ["daemon"] },
    });
}
