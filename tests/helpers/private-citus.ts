/**
 * A throwaway Citus cluster for tests that change the cluster itself (add a node, stop one): a
 * coordinator and workers, each a private PostgreSQL server (tests/helpers/private-postgres.ts)
 * on a free port, so no shared server or cluster is touched. A database is made as a deployment
 * makes one (on every node with the extension, then the workers added); a worker added later
 * gets every such database, with the extension, before it joins.
 */
import { existsSync } from 'node:fs'
import { join } from 'node:path'
import postgres from 'postgres'
import { privatePostgresUnavailable, startPrivatePostgres, type PrivatePostgres } from './private-postgres'

const BIN = process.env.PG_BIN_DIR ?? '/usr/lib/postgresql/15/bin'

export interface PrivateCitus {
  coordinator: PrivatePostgres
  /** In the order they joined (`addWorker` appends). */
  workers: PrivatePostgres[]
  /** Makes `name` on every node with the citus extension and adds the workers; returns its URL on the coordinator. */
  createDatabase(name: string): Promise<string>
  /** The URL of `database` on `node`. */
  urlOf(node: PrivatePostgres, database: string): string
  /** Starts one more worker, makes every database of the cluster on it, and adds it to each. */
  addWorker(): Promise<PrivatePostgres>
  /** Stops worker `index` (`fast`: its sessions are terminated, as in a clean shutdown). */
  stopWorker(index: number, mode?: 'fast' | 'immediate'): Promise<void>
  startWorker(index: number): Promise<void>
  /** Stops every node and deletes their directories. */
  destroy(): Promise<void>
}

export interface PrivateCitusOptions {
  /** Workers to start with (default 2). */
  workers?: number
  /** Further server settings for every node (e.g. `citus.shard_count`). */
  settings?: Record<string, string | number>
}

/** The directory PostgreSQL loads extension libraries from. */
function libraryDirectory(): string {
  const pgConfig = join(BIN, 'pg_config')
  if (existsSync(pgConfig)) {
    const out = Bun.spawnSync([pgConfig, '--pkglibdir']).stdout.toString().trim()
    if (out) return out
  }
  return join(BIN, '..', 'lib')
}

/** Why a private Citus cluster cannot run here, or undefined when it can. */
export function privateCitusUnavailable(): string | undefined {
  const server = privatePostgresUnavailable()
  if (server) return server
  const library = join(libraryDirectory(), 'citus.so')
  return existsSync(library) ? undefined : `Citus is not installed for these PostgreSQL binaries (no ${library})`
}

async function onNode(url: string, run: (sql: postgres.Sql) => Promise<unknown>): Promise<void> {
  const client = postgres(url, { max: 1, onnotice: () => {} })
  try {
    await run(client)
  } finally {
    await client.end({ timeout: 5 })
  }
}

/** Starts a coordinator and `workers` workers, each a private server loading Citus. */
export async function startPrivateCitus(options: PrivateCitusOptions = {}): Promise<PrivateCitus> {
  const reason = privateCitusUnavailable()
  if (reason) throw new Error(`cannot start a private Citus cluster: ${reason}`)
  const start = () => startPrivatePostgres({ citus: true, settings: options.settings })
  const nodes = await Promise.allSettled([start(), ...Array.from({ length: options.workers ?? 2 }, start)])
  const started = nodes.flatMap((node) => (node.status === 'fulfilled' ? [node.value] : []))
  const failed = nodes.find((node) => node.status === 'rejected')
  if (failed) {
    await Promise.all(started.map((node) => node.destroy().catch(() => {})))
    throw (failed as PromiseRejectedResult).reason
  }
  const [coordinator, ...workers] = started as [PrivatePostgres, ...PrivatePostgres[]]
  const databases: string[] = []

  const urlOf = (node: PrivatePostgres, database: string) => `postgres://postgres@127.0.0.1:${node.port}/${database}`
  const prepare = async (node: PrivatePostgres, database: string) => {
    await onNode(node.url, (sql) => sql.unsafe(`create database "${database}"`))
    await onNode(urlOf(node, database), (sql) => sql.unsafe('create extension citus'))
  }
  const addNode = (database: string, worker: PrivatePostgres) => onNode(urlOf(coordinator, database), (sql) => sql`select citus_add_node('127.0.0.1', ${worker.port})`)

  return {
    coordinator,
    workers,
    urlOf,
    async createDatabase(name) {
      for (const node of [coordinator, ...workers]) await prepare(node, name)
      await onNode(urlOf(coordinator, name), (sql) => sql`select citus_set_coordinator_host('127.0.0.1', ${coordinator.port})`)
      for (const worker of workers) await addNode(name, worker)
      databases.push(name)
      return urlOf(coordinator, name)
    },
    async addWorker() {
      const worker = await start()
      try {
        for (const database of databases) await prepare(worker, database)
        for (const database of databases) await addNode(database, worker)
      } catch (error) {
        await worker.destroy().catch(() => {})
        throw error
      }
      workers.push(worker)
      return worker
    },
    stopWorker: (index, mode = 'fast') => workers[index]!.stop(mode),
    startWorker: (index) => workers[index]!.start(),
    async destroy() {
      await Promise.all([coordinator, ...workers].map((node) => node.destroy().catch(() => {})))
    },
  }
}
