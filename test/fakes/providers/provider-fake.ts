/**
 * A local stand-in for a model provider's HTTP API (Bun.serve on port 0) that answers with
 * recorded response bodies from test/fixtures/providers/<provider>/: `*.sse` bodies stream frame
 * by frame as text/event-stream (`<name>!hang` stops after the first delta and holds the stream
 * open), and
 * `<status>*.json` bodies answer with that HTTP status. It checks
 * what the real service checks first: the endpoint, the API key in the provider's own header
 * (a wrong one gets the recorded auth failure) and, when told the served models, the model id
 * (an unknown one gets the recorded 404). Every request is recorded for assertions.
 */
import { join } from "node:path";
import type { RemoteProvider } from "../../../src/core/model.ts";

export const FIXTURES = join(import.meta.dir, "../../fixtures/providers");

export interface RecordedRequest {
  method: string;
  path: string;
  search: string;
  headers: Record<string, string>;
  body: Record<string, unknown>;
}

export interface ProviderFakeOptions {
  /** The key the fake accepts; any other key gets the provider's recorded auth failure. */
  apiKey?: string;
  /** Model ids the fake serves; any other gets the recorded 404. Unset: every model. */
  models?: string[];
}

export interface ProviderFake {
  readonly provider: RemoteProvider;
  readonly port: number;
  /** What `--model-base-url` should be: the SDK's baseURL, version path included. */
  readonly baseUrl: string;
  readonly requests: RecordedRequest[];
  /** Fixture names (file names without extension) to answer the next calls with, in order. */
  enqueue(...names: string[]): void;
  /** Fixtures queued but not served yet. */
  pending(): string[];
  /** Streams the client closed before their end. */
  canceledStreams(): number;
  /** Answer every call with this fixture (retries included) until set back to undefined. */
  always(name: string | undefined): void;
  /** Stops listening at once; resolves when the open connections are closed too. */
  stop(): Promise<void>;
}

interface Wire {
  versionPath: string;
  endpoint: RegExp;
  keyOf(headers: Headers): string | undefined;
  modelOf(path: string, body: Record<string, unknown>): string | undefined;
  /** Fixture answering a wrong key, as the real service does. */
  authFailure: string;
  frameSeparator: string;
}

const bearer = (headers: Headers) => headers.get("authorization")?.replace(/^Bearer\s+/i, "") ?? undefined;
const bodyModel = (_path: string, body: Record<string, unknown>) =>
  typeof body.model === "string" ? body.model : undefined;

const WIRES: Record<RemoteProvider, Wire> = {
  openai: {
    versionPath: "/v1",
    endpoint: /^\/v1\/responses$/,
    keyOf: bearer,
    modelOf: bodyModel,
    authFailure: "401",
    frameSeparator: "\n\n",
  },
  anthropic: {
    versionPath: "/v1",
    endpoint: /^\/v1\/messages$/,
    keyOf: (headers) => headers.get("x-api-key") ?? undefined,
    modelOf: bodyModel,
    authFailure: "401",
    frameSeparator: "\n\n",
  },
  google: {
    versionPath: "/v1beta",
    endpoint: /^\/v1beta\/models\/[^/:]+:streamGenerateContent$/,
    keyOf: (headers) => headers.get("x-goog-api-key") ?? undefined,
    modelOf: (path) => /^\/v1beta\/models\/([^/:]+):/.exec(path)?.[1],
    // Gemini answers a bad key with 400 INVALID_ARGUMENT, reason API_KEY_INVALID.
    authFailure: "400-api-key-invalid",
    frameSeparator: "\r\n\r\n",
  },
  "openai-compatible": {
    versionPath: "/v1",
    endpoint: /^\/v1\/chat\/completions$/,
    keyOf: bearer,
    modelOf: bodyModel,
    authFailure: "401",
    frameSeparator: "\n\n",
  },
};

/** `<name>!hang`: stream `<name>` through its first frame holding this text, then stay open until the client goes. */
const HANG_AFTER_TEXT = '"Hello"';

export async function fixtureResponse(
  provider: RemoteProvider,
  fixture: string,
  onCancel: () => void = () => {},
): Promise<Response> {
  const wire = WIRES[provider];
  const hang = fixture.endsWith("!hang");
  const name = hang ? fixture.slice(0, -"!hang".length) : fixture;
  const sse = Bun.file(join(FIXTURES, provider, `${name}.sse`));
  if (await sse.exists()) {
    const all = (await sse.text()).split(wire.frameSeparator).filter((frame) => frame.trim() !== "");
    const frames = hang ? all.slice(0, all.findIndex((frame) => frame.includes(HANG_AFTER_TEXT)) + 1) : all;
    const encoder = new TextEncoder();
    let release: () => void = () => {};
    const stream = new ReadableStream<Uint8Array>({
      async pull(controller) {
        const frame = frames.shift();
        if (frame === undefined) {
          if (hang) await new Promise<void>((resolve) => (release = resolve));
          return controller.close();
        }
        controller.enqueue(encoder.encode(frame + wire.frameSeparator));
        await Bun.sleep(0);
      },
      cancel() {
        onCancel();
        release();
      },
    });
    return new Response(stream, {
      status: 200,
      headers: { "content-type": "text/event-stream", "cache-control": "no-cache" },
    });
  }
  const json = Bun.file(join(FIXTURES, provider, `${name}.json`));
  const status = Number(/^(\d{3})/.exec(name)?.[1]);
  if (!(await json.exists()) || !Number.isInteger(status))
    throw new Error(`no fixture ${provider}/${name}(.sse|.json with a status prefix)`);
  return new Response(await json.text(), { status, headers: { "content-type": "application/json" } });
}

export function startProviderFake(provider: RemoteProvider, options: ProviderFakeOptions = {}): ProviderFake {
  const wire = WIRES[provider];
  const queue: string[] = [];
  let sticky: string | undefined;
  let canceled = 0;
  const requests: RecordedRequest[] = [];
  const server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    async fetch(request) {
      const url = new URL(request.url);
      const text = await request.text();
      let body: Record<string, unknown> = {};
      try {
        body = text === "" ? {} : (JSON.parse(text) as Record<string, unknown>);
      } catch {
        return new Response("fake: request body is not JSON", { status: 500 });
      }
      requests.push({
        method: request.method,
        path: url.pathname,
        search: url.search,
        headers: Object.fromEntries(request.headers),
        body,
      });
      if (request.method !== "POST" || !wire.endpoint.test(url.pathname)) {
        return new Response(`fake ${provider}: unexpected ${request.method} ${url.pathname}`, { status: 500 });
      }
      if (options.apiKey !== undefined && wire.keyOf(request.headers) !== options.apiKey)
        return fixtureResponse(provider, wire.authFailure);
      const model = wire.modelOf(url.pathname, body);
      if (options.models && (model === undefined || !options.models.includes(model)))
        return fixtureResponse(provider, "404");
      const next = sticky ?? queue.shift();
      if (next === undefined) return new Response(`fake ${provider}: no response queued`, { status: 500 });
      return fixtureResponse(provider, next, () => canceled++);
    },
  });
  const port = server.port ?? 0;
  return {
    provider,
    port,
    baseUrl: `http://127.0.0.1:${port}${wire.versionPath}`,
    requests,
    enqueue: (...names) => {
      queue.push(...names);
    },
    pending: () => [...queue],
    canceledStreams: () => canceled,
    always: (name) => {
      sticky = name;
    },
    stop: () => server.stop(true),
  };
}
