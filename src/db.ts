/**
 * The database: embedded PGlite (DATABASE_URL unset or pglite://…) or a PostgreSQL server
 * through postgres.js (postgres://…), behind one Drizzle type, with LISTEN/NOTIFY on both.
 */
import { hostname } from 'node:os'
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { PGlite } from '@electric-sql/pglite'
import { pg_trgm } from '@electric-sql/pglite/contrib/pg_trgm'
import type { PgDatabase, PgQueryResultHKT, PgTransaction } from 'drizzle-orm/pg-core'
import { drizzle as drizzlePglite } from 'drizzle-orm/pglite'
import { drizzle as drizzlePostgres } from 'drizzle-orm/postgres-js'
import { sql, type ExtractTablesWithRelations, type SQL } from 'drizzle-orm'
import postgres from 'postgres'
import { guardedTransaction, ignoreTypeFetchFailures, reconnectDelaySeconds, retriedOnce, STARTUP_PADDING, type TransactionState } from './postgres-restarts'

export type Database = PgDatabase<PgQueryResultHKT, Record<string, never>>
export type Transaction = PgTransaction<PgQueryResultHKT, Record<string, never>, ExtractTablesWithRelations<Record<string, never>>>
/** Anything a query can run on: the pool or an open transaction. */
export type Executor = Database | Transaction

export interface DatabaseOptions {
  /** postgres.js pool size. */
  maxConnections?: number
  /** Per-statement timeout on the server; 0 disables it. */
  statementTimeoutMs?: number
  /** PGlite only: a data directory to load a dump from (test templates). */
  loadDataDir?: Blob
}

export interface DatabaseHandle {
  kind: 'pglite' | 'postgres'
  /** A printable location without credentials. */
  location: string
  db: Database
  /** Subscribes to a NOTIFY channel; `onReconnect` runs whenever notifications may have been missed. */
  listen(channel: string, onMessage: (payload: string) => void, onReconnect?: () => void): Promise<() => Promise<void>>
  close(): Promise<void>
  /** The embedded client, for dumps in tests; absent on a server. */
  pglite?: PGlite
}

export const DEFAULT_PGLITE_DIR = './data/pglite'

/** Describes where `url` points without printing a password. */
export function describeDatabaseUrl(url: string | undefined): string {
  if (!url) return `pglite:${DEFAULT_PGLITE_DIR}`
  if (url.startsWith('pglite:')) return url
  try {
    const parsed = new URL(url)
    return `postgres://${parsed.hostname}:${parsed.port || 5432}${parsed.pathname}`
  } catch {
    return 'postgres://(unparsable URL)'
  }
}

/** Opens the database `url` points at (see the module comment). */
export async function openDatabase(url: string | undefined, options: DatabaseOptions = {}): Promise<DatabaseHandle> {
  if (!url || url.startsWith('pglite:')) return openPglite(url, options)
  if (url.startsWith('postgres://') || url.startsWith('postgresql://')) return openPostgres(url, options)
  throw new Error(`DATABASE_URL must be a postgres:// or postgresql:// URL, pglite:<directory> or pglite://memory (got ${schemeOf(url)})`)
}

/** Only the scheme of a URL that is none of ours (`mysql://…`): the rest may hold a password. */
function schemeOf(url: string): string {
  const scheme = /^[A-Za-z][A-Za-z0-9+.-]*:(\/\/)?/.exec(url)?.[0]
  return scheme ? `${scheme}…` : 'a value without a scheme such as postgres://'
}

/** The directory (or `memory`) a `pglite:` URL names; unset is the default directory. */
const pgliteTarget = (url: string | undefined) => (url ? url.slice('pglite:'.length).replace(/^\/\//, '') : DEFAULT_PGLITE_DIR)

async function openPglite(url: string | undefined, options: DatabaseOptions): Promise<DatabaseHandle> {
  const target = pgliteTarget(url)
  const inMemory = target === 'memory' || target === ''
  const releaseLock = inMemory ? () => {} : lockDataDir(target)
  const client = await PGlite.create({
    ...(inMemory ? {} : { dataDir: target }),
    extensions: { pg_trgm },
    ...(options.loadDataDir ? { loadDataDir: options.loadDataDir } : {}),
  })
  await client.exec(`set time zone 'UTC'`)
  const db = drizzlePglite({ client, casing: 'snake_case' }) as unknown as Database
  return {
    kind: 'pglite',
    location: inMemory ? 'pglite://memory' : `pglite:${target}`,
    db,
    pglite: client,
    // One process owns the embedded database, so no notification can be missed.
    listen: async (channel, onMessage) => {
      const unlisten = await client.listen(channel, onMessage)
      return async () => {
        if (!client.closed) await unlisten()
      }
    },
    close: async () => {
      if (!client.closed) await client.close()
      releaseLock()
    },
  }
}

/**
 * PGlite is single-process: a second process opening the same directory would corrupt it.
 * A lock file with the owner's pid and host refuses that with a clear message. The host matters
 * in containers: every container's first process is pid 1, so two containers sharing a data
 * volume would each take the other's lock for their own. A lock of another host cannot be checked
 * for life, so it refuses until that host's process stops (which removes it) or an operator does.
 */
/** The embedded database is held by another live process on this host (its pid in `owner`). */
export class DatabaseInUse extends Error {
  constructor(
    message: string,
    readonly dir: string,
    readonly owner: number,
  ) {
    super(message)
  }
}

/** The directory of an embedded database URL (unset: the default), or undefined for memory and servers. */
export function embeddedDirectory(url: string | undefined): string | undefined {
  if (url && !url.startsWith('pglite:')) return undefined
  const target = pgliteTarget(url)
  return target === 'memory' || target === '' ? undefined : target
}

function lockDataDir(dir: string): () => void {
  mkdirSync(dir, { recursive: true })
  const lockFile = join(dir, '..', `${dir.split('/').filter(Boolean).pop()}.lock`)
  const host = hostname()
  try {
    const [pidText, owningHost = host] = readFileSync(lockFile, 'utf8').trim().split('@', 2) as [string, string?]
    const owner = Number(pidText)
    if (owningHost !== host)
      throw new Error(
        `the embedded database ${dir} is in use by process ${owner} on host ${owningHost} (another container on the same volume?); stop it first, or remove ${lockFile} if it is gone`,
      )
    if (owner && owner !== process.pid && isAlive(owner))
      throw new DatabaseInUse(
        `the embedded database ${dir} is in use by process ${owner}; stop it first, or use a PostgreSQL server (DATABASE_URL) to share one database`,
        dir,
        owner,
      )
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error
  }
  writeFileSync(lockFile, `${process.pid}@${host}`)
  return () => rmSync(lockFile, { force: true })
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0)
    return true
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM'
  }
}

