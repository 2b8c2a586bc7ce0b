/**
 * A project's import (POST /api/v1/projects/{projectId}/import, docs/api.md "Moving work in and
 * out"): the export's NDJSON into a new project gives, exported again, the same content apart from
 * ids and times (labels, custom field values with their options, assignees, entries,
 * relationships, members, numbers and positions); all or nothing, a refused line named by number;
 * a project with work items is 409; a CSV of work items (a Jira-like export: BOM, CRLF, quoted
 * cells with commas and line breaks) is imported with its labels by name and assignees by email;
 * one audit record and one event, none per item; the counts exact afterwards.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { timeLimit, sqlOn } from '../helpers/database'
import { administratorOf, createProjectFixture, type ProjectFixture } from '../helpers/project-fixture'
import { startTestService, type TestService } from '../helpers/service'

let api: TestService
let fx: ProjectFixture
let admin: { userId: string; key: string; create(path: string, body: unknown): Promise<any> }
let stage: { id: string; options: { id: string; name: string }[] }
const sql = sqlOn(() => api)
const ITEMS = 30

const exportOf = async (projectId: string, key = fx.keys.owner) => {
  const response = await api.request('GET', `/api/v1/projects/${projectId}/export`, { key })
  expect(response.status).toBe(200)
  return response.text
}
const importInto = (projectId: string, body: string, type = 'application/x-ndjson', key = fx.keys.owner) =>
  api.request('POST', `/api/v1/projects/${projectId}/import`, { key, rawBody: body, headers: { 'content-type': type } })
const newProject = async (name: string, who: 'owner' | 'editor' = 'owner') => (await fx.as(who, 'POST', '/api/v1/projects', { name }, 201)).id as string

/** An import whose body is a stream the test controls (held open, or stopped mid-way), straight through the service. */
const streamedImport = (service: TestService, projectId: string, key: string, body: ReadableStream<Uint8Array>) =>
  service.service.fetch(
    new Request(`http://localhost/api/v1/projects/${projectId}/import`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/x-ndjson' },
      body,
      // @ts-expect-error: a streamed request body
      duplex: 'half',
    }),
  )

/**
 * An export's content apart from ids and times: work items by number, references by number,
 * labels by name; the project line and the project's own key left out.
 */
function content(text: string) {
  const lines = text
    .split('\n')
    .filter(Boolean)
    .map((line) => JSON.parse(line) as { type: string; data: any })
  const numberOf = new Map(lines.filter((line) => line.type === 'work_item').map((line) => [line.data.id, line.data.number]))
  const strip = ({ id: _i, projectId: _p, createdAt: _c, updatedAt: _u, key: _k, createdBy: _b, ...rest }: any) => rest
  return lines
    .filter((line) => line.type !== 'project')
    .map(({ type, data }) => {
      if (type === 'work_item') return { type, data: { ...strip(data), labels: data.labels.map((label: any) => label.name) } }
      if (type === 'entry') return { type, data: { ...strip(data), workItemId: numberOf.get(data.workItemId) } }
      if (type === 'relationship') return { type, data: { ...strip(data), sourceWorkItemId: numberOf.get(data.sourceWorkItemId), targetWorkItemId: numberOf.get(data.targetWorkItemId) } }
      if (type === 'member') return { type, data: { userId: data.userId, accessLevel: data.accessLevel } }
      return { type, data: strip(data) }
    })
    .sort((a, b) => JSON.stringify(a).localeCompare(JSON.stringify(b)))
}

let source: string
let sourceExport: string

