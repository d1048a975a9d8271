/**
 * Preloaded into every test run (bunfig.toml): removes each test file's temporary directories
 * (test/support/temp-dirs.ts) when the next file's first test starts, and the last file's when the
 * run ends.
 */
import { afterAll, beforeEach } from "bun:test";
import { removeTempPaths } from "./temp-dirs.ts";

beforeEach(() => removeTempPaths(Bun.main));
afterAll(() => removeTempPaths());
