/**
 * Opens the read-only view of a session store the operator CLI names with `--session-db` and
 * `--session-db-driver`: a sqlite file (read-only connection, no lock) or a PostgreSQL URL
 * (read-only transactions). Never creates, migrates or locks the store.
 */
import type { StoreReader } from "../../core/store-reader.ts";
import { PostgresReader } from "../../store/postgres/postgres-reader.ts";
import { SqliteReader } from "../../store/sqlite/read-only-reader.ts";

export type StoreDriver = "sqlite" | "postgres";

export async function openStoreReader(location: string, driver: StoreDriver): Promise<StoreReader> {
  return driver === "postgres" ? PostgresReader.open(location) : SqliteReader.open(location);
}
