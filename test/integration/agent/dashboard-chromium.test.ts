/**
 * The embedded dashboard in a real browser (D368, D370): `spar agent --ui-dir` serving the
 * mast-web dashboard's `web/` folder as vendored (test/clients/mast-web/web, unmodified), driven
 * by headless Chromium. One daemon (echo model, a bearer token) and one browser for the file. The
 * browser cannot put a bearer on a navigation or an EventSource, so the authorized page gets it as
 * an extra header on every request, as an authenticating proxy in front of the daemon would add
 * it; a second, clean context has no token. Every wait is on a DOM condition.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { join } from "node:path";
import type { Browser, Page } from "puppeteer-core";
import { launchChromium } from "../../support/chromium.ts";
import { type Daemon, REPO_ROOT, startDaemon, waitFor } from "../../support/daemon.ts";

// The functions handed to page.evaluate and waitForFunction run in the browser; this project's
// types have no DOM, so its two globals are declared here, for this file only.
declare const document: any;
declare const window: any;

const TOKEN = "dashboard-token";
const WEB = join(REPO_ROOT, "test/clients/mast-web/web");
const WAIT = { timeout: 20_000 };

let daemon: Daemon;
let browser: Browser;
let page: Page;
/** When the page's turn had ended (the reload test waits out the dashboard's replay grace from it). */
let turnEndedAt = 0;
/** The dashboard's replay grace (attach-core/replay.js), plus a margin for the two clocks. */
const REPLAY_GRACE_MS = 2_000 + 250;

beforeAll(async () => {
  [daemon, browser] = await Promise.all([
    startDaemon({ args: ["--attach-token=DASHBOARD_TOKEN", `--ui-dir=${WEB}`], env: { DASHBOARD_TOKEN: TOKEN } }),
    launchChromium(),
  ]);
  page = await browser.newPage();
  await page.setExtraHTTPHeaders({ authorization: `Bearer ${TOKEN}` });
});

afterAll(async () => {
  await browser?.close();
  await daemon?.sigterm();
});

/** Wait for a DOM condition; on timeout, fail showing the transcript the page had. */
async function waitForDom<T>(condition: () => T, what: string) {
  try {
    return await page.waitForFunction(condition, WAIT);
  } catch (error) {
    const transcript = await page.$eval("#output-area", (element) => element.innerHTML).catch(() => "(no page)");
    throw new Error(`${what}: ${(error as Error).message}; transcript:\n${transcript.slice(-3000)}`);
  }
}

/** Type into the dashboard's prompt box and press its SEND button. */
async function submit(text: string): Promise<void> {
  await page.type("#prompt-input", text);
  await page.click("#send-btn");
}

test("Chromium loads /ui/ from the directory with each file's content type; /ui redirects to /ui/", async () => {
  const types = new Map<string, string>();
  page.on("response", (response) =>
    types.set(new URL(response.url()).pathname, response.headers()["content-type"] ?? ""),
  );
  const response = await page.goto(`${daemon.baseUrl}/ui`, { waitUntil: "load" });
  expect(page.url()).toBe(`${daemon.baseUrl}/ui/`);
  expect(response?.status()).toBe(200);
  // Its scripts ran: the protocol layer is on window.
  await page.waitForFunction(
    () => typeof (window as unknown as { AttachClient?: unknown }).AttachClient === "function",
  );
  expect(types.get("/ui/")).toStartWith("text/html");
  expect(types.get("/ui/app.js")).toStartWith("text/javascript");
  expect(types.get("/ui/styles.css")).toStartWith("text/css");
  // The dashboard asks /config once its scripts run: its answer may come after the scripts' globals.
  expect(await waitFor(() => types.get("/config"), 10_000, "the dashboard's /config answer")).toStartWith(
    "application/json",
  );
});

