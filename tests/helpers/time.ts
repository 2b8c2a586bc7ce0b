/**
 * A test's (or set-up's) own time limit, `ms` here; on the Citus cluster (TEST_CITUS_URL) at least
 * the 120 s that `.ci/run` gives every test there with `--timeout`, which a limit written on the
 * test would otherwise undercut: every statement there is a coordinator-worker round trip, on two
 * cores shared by three nodes and other test files. Bounds inside a test stay as written.
 * (Apart from tests/helpers/database.ts, so a file that needs no database can use it.)
 */
export const timeLimit = (ms: number) => (process.env.TEST_CITUS_URL ? Math.max(ms, 120_000) : ms) * timeScale()

/**
 * How long a test waits for something that is set-up rather than subject (a page of Swagger UI to
 * render, a cluster to rebalance): `ms`, stretched by TEST_TIME_SCALE as a test's own limit is.
 * A bound the test asserts (a live update within 3 s) is written as it is, never through this.
 */
export const waitLimit = (ms: number) => ms * timeScale()

/**
 * TEST_TIME_SCALE (default 1): `.ci/run` stretches these limits on a machine whose two cores its
 * lanes share (every process a test starts waits its turn there). Only a test's own time limit is
 * stretched: what a test asserts about time (a recovery within 5 s, a push within a second) is not.
 */
function timeScale(): number {
  const scale = Number(process.env.TEST_TIME_SCALE ?? 1)
  return Number.isFinite(scale) && scale >= 1 ? scale : 1
}
