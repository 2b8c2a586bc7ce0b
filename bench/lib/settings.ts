/** The settings every benchmark shares, from the environment (docs/performance.md, "Benchmarks"). */

/** The PostgreSQL server the bench databases are created and dropped on. */
export const SERVER_URL = process.env.BENCH_SERVER_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres'
/** Seconds per wrk and pgbench run. */
export const DURATION_SECONDS = Number(process.env.BENCH_DURATION ?? 10)
/** wrk connections and pgbench clients. */
export const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 64)
