/**
 * What one attach listener owns for its event streams: the open streams (their heartbeat,
 * end-of-tick flush and hang-up), the publication encoder's cache and the capabilities cache.
 * Built once per listener, never per process (D216): two listeners in one process share none of it.
 */
import { SseStreamGroup } from "../http/sse-stream.ts";
import { CapabilitiesCache } from "./capabilities.ts";
import { PublicationEncoder } from "./sse-frames.ts";

export class AttachStreams {
  readonly streams = new SseStreamGroup();
  readonly publications = new PublicationEncoder();
  readonly capabilities = new CapabilitiesCache();
}
