/**
 * Run by postgres-restart.test.ts as a process of its own (`bun tests/faults/restart-probe.ts
 * <url>`), because `bun test` counts every unhandled rejection as a failure whatever the
 * process's listeners, and a crash must end this process, not the test runner. Puts one database
 * handle (src/db.ts) under a pipelined load of statements and small transactions until stdin
 * closes, printing `ready` once it runs; then sends bursts as wide as the pool and prints one
 * JSON line: the failures by status and code, and each burst's slowest statement.
 */
import { sql } from 'drizzle-orm'
import { openDatabase } from '../../src/db'
import { mapError } from '../../src/http/error-mapper'

const POOL = 10
const WORKERS = 30

const database = await openDatabase(process.argv[2], { maxConnections: POOL })
await database.db.execute(sql`create table if not exists fault_probe (id serial primary key, note text)`)

const failures: Record<string, number> = {}
let running = true
const worker = async (n: number) => {
  for (let i = 0; running; i++) {
    try {
      // Mostly pool statements, which postgres.js pipelines on busy connections: the load that
      // leaves writes pending when a connection dies.
      if (n % 10) await database.db.execute(sql`select count(*) from fault_probe`)
      else
        await database.db.transaction(async (tx) => {
          await tx.execute(sql`insert into fault_probe (note) values (${`${n}-${i}`})`)
          await tx.execute(sql`select 1`)
        })
    } catch (error) {
      const code = (error as { code?: string }).code ?? (error as { cause?: { code?: string } }).cause?.code
      const key = `${mapError(error).status} ${code}`
      failures[key] = (failures[key] ?? 0) + 1
      await Bun.sleep(5)
    }
  }
}
const workers = Array.from({ length: WORKERS }, (_, n) => worker(n))
process.stdout.write('ready\n')

await new Response(Bun.stdin.stream()).text()
running = false
await Promise.all(workers)

const bursts: number[] = []
for (let burst = 0; burst < 3; burst++) {
  const times = await Promise.all(
    Array.from({ length: POOL }, async () => {
      const start = Date.now()
      try {
        await database.db.execute(sql`select pg_sleep(0.1)`)
        return Date.now() - start
      } catch {
        return -1
      }
    }),
  )
  bursts.push(times.includes(-1) ? -1 : Math.max(...times))
}
process.stdout.write(`${JSON.stringify({ failures, bursts })}\n`)
await database.close()
process.exit(0)
