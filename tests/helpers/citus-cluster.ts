/**
 * A database made on every node of a real Citus cluster for tests, as a deployment makes one
 * (the coordinator and each worker get it with the citus extension, then the workers are added).
 */
import postgres from 'postgres'

/** A database made on every node of a Citus cluster, as a deployment makes one. */
export interface ClusterDatabase {
  /** On the coordinator. */
  url: string
  /** The workers' copies (each has the extension; the schema comes from the coordinator). */
  workerUrls: string[]
  /** Drops it on every node. */
  drop(): Promise<void>
}

/**
 * Creates a database on the coordinator `adminUrl` names and on each of its workers (read from
 * `citus_get_active_worker_nodes()` in that database, so it must have the extension and its
 * workers added), with the citus extension in each and the workers added, as `cluster.sh
 * createdb` does.
 */
export async function createClusterDatabase(adminUrl: string, name: string): Promise<ClusterDatabase> {
  const onNode = async (url: URL, run: (sql: postgres.Sql) => Promise<unknown>) => {
    const client = postgres(url.toString(), { max: 1, onnotice: () => {} })
    try {
      await run(client)
    } finally {
      await client.end()
    }
  }
  const admin = new URL(adminUrl)
  const coordinator = { host: admin.hostname, port: Number(admin.port || 5432) }
  let workers: { host: string; port: number }[] = []
  await onNode(admin, async (sql) => {
    const rows = await sql
      .unsafe<{ host: string; port: number }[]>('select node_name as host, node_port as port from citus_get_active_worker_nodes() order by 1, 2')
      .catch((error: Error) => {
        throw new Error(`TEST_CITUS_URL must name a database with the citus extension and its workers added (e.g. made by cluster.sh createdb): ${error.message}`)
      })
    workers = rows.map((row) => ({ host: row.host, port: Number(row.port) }))
  })
  if (!workers.length) throw new Error('TEST_CITUS_URL names a Citus database with no workers added')
  const nodes = [coordinator, ...workers]
  const on = (node: { host: string; port: number }, database: string) => {
    const url = new URL(adminUrl)
    url.hostname = node.host
    url.port = String(node.port)
    url.pathname = `/${database}`
    return url
  }
  const drop = async () => {
    for (const node of nodes) await onNode(on(node, admin.pathname.slice(1)), (sql) => sql.unsafe(`drop database if exists "${name}" with (force)`))
  }
  try {
    for (const node of nodes) {
      await onNode(on(node, admin.pathname.slice(1)), (sql) => sql.unsafe(`create database "${name}"`))
      await onNode(on(node, name), (sql) => sql.unsafe('create extension citus'))
    }
    await onNode(on(coordinator, name), async (sql) => {
      await sql`select citus_set_coordinator_host(${coordinator.host}, ${coordinator.port})`
      for (const worker of workers) await sql`select citus_add_node(${worker.host}, ${worker.port})`
    })
  } catch (error) {
    await drop()
    throw error
  }
  return { url: on(coordinator, name).toString(), workerUrls: workers.map((worker) => on(worker, name).toString()), drop }
}
