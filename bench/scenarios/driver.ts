/**
 * The list access check (the caller's level on the project and the list versions) through
 * postgres.js, as the service's pool runs it, against pgbench running the same statement, in one
 * run: prepared and not, pool sizes, and `select 1` for the driver's own floor. The client's CPU
 * per query is read from process.cpuUsage().
 */
import postgres from 'postgres'
import { accessCheckStatement } from '../../plugins/projects/api'
import type { DriverShape } from '../figures'
import { seededDatabase } from '../lib/database'
import { asPgbench, pgbench } from '../lib/pgbench'
import { recordResult, sectionHead, writeSection } from '../lib/results'
import { DURATION_SECONDS } from '../lib/settings'
import { round } from '../lib/stats'
import { seedOrganization } from '../seed/organization'
import { TARGETS } from '../targets'

export const name = 'driver'
export const target = TARGETS[name]

const IN_FLIGHT = 64

async function drive(url: string, label: string, options: { max: number; prepare: boolean; text: string; parameters: unknown[] }): Promise<DriverShape> {
  const sql = postgres(url, { max: options.max, prepare: options.prepare, onnotice: () => {} })
  const query = () => sql.unsafe(options.text, options.parameters as never[], { prepare: options.prepare })
  try {
    // Every connection open (and the statement prepared on it) before the clock starts.
    await Promise.all(Array.from({ length: options.max * 4 }, query))
    let done = 0
    const until = performance.now() + DURATION_SECONDS * 1000
    const cpu = process.cpuUsage()
    await Promise.all(
      Array.from({ length: IN_FLIGHT }, async () => {
        while (performance.now() < until) {
          await query()
          done++
        }
      }),
    )
    const used = process.cpuUsage(cpu)
    const shape = { label, queriesPerSecond: done / DURATION_SECONDS, clientMicros: Number(((used.user + used.system) / done).toFixed(1)) }
    console.log(`driver: ${label}: ${round(shape.queriesPerSecond)} q/s, ${shape.clientMicros} µs of client CPU per query`)
    return shape
  } finally {
    await sql.end()
  }
}

export async function run(): Promise<void> {
  const { url, seeded } = await seededDatabase('worktrack_bench_driver', (db) => seedOrganization(db, { scopes: ['work_items:read'] }))
  const values: Record<string, string> = { user: seeded.userId, project: seeded.projectId, organization: seeded.organizationId }
  const check = accessCheckStatement({ versions: true })
  const script = asPgbench(check)
  const pgbench32 = await pgbench(url, script, { variables: values, clients: 32 })
  const pgbench10 = await pgbench(url, script, { variables: values, clients: 10 })
  const access = { text: check.text, parameters: check.parameters.map((name) => values[name]!) }
  const shapes = [
    await drive(url, "postgres.js, pool of 10 (the service's default), prepared (the service's way)", { max: 10, prepare: true, ...access }),
    await drive(url, 'postgres.js, pool of 10, unprepared', { max: 10, prepare: false, ...access }),
    await drive(url, 'postgres.js, pool of 2, prepared', { max: 2, prepare: true, ...access }),
    await drive(url, 'postgres.js, pool of 32, prepared', { max: 32, prepare: true, ...access }),
    await drive(url, 'postgres.js, pool of 10, `select 1`', { max: 10, prepare: true, text: 'select 1', parameters: [] }),
  ]
  const ceiling = Math.max(pgbench32, pgbench10)
  writeSection(
    name,
    `## The list access check through postgres.js vs pgbench

${sectionHead(`\`npm run bench -- driver\` (the projects plugin's list access check — the caller's level on the project and the two list versions — with one member's parameters; postgres.js with ${IN_FLIGHT} queries in flight for ${DURATION_SECONDS} s in this process, after every connection was opened; pgbench \`-M prepared\`, 2 threads, ${DURATION_SECONDS} s)`)}
- pgbench: ${round(pgbench32)} TPS with 32 clients, ${round(pgbench10)} with 10. ${target.accessCheck}

| driver | queries/s | ÷ pgbench (best) | client CPU µs per query |
|---|---:|---:|---:|
${shapes.map((shape) => `| ${shape.label} | ${round(shape.queriesPerSecond)} | ${round(shape.queriesPerSecond / ceiling, 2)} | ${shape.clientMicros} |`).join('\n')}`,
  )
  recordResult(name, { pgbench32, pgbench10, shapes })
}
