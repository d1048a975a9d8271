/**
 * Headless Chromium for the browser tests, driven by puppeteer-core: the system binary
 * (`/usr/bin/chromium`, or `SPAR_TEST_CHROMIUM`; .ci/run installs it when missing). One browser per
 * test file; each test opens its own page or incognito context.
 */
import puppeteer, { type Browser } from "puppeteer-core";

export const CHROMIUM = process.env.SPAR_TEST_CHROMIUM ?? "/usr/bin/chromium";

export function launchChromium(): Promise<Browser> {
  return puppeteer.launch({
    executablePath: CHROMIUM,
    headless: true,
    // No sandbox: CI runs as root in a container; no GPU; /dev/shm is small in containers.
    args: ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"],
  });
}