beforeAll(async () => {
  api = await startTestService({ config: { notifications: { workers: false }, projects: { importsAtOnce: 1 } } })
  fx = await createProjectFixture(api)
  admin = await administratorOf(api, fx)
  source = fx.projectId
  const bug = await admin.create('/api/v1/labels', { name: 'bug', color: '#ff0000' })
  const ui = await admin.create('/api/v1/labels', { name: 'ui', color: '#00ff00' })
  stage = await admin.create('/api/v1/custom-fields', { key: 'stage', name: 'Stage', type: 'single_select', options: [{ name: 'Backlog' }, { name: 'Doing' }] })
  await admin.create('/api/v1/custom-fields', { key: 'points', name: 'Points', type: 'number' })
  for (const key of ['stage', 'points']) {
    const field = (await api.request('GET', '/api/v1/custom-fields?size=100', { key: admin.key })).body.data.find((f: any) => f.key === key)
    await fx.as('owner', 'POST', `/api/v1/projects/${source}/custom-fields`, { fieldId: field.id }, 201)
  }
  const items = Array.from({ length: ITEMS }, (_, n) => ({
    title: `Item ${n}`,
    description: n % 2 ? `About ${n}` : null,
    status: (['todo', 'in_progress', 'done'] as const)[n % 3],
    priority: n % 5,
    ...(n % 4 === 0 ? { assigneeId: fx.users.editor.id } : {}),
    labels: n % 3 === 0 ? [bug.id, ui.id] : n % 3 === 1 ? [bug.id] : [],
    fields: { points: n, ...(n % 2 ? { stage: stage.options[n % 2]!.id } : {}) },
    ...(n % 5 === 0 ? { dueDate: '2027-01-15' } : {}),
  }))
  const created = (await fx.as('editor', 'POST', `/api/v1/projects/${source}/work-items/bulk`, { items }, 200)) as { id: string }[]
  // A gap in the numbers and a changed order: both kept.
  await fx.as('owner', 'DELETE', `/api/v1/work-items/${created[5]!.id}`)
  await fx.as('editor', 'POST', `/api/v1/work-items/${created[0]!.id}/entries`, { kind: 'comment', body: 'First' }, 201)
  await fx.as('owner', 'POST', `/api/v1/work-items/${created[0]!.id}/entries`, { kind: 'comment', body: 'Second, by the owner' }, 201)
  await fx.as('editor', 'POST', `/api/v1/work-items/${created[1]!.id}/entries`, { kind: 'note', body: 'A note' }, 201)
  await fx.as('editor', 'POST', `/api/v1/projects/${source}/relationships`, { sourceWorkItemId: created[0]!.id, targetWorkItemId: created[1]!.id, type: 'blocks' }, 201)
  await fx.as('editor', 'POST', `/api/v1/projects/${source}/relationships`, { sourceWorkItemId: created[2]!.id, targetWorkItemId: created[3]!.id, type: 'relates_to' }, 201)
  sourceExport = await exportOf(source)
}, timeLimit(120_000))
afterAll(() => api?.stop())

