/**
 * A listener's OpenAPI 3.1 document, generated from its routes' valibot schemas and served at
 * `GET /openapi.json` behind the listener's own guards (it is not a public path). No viewer page:
 * the document is for clients and diffs.
 */
import { openapi } from "@elysiajs/openapi";
import { toJsonSchema } from "@valibot/to-json-schema";
import type * as v from "valibot";

export const OPENAPI_PATH = "/openapi.json";

export function openapiDocument(info: { title: string; version: string; description: string }) {
  return openapi({
    specPath: OPENAPI_PATH,
    provider: null,
    // staticFile: false, or the agent card (a path ending in .json) would be left out.
    exclude: { paths: [OPENAPI_PATH], staticFile: false },
    documentation: { info },
    // Checks and transforms have no JSON Schema; the document keeps the types and fields.
    mapJsonSchema: {
      valibot: (schema: v.GenericSchema) => toJsonSchema(schema, { errorMode: "ignore", target: "draft-2020-12" }),
    },
  });
}