async function openPostgres(url: string, options: DatabaseOptions): Promise<DatabaseHandle> {
  ignoreTypeFetchFailures()
  const client = postgres(url, {
    max: options.maxConnections ?? 10,
    idle_timeout: 30,
    connect_timeout: 5,
    backoff: reconnectDelaySeconds,
    onnotice: () => {},
    connection: {
      application_name: 'worktrack',
      // Timestamps selected as text are UTC (see isoFromText in sql.ts).
      TimeZone: 'UTC',
      ...(options.statementTimeoutMs ? { statement_timeout: options.statementTimeoutMs } : {}),
      'worktrack.startup_padding': STARTUP_PADDING,
    },
  })
  const db = drizzlePostgres({ client: preparing(client), casing: 'snake_case' }) as unknown as Database
  return {
    kind: 'postgres',
    location: describeDatabaseUrl(url),
    db,
    listen: async (channel, onMessage, onReconnect) => {
      let first = true
      const { unlisten } = await client.listen(channel, (payload) => onMessage(payload), () => {
        // Called on every (re)connect of the listening connection: after the first, anything
        // sent while it was down is lost, so the subscriber must resynchronise.
        if (!first) onReconnect?.()
        first = false
      })
      return unlisten
    },
    close: () => client.end({ timeout: 5 }),
  }
}

/**
 * Drizzle runs every query that is not an explicitly named prepared statement with postgres.js
 * `prepare: false`, so the server parses and plans it again on every call (measured: 4.6k vs
 * 20k+ queries/s for the same select). Our SQL text depends only on the query's shape (values
 * are parameters), so letting postgres.js cache each statement per connection is safe and the
 * set of statements stays bounded. Transactions and savepoints get the same treatment, plus the
 * restart guards below; `transaction` is the state of the transaction `client` belongs to.
 */
function preparing<T extends object>(client: T, transaction?: TransactionState): T {
  return new Proxy(client, {
    get(target, property, receiver) {
      const value = Reflect.get(target, property, receiver)
      if (property === 'unsafe')
        return (query: string, parameters?: unknown[], options?: Record<string, unknown>) => {
          const run = () => (value as Function).call(target, query, parameters, { ...options, prepare: true })
          if (!transaction) return retriedOnce(run)
          if (transaction.lost) throw transaction.lost
          return run()
        }
      if (property === 'begin' || property === 'savepoint')
        return (...args: unknown[]) => guardedTransaction(value as Function, target, args, preparing, property === 'savepoint' ? transaction : undefined)
      return value
    },
  })
}

const PGLITE_TEXT_PARSERS = {
  rowMode: 'object' as const,
  // Dates stay text, as postgres.js gives them under Drizzle (see isoFromText in sql.ts).
  parsers: { 1082: (value: string) => value, 1114: (value: string) => value, 1184: (value: string) => value },
}

/**
 * Runs SQL text with $1… parameters on the executor's own connection, skipping Drizzle's query
 * building and mapping (~130 µs of CPU per call): for the few statements on hot paths.
 */
export async function queryText<T = Record<string, unknown>>(executor: Executor, text: string, parameters: unknown[]): Promise<T[]> {
  const client = (executor as unknown as { session: { client: any } }).session.client
  if (typeof client.unsafe === 'function') return client.unsafe(text, parameters, { prepare: true })
  return (await client.query(text, parameters, PGLITE_TEXT_PARSERS)).rows
}

/** Rows of a raw `execute`, whichever driver ran it. */
export async function queryRows<T = Record<string, unknown>>(executor: Executor, query: SQL): Promise<T[]> {
  const result: any = await executor.execute(query)
  return (Array.isArray(result) ? result : result.rows) as T[]
}

/** Sends a NOTIFY; inside a transaction it is delivered only if the transaction commits. */
export async function notify(executor: Executor, channel: string, payload: string): Promise<void> {
  await executor.execute(sql`select pg_notify(${channel}, ${payload})`)
}