describe('project import', () => {
  test('export → import into a new project → export: the same content apart from ids and times; one audit record and one event', async () => {
    const target = await newProject('Imported')
    // Every change event of the organization while the import runs.
    const events: { type: string; data: any }[] = []
    const stop = api.service.core.changes.observe({
      wants: (organizationId) => organizationId === fx.organizationId,
      observe: async (_tx, event) => void events.push({ type: event.type, data: await event.data() }),
    })
    const answer = await importInto(target, sourceExport)
    stop()
    expect(events).toEqual([{ type: 'project.imported', data: { projectId: target, imported: answer.body.data.imported } }])
    expect(answer.status, answer.text).toBe(200)
    expect(answer.body.data.imported).toEqual({ label: 0, custom_field: 0, member: 2, work_item: ITEMS - 1, entry: 3, relationship: 2 })
    expect(answer.body.data.notes).toEqual([])
    // One audit record for the whole import (beside the project's creation), none per item.
    const audits = await sql<{ action: string; changes: any }>(`select action, changes from audit_logs where organization_id = $1 and project_id = $2`, [fx.organizationId, target])
    expect(audits.map((row) => row.action).sort()).toEqual(['project.created', 'project.imported'])
    expect(audits.find((row) => row.action === 'project.imported')!.changes.after.imported).toEqual(answer.body.data.imported)
    const again = await exportOf(target)
    expect(content(again)).toEqual(content(sourceExport))
    // The keys take the new project's key; numbers are kept (the gap at 6 too).
    const project = await fx.as('owner', 'GET', `/api/v1/projects/${target}`)
    const six = await fx.call('owner', 'GET', `/api/v1/work-items/${project.key}-6`)
    expect(six.status).toBe(404)
    expect((await fx.as('owner', 'GET', `/api/v1/work-items/${project.key}-7`)).title).toBe('Item 6')
    // A new work item continues after the highest imported number.
    const next = await fx.as('editor', 'POST', `/api/v1/projects/${target}/work-items`, { title: 'After the import' }, 201)
    expect(next.number).toBe(ITEMS + 1)
    await fx.as('owner', 'DELETE', `/api/v1/work-items/${next.id}`)
    // Exact counts: the list totals and the project summary agree with the rows.
    const list = await fx.call('owner', 'GET', `/api/v1/projects/${target}/work-items?status=done&size=1`)
    expect(list.body.meta.totalItems).toBe(content(sourceExport).filter((line) => line.type === 'work_item' && line.data.status === 'done').length)
    const entries = await fx.call('owner', 'GET', `/api/v1/work-items/${(await fx.as('owner', 'GET', `/api/v1/work-items/${project.key}-1`)).id}/entries?kind=comment&size=1`)
    expect(entries.body.meta.totalItems).toBe(2)
    const relations = await fx.call('owner', 'GET', `/api/v1/projects/${target}/relationships?type=blocks&size=1`)
    expect(relations.body.meta.totalItems).toBe(1)
  }, timeLimit(60_000))

  test('into another organization by its administrator: labels and custom fields made there, options remapped by name, people not there left out and noted', async () => {
    const other = await createProjectFixture(api)
    const otherAdmin = await administratorOf(api, other)
    const created = await api.request('POST', '/api/v1/projects', { key: otherAdmin.key, body: { name: 'Elsewhere' } })
    const target = created.body.data.id as string
    const answer = await importInto(target, sourceExport, 'application/x-ndjson', otherAdmin.key)
    expect(answer.status, answer.text).toBe(200)
    expect(answer.body.data.imported).toMatchObject({ label: 2, custom_field: 2, member: 0, work_item: ITEMS - 1, entry: 3, relationship: 2 })
    expect(answer.body.data.notes.length).toBe(Math.min(20, 3 + Math.ceil(ITEMS / 4) + 3))
    expect(answer.body.data.notes[0]).toMatch(/^line \d+: .* is not an active user of this organization: not added$/)
    const exported = (await api.request('GET', `/api/v1/projects/${target}/export`, { key: otherAdmin.key })).text
    const lines = exported.split('\n').filter(Boolean).map((line) => JSON.parse(line) as { type: string; data: any })
    const theirStage = lines.find((line) => line.type === 'custom_field' && line.data.key === 'stage')!.data
    expect(theirStage.id).not.toBe(stage.id)
    const optionName = (field: { options: { id: string; name: string }[] }, id: string) => field.options.find((option) => option.id === id)?.name
    const sourceItems = new Map(content(sourceExport).filter((line) => line.type === 'work_item').map((line) => [line.data.number, line.data]))
    for (const { type, data } of lines.filter((line) => line.type === 'work_item')) {
      const before = sourceItems.get(data.number)!
      expect(type).toBe('work_item')
      expect(data.assigneeId).toBeNull()
      expect(data.labels.map((label: any) => label.name)).toEqual(before.labels)
      expect(data.fields.points).toBe(before.fields.points)
      expect(data.fields.stage === undefined ? undefined : optionName(theirStage, data.fields.stage)).toBe(before.fields.stage === undefined ? undefined : optionName(stage, before.fields.stage))
    }
    // The entries' authors are not in this organization: the importer wrote them.
    expect(new Set(lines.filter((line) => line.type === 'entry').map((line) => line.data.authorId))).toEqual(new Set([otherAdmin.userId]))
  }, timeLimit(60_000))

  test('all or nothing: a refused line is named by number, at most 20, and nothing is written', async () => {
    const target = await newProject('Refused')
    const lines = sourceExport.split('\n').filter(Boolean)
    const at = lines.findIndex((line) => line.includes('"type":"work_item"'))
    const broken = [...lines]
    broken[at + 2] = JSON.stringify({ type: 'work_item', data: { ...JSON.parse(lines[at + 2]!).data, status: 'nearly' } })
    broken.push('not json', JSON.stringify({ type: 'spaceship', data: {} }))
    const answer = await importInto(target, broken.join('\n'))
    expect(answer.status).toBe(400)
    const messages = answer.body.errors.map((error: any) => error.message)
    expect(messages[0]).toStartWith(`line ${broken.length - 1}: not a JSON object`)
    expect(messages[1]).toStartWith(`line ${broken.length}: unknown type "spaceship"`)
    const statusRefused = await importInto(target, broken.slice(0, -2).join('\n'))
    expect(statusRefused.status).toBe(400)
    expect(statusRefused.body.errors).toHaveLength(1)
    expect(statusRefused.body.errors[0].message).toBe(`line ${at + 3}: Invalid field "status": must be one of "todo", "in_progress", "done", "cancelled".`)
    // Many bad lines: the first 20, in line order.
    const many = Array.from({ length: 30 }, (_, n) => JSON.stringify({ type: 'work_item', data: { title: '', number: n + 1 } })).join('\n')
    const twenty = await importInto(target, many)
    expect(twenty.status).toBe(400)
    expect(twenty.body.errors.map((error: any) => Number(/^line (\d+)/.exec(error.message)![1]))).toEqual(Array.from({ length: 20 }, (_, n) => n + 1))
    const [{ n }] = await sql(`select count(*)::int as n from work_items where organization_id = $1 and project_id = $2`, [fx.organizationId, target])
    expect(n).toBe(0)
    expect(await sql(`select 1 from audit_logs where project_id = $1 and action = 'project.imported'`, [target])).toEqual([])
  }, timeLimit(60_000))

  test('hostile lines are refused by number, never a 5xx: NUL characters, lone surrogates, deep nesting, numbers past an integer, too many labels, too many lines, a CSV cell with NUL', async () => {
    const target = await newProject('Hostile')
    const item = (data: Record<string, unknown>) => JSON.stringify({ type: 'work_item', data: { title: 'Fine', ...data } })
    const lines = [
      item({}),
      item({ title: 'nul \u0000 inside' }).replace('\\u0000', '\u0000'),
      item({}).replace('"Fine"', '"lone \\ud800 half"'),
      `{"type": "work_item", "data": {"title": "deep", "x": ${'['.repeat(5000)}${']'.repeat(5000)}}}`,
      item({ labels: Array.from({ length: 60 }, (_, n) => ({ name: `l${n}` })) }),
    ]
    const answer = await importInto(target, lines.join('\n'))
    expect(answer.status).toBe(400)
    expect(answer.body.errors.map((error: any) => error.message.replace(/:.*/, ''))).toEqual(['line 2', 'line 3', 'line 4'])
    // Past the parser: 51 labels on a work item is too many (an administrator's import, which may create them: nothing is).
    const adminProject = (await api.request('POST', '/api/v1/projects', { key: admin.key, body: { name: 'Too many labels' } })).body.data.id
    const many = await importInto(adminProject, item({ labels: Array.from({ length: 51 }, (_, n) => ({ name: `many ${n}` })) }), 'application/x-ndjson', admin.key)
    expect(many.status).toBe(400)
    expect(many.body.errors.map((error: any) => error.message)).toEqual(["line 1: The work item's labels must have at most 50 items."])
    expect(await sql(`select 1 from labels where organization_id = $1 and name like 'many %'`, [fx.organizationId])).toEqual([])
    // Numbers and positions beyond an integer column are renumbered, not a 5xx.
    const big = await importInto(target, item({ number: 1e12, position: 1e15 }))
    expect(big.status, big.text).toBe(200)
    expect((await fx.as('owner', 'GET', `/api/v1/projects/${target}/work-items`))[0]).toMatchObject({ number: 1, position: 0 })
    // A body of bad lines is read only to its 20th: the answer comes while the rest is still unsent.
    let push!: ReadableStreamDefaultController<Uint8Array>
    const endless = new ReadableStream<Uint8Array>({ start: (controller) => void (push = controller) })
    push.enqueue(new TextEncoder().encode('1\n'.repeat(25)))
    const garbage = await streamedImport(api, target, fx.keys.owner, endless)
    expect(garbage.status).toBe(400)
    expect(((await garbage.json()) as any).errors.map((error: any) => error.message)).toEqual(Array.from({ length: 20 }, (_, n) => `line ${n + 1}: a line is {"type": …, "data": {…}}`))
    // At most 250,000 lines, whatever their size.
    const tooMany = await importInto(target, `${item({})}\n`.repeat(250_001))
    expect(tooMany.status).toBe(400)
    expect(tooMany.body.errors[0].message).toBe('An import may hold at most 250,000 lines.')
    const csv = await importInto(await newProject('Hostile CSV'), 'title\nfine\n"nul \u0000 cell"\n', 'text/csv')
    expect(csv.status).toBe(400)
    expect(csv.body.errors[0].message).toBe('line 3: a cell holds the character U+0000 (NUL), which text cannot hold')
  }, timeLimit(60_000))

  test('a project that has work items is 409; the owner only, with the write scopes; a project the caller cannot see is 404', async () => {
    expect((await importInto(source, sourceExport)).status).toBe(409)
    const target = await newProject('Guarded')
    expect((await importInto(target, sourceExport, 'application/x-ndjson', fx.keys.editor)).status).toBe(404)
    await fx.as('owner', 'POST', `/api/v1/projects/${target}/members`, { userId: fx.users.editor.id, accessLevel: 'editor' }, 201)
    expect((await importInto(target, sourceExport, 'application/x-ndjson', fx.keys.editor)).status).toBe(403)
    const stranger = await createProjectFixture(api)
    expect((await importInto(target, sourceExport, 'application/x-ndjson', stranger.keys.owner)).status).toBe(404)
    const all = api.service.core.scopes.map((scope) => scope.name)
    const lacking = (await api.createKey(fx.users.owner.id, all.filter((scope) => scope !== 'relationships:write'))).secret
    const refused = await importInto(target, sourceExport, 'application/x-ndjson', lacking)
    expect(refused.status).toBe(403)
    expect(refused.text).toContain('relationships:write')
    expect((await importInto(target, '{"title": "x"}', 'application/json')).status).toBe(400)
  }, timeLimit(60_000))

  test('at most importsAtOnce at once: another is 503 with Retry-After while one is still reading its body', async () => {
    const [first, second] = [await newProject('Slow upload'), await newProject('Second upload')]
    // The first import's body: one line now, the rest when the test says; `reading` once the service has taken the first.
    let push!: ReadableStreamDefaultController<Uint8Array>
    let started!: () => void
    const reading = new Promise<void>((resolve) => (started = resolve))
    const body = new ReadableStream<Uint8Array>(
      {
        start: (controller) => {
          push = controller
          controller.enqueue(new TextEncoder().encode(JSON.stringify({ type: 'work_item', data: { title: 'Arrives first' } }) + '\n'))
        },
        pull: () => started(),
      },
      { highWaterMark: 0 },
    )
    const slow = streamedImport(api, first, fx.keys.owner, body)
    await reading
    // It holds the one place while its body is still coming: another import is 503, and writes nothing.
    const busy = await importInto(second, JSON.stringify({ type: 'work_item', data: { title: 'Too soon' } }))
    expect(busy.status).toBe(503)
    expect(busy.headers.get('retry-after')).toBe('5')
    push.enqueue(new TextEncoder().encode(JSON.stringify({ type: 'work_item', data: { title: 'Arrives last' } })))
    push.close()
    const done = await slow
    expect(done.status).toBe(200)
    expect(((await done.json()) as any).data.imported.work_item).toBe(2)
    const now = await importInto(second, JSON.stringify({ type: 'work_item', data: { title: 'Now' } }))
    expect(now.status, now.text).toBe(200)
  }, timeLimit(60_000))

  test('a body that stops arriving is cut off after importReadSeconds (400), giving back its place', async () => {
    const quick = await startTestService({ config: { notifications: { workers: false }, projects: { importReadSeconds: 1 } } })
    try {
      const owner = await createProjectFixture(quick)
      const target = (await owner.as('owner', 'POST', '/api/v1/projects', { name: 'Stalled' }, 201)).id
      // One line, then nothing, and the stream never closes.
      const stalled = new ReadableStream<Uint8Array>({ start: (controller) => controller.enqueue(new TextEncoder().encode(JSON.stringify({ type: 'work_item', data: { title: 'Only' } }) + '\n')) })
      const answer = await streamedImport(quick, target, owner.keys.owner, stalled)
      expect(answer.status).toBe(400)
      expect(((await answer.json()) as any).errors[0].message).toBe('An import body must arrive within 1 s.')
      const after = await quick.request('POST', `/api/v1/projects/${target}/import`, { key: owner.keys.owner, rawBody: JSON.stringify({ type: 'work_item', data: { title: 'Now' } }), headers: { 'content-type': 'application/x-ndjson' } })
      expect(after.status, after.text).toBe(200)
    } finally {
      await quick.stop()
    }
  }, timeLimit(60_000))

  test('a CSV of work items (a Jira-like export) is imported: labels by name, assignees by email or username, others unassigned and noted', async () => {
    const target = await newProject('From Jira')
    const csv =
      '\ufeffTitle,Description,Status,Priority,Assignee,Labels,DueDate\r\n' +
      `"Crash on save, sometimes","Steps:\r\n1. open\r\n2. save",in_progress,3,${fx.users.editor.email},"bug, ui",2027-02-01\r\n` +
      `Slow search,,todo,1,${fx.users.viewer.username},,\r\n` +
      `"Quote ""this""",,done,0,nobody@example.com,,\r\n`
    const answer = await importInto(target, csv, 'text/csv; charset=utf-8')
    expect(answer.status, answer.text).toBe(200)
    expect(answer.body.data.imported.work_item).toBe(3)
    expect(answer.body.data.imported.label).toBe(0)
    expect(answer.body.data.notes).toEqual(['line 6: the assignee nobody@example.com is not an active user of this organization: unassigned'])
    const items = (await fx.as('owner', 'GET', `/api/v1/projects/${target}/work-items?size=10`)) as any[]
    const byTitle = new Map(items.map((item) => [item.title, item]))
    expect(byTitle.get('Crash on save, sometimes')).toMatchObject({
      number: 1,
      description: 'Steps:\r\n1. open\r\n2. save',
      status: 'in_progress',
      priority: 3,
      assigneeId: fx.users.editor.id,
      dueDate: '2027-02-01',
    })
    expect(byTitle.get('Crash on save, sometimes').labels.map((label: any) => label.name).sort()).toEqual(['bug', 'ui'])
    expect(byTitle.get('Slow search')).toMatchObject({ assigneeId: fx.users.viewer.id, labels: [] })
    expect(byTitle.get('Quote "this"')).toMatchObject({ status: 'done', assigneeId: null })
    // `perf` is no label of the organization, and the owner is no administrator: refused by line.
    const refusedTarget = await newProject('From Jira, refused')
    const refused = await importInto(refusedTarget, 'title,labels\nOne,perf\n', 'text/csv')
    expect(refused.status).toBe(400)
    expect(refused.body.errors[0].message).toBe('line 2: the label "perf" is not in this organization; an administrator can import it')
    // An administrator who owns the project imports it, creating the label.
    await fx.as('owner', 'POST', `/api/v1/projects/${refusedTarget}/members`, { userId: admin.userId, accessLevel: 'owner' }, 201)
    const made = await importInto(refusedTarget, 'title,labels\nOne,perf\n', 'text/csv', admin.key)
    expect(made.status, made.text).toBe(200)
    expect(made.body.data.imported.label).toBe(1)
    const columns = await importInto(await newProject('Bad columns'), 'title,estimate\nOne,3\n', 'text/csv')
    expect(columns.status).toBe(400)
    expect(columns.body.errors[0].message).toStartWith('line 1: unknown column "estimate"')
  }, timeLimit(60_000))
})
