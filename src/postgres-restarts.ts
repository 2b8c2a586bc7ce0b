/**
 * Surviving a PostgreSQL restart (used by src/db.ts). postgres.js 3.4.x mishandles a connection that dies under it
 * in several ways, each found by tests/faults/postgres-restart.test.ts; each is worked around
 * here without touching the library (remove them when upstream fixes land):
 *  - a deferred write on a closed connection throws outside any promise and ends the process
 *    (porsager/postgres#1208): guardedTransaction;
 *  - a connection closed with a write pending never flushes again: every later reconnect waits
 *    for connect_timeout and fails (porsager/postgres#1215): STARTUP_PADDING;
 *  - the array-type query run on each new connection is never awaited, so its failure is an
 *    unhandled rejection that ends the process (porsager/postgres#1192): ignoreTypeFetchFailures;
 *  - the FATAL error of a killed backend is replayed onto the next query after the reconnect,
 *    before that query is sent (porsager/postgres#1223): retriedOnce;
 *  - reconnect delays grow to 20 s (3^n/100 s, counted across the pool), and a query handed to
 *    a waiting connection waits with it: reconnectDelaySeconds.
 */

/** Half a second at most between attempts: a few connects per second cost a down server nothing. */
export const reconnectDelaySeconds = (retries: number) => Math.min(0.025 * 2 ** retries, 0.5)

/**
 * A startup message of 1 KiB or more is written at once, and writing flushes whatever a dead
 * connection left in the buffer (the server refuses that garbled attempt; the next one is clean).
 */
export const STARTUP_PADDING = 'x'.repeat(1024)

/** Errors after which the connection is closed or closing (a FATAL from the server ends its session). */
const CONNECTION_LOST_CODES = new Set(['CONNECTION_CLOSED', 'CONNECTION_DESTROYED', 'ECONNRESET', 'EPIPE', 'ETIMEDOUT'])

function connectionLost(error: unknown): boolean {
  let current: any = error
  for (let depth = 0; current && depth < 4; depth++, current = current.cause)
    if (CONNECTION_LOST_CODES.has(current.code) || current.severity === 'FATAL' || current.severity === 'PANIC') return true
  return false
}

/**
 * postgres.js rejects a statement with a FATAL server error only when the statement was waiting
 * for its connection to open, never once it was sent (a backend dying mid-statement surfaces as
 * CONNECTION_CLOSED): such a statement never ran and is safe to run again.
 */
const rejectedBeforeSent = (error: unknown) => (error as { severity?: string } | null)?.severity === 'FATAL'

/** A pool statement (outside a transaction) that runs again once if it was refused before being sent. */
export function retriedOnce(run: () => any) {
  let rows = false
  let result: Promise<unknown> | undefined
  const attempt = () => (rows ? run().values() : run()) as Promise<unknown>
  const settle = () => (result ??= attempt().catch((error: unknown) => (rejectedBeforeSent(error) ? attempt() : Promise.reject(error))))
  const statement = {
    /** Drizzle asks for rows as arrays before awaiting. */
    values() {
      rows = true
      return statement
    },
    then: (resolve?: (value: unknown) => unknown, reject?: (error: unknown) => unknown) => settle().then(resolve, reject),
    catch: (reject: (error: unknown) => unknown) => settle().catch(reject),
    finally: (callback: () => void) => settle().finally(callback),
  }
  return statement
}

let typeFetchGuarded = false

/** Ignores the unhandled failure of postgres.js's array-type query (see above); any other still ends the process. */
export function ignoreTypeFetchFailures() {
  if (typeFetchGuarded) return
  typeFetchGuarded = true
  process.on('unhandledRejection', (reason: any) => {
    if ((typeof reason?.query === 'string' && reason.query.includes('b.typarray')) || connectionLost(reason)) return
    if (process.listenerCount('unhandledRejection') === 1) throw reason
  })
}

export interface TransactionState {
  /** The error that showed the transaction's connection is gone. */
  lost?: unknown
}

/**
 * A transaction whose connection died must send nothing more: postgres.js would write its
 * ROLLBACK (or COMMIT, or the callback's next statement) on the closed connection and crash. So
 * once the loss is known the caller gets the error at once (a 503), the callback's further
 * statements are refused, and postgres.js's own handler is left on a promise that never settles;
 * postgres.js ends the transaction itself when it sees the close. A transaction refused before
 * its callback ran (see rejectedBeforeSent) is started again once.
 */
export function guardedTransaction(
  method: Function,
  target: object,
  args: unknown[],
  /** Wraps the transaction's scoped client (db.ts: prepared statements and these guards). */
  wrap: (scoped: object, state: TransactionState) => object,
  parent?: TransactionState,
  retry = !parent,
): Promise<unknown> {
  const state = parent ?? {}
  const callback = args.at(-1) as (scoped: object) => unknown
  let started = false
  return new Promise((resolve, reject) => {
    const abandon = (error: unknown) => {
      state.lost ??= error
      reject(state.lost)
      return new Promise(() => {})
    }
    const run = async (scoped: object) => {
      started = true
      let result: unknown
      try {
        result = await callback(wrap(scoped, state))
      } catch (error) {
        if (state.lost || connectionLost(error)) return abandon(error)
        throw error
      }
      return state.lost ? abandon(state.lost) : result
    }
    ;(method.call(target, ...args.slice(0, -1), run) as Promise<unknown>).then(resolve, (error: unknown) => {
      if (retry && !started && rejectedBeforeSent(error)) return resolve(guardedTransaction(method, target, args, wrap, parent, false))
      if (connectionLost(error)) state.lost ??= error
      reject(error)
    })
  })
}