test("the dashboard found /config: no setup dialog, connected to its own origin as the token's caller", async () => {
  // The descriptor's identity first, then /whoami's ("local (anonymous)": the token names no caller).
  await waitForDom(() => document.getElementById("identity-info")?.textContent?.startsWith("local"), "identity shown");
  const modal = await page.$eval("#setup-modal", (element) => element.classList.contains("open"));
  expect(modal).toBe(false);
  const config = await page.evaluate(async () => (await fetch("/config")).json());
  expect(config).toEqual({
    mode: "proxy",
    api_prefix: "/",
    auth: { mode: "bearer", authenticated: true, identity: "local" },
    multi_daemon: false,
    backends: [],
  });
});

test("a turn runs from the page: the prompt typed and sent, the echo answer rendered", async () => {
  await submit("hello from chromium");
  await page.waitForFunction(
    () =>
      [...document.querySelectorAll("#output-area .message.assistant .md-content")].some(
        (element) => element.textContent?.trim() === "hello from chromium",
      ),
    WAIT,
  );
  await page.waitForSelector("#output-area .turn-footer", WAIT);
  turnEndedAt = Date.now();
});

test("/compact typed into the page renders the daemon's answer", async () => {
  await submit("/compact");
  const rendered = await page.waitForFunction(() => {
    const answer = [...document.querySelectorAll("#output-area .slash-render-json")].at(-1);
    return answer?.textContent?.includes('"skipped"') ? answer.textContent : undefined;
  }, WAIT);
  expect(JSON.parse((await rendered.jsonValue()) as string)).toMatchObject({ skipped: true });
});

test("without the token Chromium gets 401 for the page, a file and /config", async () => {
  const context = await browser.createBrowserContext();
  try {
    const bare = await context.newPage();
    for (const path of ["/ui/", "/ui/app.js", "/config"]) {
      const response = await bare.goto(`${daemon.baseUrl}${path}`);
      expect([path, response?.status()]).toEqual([path, 401]);
      expect(await bare.evaluate(() => document.body.textContent)).toContain("missing or wrong attach token");
    }
  } finally {
    await context.close();
  }
});

test("traversal from the browser: every form is refused and nothing outside the directory is read", async () => {
  // test/clients/mast-web/LICENSE sits just outside the served web/ folder.
  const forms: Array<[string, number]> = [
    ["/ui/../LICENSE", 404],
    ["/ui/%2e%2e/LICENSE", 404],
    ["/ui/%252e%252e/LICENSE", 400],
    ["/ui/..%5cLICENSE", 400],
    ["/ui/%2f..%2fLICENSE", 400],
    ["/ui/index.html%00.js", 400],
  ];
  const probe = await browser.newPage();
  try {
    await probe.setExtraHTTPHeaders({ authorization: `Bearer ${TOKEN}` });
    for (const [path, status] of forms) {
      const response = await probe.goto(`${daemon.baseUrl}${path}`);
      const body = await probe.evaluate(() => document.body.textContent);
      expect([path, response?.status()]).toEqual([path, status]);
      expect(body).not.toContain("Apache License");
    }
  } finally {
    await probe.close();
  }
});

test("after a reload the session's history is replayed into the page", async () => {
  // The dashboard shows a frame stamped less than 2 s before it connected as live, not as history
  // (attach-core/replay.js, DEFAULT_REPLAY_GRACE_MS): reload once the turn is older than that.
  await waitFor(() => (Date.now() - turnEndedAt > REPLAY_GRACE_MS ? true : undefined), 10_000, "the replay grace");
  await page.reload({ waitUntil: "load" });
  await waitForDom(
    () =>
      [...document.querySelectorAll("#output-area .replay-history .message.user .msg-body")].some(
        (element) => element.textContent === "hello from chromium",
      ) &&
      [...document.querySelectorAll("#output-area .replay-history .message.assistant .md-content")].some(
        (element) => element.textContent?.trim() === "hello from chromium",
      ),
    "history replayed",
  );
  expect(await page.$eval("#setup-modal", (element) => element.classList.contains("open"))).toBe(false);
});
