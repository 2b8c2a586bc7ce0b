/**
 * Labels, custom fields and bulk changes, through the real service on the PostgreSQL server
 * (BENCH_FIELDS_ROWS, default 100,000; BENCH_FIELDS_SAMPLES, default 60; BENCH_FIELDS_ROUNDS,
 * default 10).
 * - Custom-field filters at 100k work items in one project, every item with a number field
 *   (`points`, 0..999) and a single select (`severity`, three options): page 0 (`size=100`) of
 *   `field.points=gte:X` (X from 990 to 999: about 1 % of the items), `field.severity=<name>`
 *   (a third), `sort=-field.points`, and, for comparison, the unfiltered page 0 and
 *   `priority=3` (a fifth, a column of the row). Each timed read is the first after a PATCH of
 *   another item (the project's list version moves: no cached page), sequential, p50 / p99.
 * - Creating 100 work items (each with a title and a `points` value): one bulk request against 100
 *   single POSTs one after the other, same bodies, alternating rounds, medians and their ratio.
 */
import { sql as sqlText } from 'drizzle-orm'
import { openDatabase, queryText } from '../../src/db'
import { seededDatabase } from '../lib/database'
import { LIST_CACHE_BYTES, startService } from '../lib/processes'
import { recordResult, sectionHead, writeSection } from '../lib/results'
import { percentile, round } from '../lib/stats'
import { seedOrganization } from '../seed/organization'
import { seedWork, withoutTextIndexes } from '../seed/work'
import { TARGETS } from '../targets'

export const name = 'fields'
export const target = TARGETS[name]

const ROWS = Number(process.env.BENCH_FIELDS_ROWS ?? 100_000)
const SAMPLES = Number(process.env.BENCH_FIELDS_SAMPLES ?? 60)
const ROUNDS = Number(process.env.BENCH_FIELDS_ROUNDS ?? 10)
const PORT = 3851

const median = (values: number[]) => percentile(values, 0.5)

