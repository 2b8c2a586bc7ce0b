/**
 * Bulk create and PATCH are set based (docs/api.md, "Bulk"): a batch runs the same statements whatever its
 * size (numbers reserved at once, one insert, labels, field values, audit records and events one
 * statement each for the batch), gives exactly what as many single requests give (the items, their
 * audit records, their status times), and concurrent batches on one project queue without a 5xx,
 * numbered without gaps or repeats, the counts exact.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { sql } from 'drizzle-orm'
import { queryRows } from '../../src/db'
import { timeLimit } from '../helpers/database'
import { captureAny } from '../helpers/plans'
import { administratorOf, createProjectFixture, type ProjectFixture } from '../helpers/project-fixture'
import { startTestService, type TestService } from '../helpers/service'

let api: TestService
let fx: ProjectFixture
let labels: string[]
let stage: { id: string; options: { id: string; name: string }[] }
let points: { id: string }
const items = (projectId = fx.projectId) => `/api/v1/projects/${projectId}/work-items`
const bulk = (projectId = fx.projectId) => `${items(projectId)}/bulk`

beforeAll(async () => {
  // No fan-out workers: their polls would interleave with a request's statements on PGlite's one connection.
  api = await startTestService({ config: { notifications: { workers: false } } })
  fx = await createProjectFixture(api)
  const asAdmin = (await administratorOf(api, fx)).create
  labels = [(await asAdmin('/api/v1/labels', { name: 'bug', color: '#ff0000' })).id, (await asAdmin('/api/v1/labels', { name: 'ui', color: '#00ff00' })).id]
  points = await asAdmin('/api/v1/custom-fields', { key: 'points', name: 'Points', type: 'number' })
  stage = await asAdmin('/api/v1/custom-fields', { key: 'stage', name: 'Stage', type: 'single_select', options: [{ name: 'Backlog' }, { name: 'Doing' }] })
  for (const field of [points, stage]) await fx.as('owner', 'POST', `/api/v1/projects/${fx.projectId}/custom-fields`, { fieldId: field.id }, 201)
}, timeLimit(60_000))
afterAll(() => api?.stop())

/** A create body of the kind a batch carries: labels, two field values and an assignee. */
const full = (n: number) => ({
  title: `Item ${n}`,
  description: `About ${n}`,
  status: n % 3 === 0 ? 'in_progress' : 'todo',
  priority: (n % 4) + 1,
  assigneeId: fx.users.editor.id,
  labels: n % 2 ? [labels[0]] : labels,
  fields: { points: n, stage: stage.options[n % 2]!.id },
})

/**
 * The statements one request sends (transaction control apart) that name the fixture's
 * organization, as every statement of a request does: on a server, background workers' statements
 * on other connections are captured too, and they name none or another.
 */
async function statementsOf(method: string, path: string, body: unknown, status = 200) {
  const capture = captureAny(api.service.core.db)
  try {
    const statements = await capture.during(async () => {
      const response = await fx.call('editor', method, path, body)
      expect(response.status).toBe(status)
    })
    return statements.filter((statement) => statement.parameters.flat().includes(fx.organizationId))
  } finally {
    capture.release()
  }
}

/** A statement's first words: which statement it is, whatever the number of rows it carries. */
const opening = (statement: { text: string }) => statement.text.replace(/\s+/g, ' ').slice(0, 90)

/** What an item is apart from its identity and times. */
const content = ({ id: _id, number: _number, key: _key, position: _position, createdAt: _c, updatedAt: _u, ...rest }: Record<string, unknown>) => rest

