/** The Store contract (store-contract.ts) on SqliteStore, each location a fresh file. */
import { afterAll } from "bun:test";
import { SqliteStore } from "../../../src/store/sqlite/sqlite-store.ts";
import { cleanupTempDirs, tempDb } from "./sqlite-helpers.ts";
import { registerStoreContract } from "./store-contract.ts";

afterAll(cleanupTempDirs);

registerStoreContract({
  location: async () => tempDb(),
  open: async (path) => SqliteStore.open(path),
});