export async function run(): Promise<void> {
  console.log(`fields: seeding ${ROWS} work items …`)
  const scopes = ['work_items:read', 'work_items:write', 'custom_fields:read', 'custom_fields:write', 'labels:read', 'labels:write']
  const { url, seeded } = await seededDatabase('worktrack_bench_fields', async (db) => {
    const seeded = await seedOrganization(db, { scopes, role: 'administrator' })
    await withoutTextIndexes(db, () => seedWork(db, seeded, { workItems: ROWS, entries: 0 }))
    return seeded
  })
  const database = await openDatabase(url)
  const service = await startService(url, PORT, { config: { server: { listCacheBytes: LIST_CACHE_BYTES } } })
  const base = `http://127.0.0.1:${PORT}/api/v1`
  const headers = { authorization: `Bearer ${seeded.secret}`, 'content-type': 'application/json' }
  const call = async (method: string, path: string, body?: unknown): Promise<{ status: number; body: any; ms: number }> => {
    const started = performance.now()
    const answer = await fetch(`${base}${path}`, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) })
    const text = await answer.text()
    return { status: answer.status, body: text ? JSON.parse(text) : null, ms: performance.now() - started }
  }
  const must = async (method: string, path: string, body?: unknown) => {
    const answer = await call(method, path, body)
    if (answer.status >= 300) throw new Error(`${method} ${path}: ${answer.status} ${JSON.stringify(answer.body).slice(0, 500)}`)
    return answer
  }

  try {
    const points = (await must('POST', '/custom-fields', { key: 'points', name: 'Points', type: 'number' })).body.data
    const severity = (await must('POST', '/custom-fields', { key: 'severity', name: 'Severity', type: 'single_select', options: [{ name: 'High' }, { name: 'Medium' }, { name: 'Low' }] })).body.data
    for (const field of [points, severity]) await must('POST', `/projects/${seeded.projectId}/custom-fields`, { fieldId: field.id })
    const options: string[] = severity.options.map((option: { id: string }) => option.id)
    // Every item gets both values, as the service would store them (value shown, typed columns).
    await queryText(
      database.db,
      `insert into work_item_field_values (work_item_id, field_id, organization_id, project_id, field_key, value, number_value)
         select id, $1, organization_id, project_id, 'points', to_jsonb(number % 1000), number % 1000 from work_items where project_id = $2`,
      [points.id, seeded.projectId],
    )
    await queryText(
      database.db,
      `insert into work_item_field_values (work_item_id, field_id, organization_id, project_id, field_key, value, option_ids)
         select id, $1, organization_id, project_id, 'severity', to_jsonb(($3::uuid[])[1 + number % 3]), array[($3::uuid[])[1 + number % 3]] from work_items where project_id = $2`,
      [severity.id, seeded.projectId, options],
    )
    await database.db.execute(sqlText.raw('vacuum (analyze) work_items, work_item_field_values'))

    const items = await queryText<{ id: string }>(database.db, 'select id from work_items where project_id = $1 order by number limit 200', [seeded.projectId])
    let patches = 0
    /** A PATCH of another item first (untimed): the read after it finds no cached page. */
    const cold = async (query: string) => {
      await must('PATCH', `/projects/${seeded.projectId}/work-items/${items[patches++ % items.length]!.id}`, { title: `Cold ${patches}` })
      return must('GET', `/projects/${seeded.projectId}/work-items?size=100&${query}`)
    }
    const shapes: { name: string; query: (i: number) => string; expect: (i: number) => number | null }[] = [
      { name: 'unfiltered page 0', query: () => '', expect: () => ROWS },
      { name: '`priority=3` (a fifth)', query: () => 'priority=3', expect: () => null },
      { name: '`field.points=gte:X`, X 990..999 (~1 %)', query: (i) => `field.points=gte:${990 + (i % 10)}`, expect: () => null },
      { name: '`field.severity=High` (a third)', query: () => 'field.severity=High', expect: () => Math.floor(ROWS / 3) },
      { name: '`sort=-field.points`', query: () => 'sort=-field.points', expect: () => ROWS },
    ]
    const timings = new Map<string, number[]>(shapes.map((shape) => [shape.name, []]))
    const totals = new Map<string, number>()
    for (let i = 0; i < SAMPLES; i++)
      for (const shape of shapes) {
        const answer = await cold(shape.query(i))
        const expected = shape.expect(i)
        if (expected !== null && answer.body.meta.totalItems !== expected) throw new Error(`${shape.name}: totalItems ${answer.body.meta.totalItems}, expected ${expected}`)
        timings.get(shape.name)!.push(answer.ms)
        totals.set(shape.name, answer.body.meta.totalItems)
      }

    // Bulk against single creates: same 100 bodies, rounds alternating.
    const bodies = (round: number) => Array.from({ length: 100 }, (_, i) => ({ title: `Bulk ${round}.${i}`, fields: { points: i } }))
    const bulk: number[] = []
    const single: number[] = []
    for (let r = 0; r < ROUNDS; r++) {
      const started = performance.now()
      const answer = await must('POST', `/projects/${seeded.projectId}/work-items/bulk`, { items: bodies(r) })
      bulk.push(performance.now() - started)
      if (answer.body.data.length !== 100) throw new Error(`bulk created ${answer.body.data.length}`)
      const began = performance.now()
      for (const body of bodies(r)) await must('POST', `/projects/${seeded.projectId}/work-items`, body)
      single.push(performance.now() - began)
    }
    const [created] = await queryText<{ count: string }>(database.db, "select count(*) from work_items where project_id = $1 and title like 'Bulk %'", [seeded.projectId])
    if (Number(created!.count) !== ROUNDS * 200) throw new Error(`created ${created!.count} bulk and single items, expected ${ROUNDS * 200}`)

    const rows = shapes.map((shape) => {
      const values = timings.get(shape.name)!
      return `| ${shape.name} | ${round(totals.get(shape.name)!)} | ${round(median(values), 1)} | ${round(percentile(values, 0.99), 1)} |`
    })
    writeSection(
      name,
      `## Labels, custom fields, bulk

${sectionHead(`\`npm run bench -- fields\` (BENCH_FIELDS_ROWS=${ROWS}, BENCH_FIELDS_SAMPLES=${SAMPLES}, BENCH_FIELDS_ROUNDS=${ROUNDS}; PostgreSQL server)`)}

One project of ${round(ROWS)} work items, each with a number field \`points\` (0..999) and a single select \`severity\` (3 options), values in \`work_item_field_values\` (typed columns, partial B-tree indexes per type within project and field, GIN on option ids). \`GET …/work-items?size=100&…\`, each the first read after a PATCH of another item (no cached page), sequential, ${SAMPLES} samples per shape, interleaved:

| shape | totalItems | p50 ms | p99 ms |
|---|---|---|---|
${rows.join('\n')}

Creating 100 work items with a \`points\` value, ${ROUNDS} rounds: one \`POST …/work-items/bulk\` median ${round(median(bulk), 1)} ms; 100 single \`POST …/work-items\` one after the other median ${round(median(single), 1)} ms: bulk is **${round(median(single) / median(bulk), 1)}×** faster (same bodies, one transaction instead of 100, one access check, the answers of all 100 in one response). ${target.filters}`,
    )
    recordResult(name, {
      rows: ROWS,
      samples: SAMPLES,
      shapes: shapes.map((shape) => ({ name: shape.name, totalItems: totals.get(shape.name)!, p50: median(timings.get(shape.name)!), p99: percentile(timings.get(shape.name)!, 0.99) })),
      bulkMs: median(bulk),
      singleMs: median(single),
    })
  } finally {
    await service.stop()
    await database.close()
  }
}
