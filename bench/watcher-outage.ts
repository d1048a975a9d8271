/**
 * bench/watcher.ts --case=outage (D451, D452): the daemon down for --outage-s seconds (default
 * 120) from the start of a burst of 5,000 signals over 1,500 incidents, with the watcher's
 * default delivery policy (1 s doubling to 60 s) and `--store` on, against the same burst with
 * the daemon up (the baseline in the same run). One process: the fake apiserver, a fake daemon
 * whose port closes for the outage, and the watcher (startWatcher) under test. Reported per run:
 * incidents delivered and delivered twice, payloads given up, the spill's and the in-memory
 * window's peaks, the process's RSS before, at its peak and after, and the time to deliver
 * (from the burst with the daemon up; from the daemon's return after the outage).
 */
import { join } from "node:path";
import { writeKubeconfig } from "../scripts/fake-apiserver/kubeconfig.ts";
import { startFakeApiserver } from "../scripts/fake-apiserver/server.ts";
import { watcherConfigFromArgv } from "../src/cli/watcher-config.ts";
import { createLogger } from "../src/telemetry/logger.ts";
import { startWatcher } from "../src/watcher/watch-runner.ts";
import { fmt, nowMs, table } from "./lib.ts";
import { log, sleep } from "./watcher-lib.ts";

const SIGNALS = 5000;
const INCIDENTS = 1500;

/** A daemon whose port can close (connection refused) and open again; it counts what lands. */
function fakeDaemon() {
  const injected: string[] = [];
  let sessions = 0;
  const serve = (port: number) =>
    Bun.serve({
      hostname: "127.0.0.1",
      port,
      async fetch(request) {
        const path = new URL(request.url).pathname;
        if (request.method === "POST" && path === "/sessions")
          return Response.json(
            { app: "spar", user: "bench", sessionID: `sess-${++sessions}`, url: "" },
            { status: 201 },
          );
        if (request.method === "POST" && path.endsWith("/inject")) {
          const { message } = (await request.json()) as { message: string };
          injected.push(String((JSON.parse(message) as { name?: unknown }).name));
          return Response.json({ injected: true, session: path.split("/")[2], woke: true });
        }
        return Response.json({ error: "not_found" }, { status: 404 });
      },
    });
  let server: ReturnType<typeof Bun.serve> | undefined = serve(0);
  const port = server.port ?? 0;
  return {
    url: `http://127.0.0.1:${port}`,
    injected,
    down: () => {
      server?.stop(true);
      server = undefined;
    },
    up: async () => {
      for (let attempt = 0; ; attempt++) {
        try {
          server = serve(port);
          return;
        } catch (error) {
          if (attempt >= 50) throw error;
          await sleep(100); // poll: the port's release.
        }
      }
    },
    stop: () => server?.stop(true),
  };
}

const rssMB = () => process.memoryUsage().rss / 1024 / 1024;

