/**
 * The open-stream caps of an attach listener and their metrics (`spar_sse_streams_refused_total`,
 * `spar_sse_stream_callers`, `spar_sse_stream_cap`): one admission per listener, built the same way
 * by every daemon that serves the attach surface (`spar agent`, `spar svc --attach-listen`).
 */
import { type StreamCaps, StreamAdmission } from "../surfaces/http/stream-admission.ts";
import type { MetricsRegistry } from "../telemetry/metrics.ts";

export function admitStreams(caps: StreamCaps, metrics: MetricsRegistry): StreamAdmission {
  const countStreamRefused = metrics.counter(
    "spar_sse_streams_refused_total",
    "Event streams refused before they opened, by the cap that refused them (caller_cap, global_cap).",
  );
  const streams = new StreamAdmission(caps, (cap) => countStreamRefused({ cap }));
  metrics.gauge("spar_sse_stream_callers", "Callers holding at least one open event stream.", () => streams.callers);
  metrics.gauge(
    "spar_sse_stream_cap",
    "Event streams the daemon holds open at most (--attach-max-streams).",
    () => caps.maxStreams,
  );
  return streams;
}