describe('set-based bulk', () => {
  test('a batch of 100 sends the statements a batch of 10 sends, labels, fields, assignees and status changes included', async () => {
    // The first request reads the key (then cached) and stamps its use: a batch of one before measuring.
    await statementsOf('POST', bulk(), { items: [full(0)] })
    const small = await statementsOf('POST', bulk(), { items: Array.from({ length: 10 }, (_, n) => full(n)) })
    const large = await statementsOf('POST', bulk(), { items: Array.from({ length: 100 }, (_, n) => full(n)) })
    // The same statements in the same order (a multi-row VALUES is longer for more rows: compared by their start).
    expect(large.map(opening)).toEqual(small.map(opening))
    // A handful for the whole batch (access, assignee, numbers, position, rows, labels, fields, records, read, marks…), not seven per item.
    expect(large.length).toBeLessThanOrEqual(20)

    const created = (await fx.as('editor', 'GET', `${items()}?size=100&sort=number`)) as { id: string }[]
    const patch = (ids: readonly { id: string }[]) => ({
      items: ids.map(({ id }, n) => ({ id, status: n % 2 ? 'done' : 'in_progress', priority: 2, labels: [labels[1]], fields: { points: 1000 + n, stage: null } })),
    })
    const smallPatch = await statementsOf('PATCH', bulk(), patch(created.slice(0, 10)))
    const largePatch = await statementsOf('PATCH', bulk(), patch(created.slice(0, 100)))
    expect(largePatch.map(opening)).toEqual(smallPatch.map(opening))
    expect(largePatch.length).toBeLessThanOrEqual(20)
  }, timeLimit(60_000))

  test('a batch gives what single requests give: the items, their audit records and their status times', async () => {
    const project = (await fx.as('owner', 'POST', '/api/v1/projects', { name: 'Twin' })).id as string
    await fx.as('owner', 'POST', `/api/v1/projects/${project}/members`, { userId: fx.users.editor.id, accessLevel: 'editor' }, 201)
    for (const field of [points, stage]) await fx.as('owner', 'POST', `/api/v1/projects/${project}/custom-fields`, { fieldId: field.id }, 201)
    const bodies = Array.from({ length: 6 }, (_, n) => full(n))
    const single: Record<string, unknown>[] = []
    for (const body of bodies) single.push(await fx.as('editor', 'POST', items(project), body, 201))
    const batch = (await fx.as('editor', 'POST', bulk(project), { items: bodies }, 200)) as Record<string, unknown>[]
    expect(batch.map(content)).toEqual(single.map(content))
    expect(batch.map((item) => item.number)).toEqual([7, 8, 9, 10, 11, 12])

    const changes = (n: number) => ({ status: ['in_progress', 'done', 'todo'][n % 3], assigneeId: n % 2 ? null : fx.users.owner.id, labels: n % 2 ? [] : [labels[1]], fields: { points: n % 2 ? null : 7 } })
    // Both halves first move to done (closed_at set), then each item takes its change.
    await fx.as('editor', 'PATCH', bulk(project), { items: [...single, ...batch].map(({ id }) => ({ id, status: 'done' })) })
    for (const [n, item] of single.entries()) await fx.as('editor', 'PATCH', `${items(project)}/${item.id}`, changes(n))
    await fx.as('editor', 'PATCH', bulk(project), { items: batch.map(({ id }, n) => ({ id, ...changes(n) })) })
    const read = async (item: Record<string, unknown>) => content(await fx.as('editor', 'GET', `${items(project)}/${item.id}`))
    expect(await Promise.all(batch.map(read))).toEqual(await Promise.all(single.map(read)))

    const times = async (rows: Record<string, unknown>[]) =>
      (
        await queryRows<{ id: string; started: boolean; closed: boolean }>(
          api.service.core.db,
          sql`select id, started_at is not null as started, closed_at is not null as closed from work_items where id = any(${sql.param(rows.map((row) => row.id))}::uuid[]) order by number`,
        )
      ).map(({ started, closed }) => ({ started, closed }))
    expect(await times(batch)).toEqual(await times(single))
    expect((await times(batch)).map((time) => time.closed)).toEqual([false, true, false, false, true, false])

    const records = async (rows: Record<string, unknown>[]) => {
      const audited = await queryRows<{ resource_id: string; action: string; changes: any }>(
        api.service.core.db,
        sql`select resource_id, action, changes from audit_logs where resource_id = any(${sql.param(rows.map((row) => String(row.id)))}::text[]) order by id`,
      )
      return rows.map((row) =>
        audited
          .filter((record) => record.resource_id === row.id)
          .map(({ action, changes: { before, after } }) => ({ action, before, after: { ...after, number: undefined } })),
      )
    }
    expect(await records(batch)).toEqual(await records(single))
  }, timeLimit(60_000))

  test('8 concurrent batches of 100 on one project: every one 200, numbers without gaps or repeats, counts exact', async () => {
    const project = (await fx.as('owner', 'POST', '/api/v1/projects', { name: 'Crowd' })).id as string
    await fx.as('owner', 'POST', `/api/v1/projects/${project}/members`, { userId: fx.users.editor.id, accessLevel: 'editor' }, 201)
    const statuses = await Promise.all(
      Array.from({ length: 8 }, async (_, batch) => {
        const response = await fx.call('editor', 'POST', bulk(project), { items: Array.from({ length: 100 }, (_, n) => ({ title: `B${batch} ${n}`, status: n % 5 ? 'todo' : 'done' })) })
        return response.status
      }),
    )
    expect(statuses).toEqual(Array(8).fill(200))
    const numbers = (await queryRows<{ number: number }>(api.service.core.db, sql`select number from work_items where project_id = ${project} order by number`)).map((row) => row.number)
    expect(numbers).toEqual(Array.from({ length: 800 }, (_, n) => n + 1))
    const page = await fx.call('editor', 'GET', `${items(project)}?size=1&status=done`)
    expect(page.body.meta.totalItems).toBe(160)
    const all = await fx.call('editor', 'GET', `${items(project)}?size=1`)
    expect(all.body.meta.totalItems).toBe(800)
    const [{ n }] = (await queryRows<{ n: number }>(api.service.core.db, sql`select count(*)::int as n from audit_logs where project_id = ${project} and action = 'work_item.created'`)) as [{ n: number }]
    expect(n).toBe(800)
  }, timeLimit(120_000))
})