async function oneRun(dir: string, outageSeconds: number) {
  const tag = outageSeconds > 0 ? "outage" : "up";
  const api = await startFakeApiserver({ historyLimit: 2 * SIGNALS });
  const daemon = fakeDaemon();
  const config = watcherConfigFromArgv([
    `--daemon-url=${daemon.url}`,
    "--token-env=WATCHER_TOKEN",
    "--owner=bench",
    "--cluster-name=bench",
    `--kubeconfig=${writeKubeconfig(join(dir, `kc-${tag}`), { server: api.url })}`,
    "--sources=cluster-events",
    "--storm=off",
    "--enrich=off",
    `--store=${join(dir, `store-${tag}.db`)}`,
  ]);
  if (!config.ok) throw new Error(config.error);
  const running = await startWatcher(config.value, createLogger("error"), { env: { WATCHER_TOKEN: "bench" } });
  const gauge = (name: string) =>
    Number(new RegExp(`^watcher_${name}\\{cluster="bench"\\} (\\d+)$`, "m").exec(running.metrics.render())?.[1] ?? 0);
  const dropped = () =>
    [...running.metrics.render().matchAll(/^watcher_deliveries_dropped_total\{[^}]*\} (\d+)$/gm)].reduce(
      (sum, match) => sum + Number(match[1]),
      0,
    );
  const peaks = { spilled: 0, window: 0, rss: 0 };
  const sampler = setInterval(() => {
    peaks.spilled = Math.max(peaks.spilled, gauge("deliveries_spilled"));
    peaks.window = Math.max(peaks.window, gauge("deliveries_pending") - gauge("deliveries_spilled"));
    peaks.rss = Math.max(peaks.rss, rssMB());
  }, 50);
  try {
    while (!running.ready()) await sleep(50); // poll: the informers' first sync.
    const rssBefore = rssMB();
    if (outageSeconds > 0) daemon.down();
    const burstAt = nowMs();
    const events = Array.from({ length: INCIDENTS }, (_, index) =>
      api.scenario.recordEvent({
        involvedObject: api.scenario.createPod({
          namespace: `burst-${index % 10}`,
          name: `burst-${index}`,
          node: "node-a",
          containers: [{ name: "app", restartCount: 1 }],
        } as never),
        reason: "OOMKilled",
        message: "Container app exceeded its memory limit",
        type: "Warning",
        source: { component: "kubelet", host: "node-a" },
      } as never),
    );
    for (let index = 0; index < SIGNALS - INCIDENTS; index++) {
      const event = events[index % INCIDENTS] as Record<string, unknown>;
      events[index % INCIDENTS] = api.scenario.update({ ...event, count: Number(event.count ?? 1) + 1 });
    }
    let upAt = burstAt;
    if (outageSeconds > 0) {
      const until = burstAt + outageSeconds * 1000;
      while (nowMs() < until) {
        await sleep(1000); // time under test: the outage.
        if (Math.round(nowMs() - burstAt) % 30_000 < 1000)
          log(`  ${tag}: ${Math.round((nowMs() - burstAt) / 1000)} s down, rss ${fmt(rssMB())} MB`);
      }
      await daemon.up();
      upAt = nowMs();
    }
    const deadline = nowMs() + 300_000;
    while (new Set(daemon.injected).size < INCIDENTS && nowMs() < deadline) await sleep(20); // poll: delivery.
    const deliveredS = (nowMs() - upAt) / 1000;
    await running.dispatcher.idle();
    return {
      tag,
      delivered: new Set(daemon.injected).size,
      twice: daemon.injected.length - new Set(daemon.injected).size,
      dropped: dropped(),
      peakSpilled: peaks.spilled,
      peakWindow: peaks.window,
      rssBefore,
      rssPeak: peaks.rss,
      rssAfter: rssMB(),
      deliveredS,
    };
  } finally {
    clearInterval(sampler);
    await running.stop();
    daemon.stop();
    await api.stop();
  }
}

export async function outageCase(dir: string, outageSeconds: number): Promise<void> {
  const up = await oneRun(dir, 0);
  log(`up: ${up.delivered} delivered in ${fmt(up.deliveredS)} s`);
  const outage = await oneRun(dir, outageSeconds);
  log(`outage: ${outage.delivered} delivered ${fmt(outage.deliveredS)} s after the daemon returned`);
  console.log(
    `### The daemon down ${outageSeconds} s through a burst of ${SIGNALS} signals over ${INCIDENTS} incidents (--store on, default delivery policy)\n`,
  );
  console.log(
    table(
      [
        "run",
        "incidents delivered",
        "delivered twice",
        "given up",
        "peak spilled",
        "peak in memory",
        "RSS MB before / peak / after",
        "s to deliver",
      ],
      [up, outage].map((run) => [
        run.tag === "up" ? "daemon up (baseline)" : `daemon down ${outageSeconds} s`,
        `${run.delivered} of ${INCIDENTS}`,
        String(run.twice),
        String(run.dropped),
        String(run.peakSpilled),
        String(run.peakWindow),
        `${fmt(run.rssBefore)} / ${fmt(run.rssPeak)} / ${fmt(run.rssAfter)}`,
        run.tag === "up" ? `${fmt(run.deliveredS)} from the burst` : `${fmt(run.deliveredS)} from its return`,
      ]),
    ),
  );
  const growth = (run: typeof up) => run.rssPeak - run.rssBefore;
  console.log(
    `\nRSS growth over the run (peak minus before): ${fmt(growth(up))} MB with the daemon up, ${fmt(growth(outage))} MB through the outage (${fmt(growth(outage) / growth(up))}x); delivery after the return over the baseline's: ${fmt(outage.deliveredS / up.deliveredS)}x`,
  );
}
