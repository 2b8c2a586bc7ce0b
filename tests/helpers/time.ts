/**
 * A test's (or set-up's) own time limit, `ms` here; on the Citus cluster (TEST_CITUS_URL) at least
 * the 120 s that `.ci/run` gives every test there with `--timeout`, which a limit written on the
 * test would otherwise undercut: every statement there is a coordinator-worker round trip, on two
 * cores shared by three nodes and other test files. Bounds inside a test stay as written.
 * (Apart from tests/helpers/database.ts, so a file that needs no database can use it.)
 */
export const timeLimit = (ms: number) => (process.env.TEST_CITUS_URL ? Math.max(ms, 120_000) : ms) * timeScale()

/**
 * TEST_TIME_SCALE (default 1): `.ci/run` stretches these limits on a machine whose two cores its
 * lanes share (every process a test starts waits its turn there). Only a test's own time limit is
 * stretched: what a test asserts about time (a recovery within 5 s, a push within a second) is not.
 */
function timeScale(): number {
  const scale = Number(process.env.TEST_TIME_SCALE ?? 1)
  return Number.isFinite(scale) && scale >= 1 ? scale : 1
}
