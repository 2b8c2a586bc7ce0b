/**
 * A test's (or set-up's) own time limit, `ms` here; on the Citus cluster (TEST_CITUS_URL) at least
 * the 120 s that `.ci/run` gives every test there with `--timeout`, which a limit written on the
 * test would otherwise undercut: every statement there is a coordinator-worker round trip, on two
 * cores shared by three nodes and other test files. Bounds inside a test stay as written.
 * (Apart from tests/helpers/database.ts, so a file that needs no database can use it.)
 */
export const timeLimit = (ms: number) => (process.env.TEST_CITUS_URL ? Math.max(ms, 120_000) : ms)
