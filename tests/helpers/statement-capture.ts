/**
 * Every statement a service sends to a PostgreSQL server, for tests that judge the statements
 * themselves (tests/architecture/citus-hot-paths.test.ts, citus-display.test.ts): postgres.js calls its `debug` option
 * with the text and parameters of each query it sends, on every connection of the pool
 * (transactions included, LISTEN apart), and reads that option from the client's shared options
 * at each query, so setting it on a running client captures from then on. Test-only: the service's
 * own client is never built with it.
 */
import type { Database } from '../../src/db'

export interface CapturedStatement {
  text: string
  parameters: unknown[]
}

export interface StatementCapture {
  /** Runs `work` and returns the statements sent while it ran, transaction control left out. */
  during(work: () => Promise<unknown>, options?: { settleMs?: number }): Promise<CapturedStatement[]>
  /** Stops capturing for good. */
  release(): void
}

/** Transaction control: no table, nothing to route. */
const CONTROL = /^\s*(begin|commit|rollback|savepoint|release|start transaction|set |deallocate|discard)\b/i

/**
 * Captures the statements `db` (a service's postgres.js-backed database) sends. `settleMs`: after
 * `work`, how long no new statement must arrive before the capture ends (writes off the request's
 * path, such as the API key's lastUsedAt, are part of it).
 */
export function captureStatements(db: Database): StatementCapture {
  const client = (db as unknown as { session?: { client?: { options?: { debug?: unknown } } } }).session?.client
  const options = client?.options
  if (!options || typeof options !== 'object') throw new Error('statement capture needs a PostgreSQL server (postgres.js client), not PGlite')
  let sink: CapturedStatement[] | null = null
  let lastAt = 0
  options.debug = (_connection: number, text: string, parameters: unknown[]) => {
    if (!sink || CONTROL.test(text)) return
    sink.push({ text, parameters: [...parameters] })
    lastAt = Date.now()
  }
  return {
    async during(work, { settleMs = 150 } = {}) {
      const statements: CapturedStatement[] = []
      sink = statements
      lastAt = Date.now()
      try {
        await work()
        while (Date.now() - lastAt < settleMs) await Bun.sleep(settleMs / 3)
      } finally {
        sink = null
      }
      return statements
    },
    release() {
      sink = null
      options.debug = false
    },
  }
}
