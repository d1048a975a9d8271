/** The Store contract (store-contract.ts) on SqliteStore and its SqliteReader, each location a fresh file. */
import { afterAll } from "bun:test";
import { SqliteReader } from "../../../src/store/sqlite/read-only-reader.ts";
import { SqliteStore } from "../../../src/store/sqlite/sqlite-store.ts";
import { cleanupTempDirs, tempDb } from "./sqlite-helpers.ts";
import { registerStoreContract } from "./store-contract.ts";

afterAll(cleanupTempDirs);

registerStoreContract({
  location: async () => tempDb(),
  open: async (path) => SqliteStore.open(path),
  openReader: async (path) => SqliteReader.open(path),
});
