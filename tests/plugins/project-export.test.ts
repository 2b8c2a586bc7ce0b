/**
 * A project's export (GET /api/v1/projects/{projectId}/export, docs/api.md "Moving work in and
 * out"): NDJSON lines `{type, data}` with `data` exactly as API v1 shows each resource, in the
 * order project, labels, custom fields, members, work items, entries, relationships; one snapshot
 * (a write made while the client is still reading is not in it); owner only, with the read scopes
 * of every section, 404 for a project the caller cannot see; a client that stops reading is cut
 * off after server.exportIdleSeconds, and at most exportsAtOnce run at once.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { timeLimit, usingServer } from '../helpers/database'
import { administratorOf, createProjectFixture, type ProjectFixture } from '../helpers/project-fixture'
import { startTestService, type TestService } from '../helpers/service'

let api: TestService
let fx: ProjectFixture
let label: { id: string; name: string }
let unused: { id: string }
let field: { id: string; key: string }
/** Items, each with a description long enough that the whole export is several MiB (more than the stream queues). */
const ITEMS = 450
const LONG = 'x'.repeat(8_000)

const exportPath = (projectId = fx.projectId) => `/api/v1/projects/${projectId}/export`

/** The export as a streamed response (the test reads its body as it likes). */
const openExport = (key: string, projectId = fx.projectId) =>
  api.service.fetch(new Request(`http://localhost${exportPath(projectId)}`, { headers: { authorization: `Bearer ${key}` } }))

const linesOf = (text: string) =>
  text
    .split('\n')
    .filter((line) => line !== '')
    .map((line) => JSON.parse(line) as { type: string; data: any })

/** Every page of a v1 list. */
async function everything(path: string): Promise<any[]> {
  const all: any[] = []
  for (let page = 0; ; page++) {
    const body = await fx.as('owner', 'GET', `${path}${path.includes('?') ? '&' : '?'}size=100&page=${page}`)
    all.push(...body)
    if (body.length < 100) return all
  }
}

beforeAll(async () => {
  api = await startTestService({ config: { notifications: { workers: false }, projects: { exportsAtOnce: 1 }, server: { exportIdleSeconds: 1 } } })
  fx = await createProjectFixture(api)
  const asAdmin = (await administratorOf(api, fx)).create
  label = await asAdmin('/api/v1/labels', { name: 'bug', color: '#ff0000' })
  unused = await asAdmin('/api/v1/labels', { name: 'unused', color: '#00ff00' })
  field = await asAdmin('/api/v1/custom-fields', { key: 'points', name: 'Points', type: 'number' })
  await fx.as('owner', 'POST', `/api/v1/projects/${fx.projectId}/custom-fields`, { fieldId: field.id }, 201)
  const items = `/api/v1/projects/${fx.projectId}/work-items`
  for (let from = 0; from < ITEMS; from += 100) {
    const batch = Array.from({ length: Math.min(100, ITEMS - from) }, (_, i) => {
      const n = from + i
      return { title: `Item ${n}`, description: `${n} ${LONG}`, priority: n % 5, ...(n % 3 === 0 ? { labels: [label.id] } : {}), ...(n % 4 === 0 ? { fields: { points: n } } : {}) }
    })
    await fx.as('editor', 'POST', `${items}/bulk`, { items: batch }, 200)
  }
  const [first, second] = (await fx.as('owner', 'GET', `${items}?size=2`)) as { id: string }[]
  await fx.as('editor', 'POST', `/api/v1/work-items/${first!.id}/entries`, { kind: 'comment', body: 'First note' }, 201)
  await fx.as('editor', 'POST', `/api/v1/work-items/${first!.id}/entries`, { kind: 'comment', body: 'Second note' }, 201)
  await fx.as('editor', 'POST', `/api/v1/projects/${fx.projectId}/relationships`, { sourceWorkItemId: first!.id, targetWorkItemId: second!.id, type: 'blocks' }, 201)
}, timeLimit(120_000))
afterAll(() => api?.stop())

describe('project export', () => {
  test('lines in order, each resource exactly as API v1 shows it; labels and fields are those the project uses', async () => {
    const response = await api.request('GET', exportPath(), { key: fx.keys.owner })
    expect(response.status).toBe(200)
    expect(response.headers.get('content-type')).toBe('application/x-ndjson; charset=utf-8')
    const lines = linesOf(response.text)
    const types = lines.map((line) => line.type)
    // Grouped, in the documented order.
    expect([...new Set(types)]).toEqual(['project', 'label', 'custom_field', 'member', 'work_item', 'entry', 'relationship'])
    expect(types).toEqual([...types].sort((a, b) => ORDER.indexOf(a) - ORDER.indexOf(b)))
    const of = (type: string) => lines.filter((line) => line.type === type).map((line) => line.data)

    expect(of('project')).toEqual([await fx.as('owner', 'GET', `/api/v1/projects/${fx.projectId}`)])
    expect(of('label')).toEqual([await fx.as('owner', 'GET', `/api/v1/labels/${label.id}`)])
    expect(of('label').map((l) => l.id)).not.toContain(unused.id)
    expect(of('custom_field')).toEqual([await fx.as('owner', 'GET', `/api/v1/custom-fields/${field.id}`)])
    const byId = <T extends { id?: string; userId?: string }>(rows: T[]) => [...rows].sort((a, b) => String(a.id ?? a.userId).localeCompare(String(b.id ?? b.userId)))
    expect(byId(of('member'))).toEqual(byId(await everything(`/api/v1/projects/${fx.projectId}/members`)))

    const items = of('work_item')
    expect(items).toHaveLength(ITEMS)
    expect(items.map((item) => item.number)).toEqual(Array.from({ length: ITEMS }, (_, i) => i + 1))
    expect(byId(items)).toEqual(byId(await everything(`/api/v1/projects/${fx.projectId}/work-items`)))
    expect(items.filter((item) => item.labels.length).length).toBe(Math.ceil(ITEMS / 3))
    expect(items.filter((item) => item.fields.points !== undefined).length).toBe(Math.ceil(ITEMS / 4))

    const [first] = (await fx.as('owner', 'GET', `/api/v1/projects/${fx.projectId}/work-items?size=1`)) as { id: string }[]
    expect(of('entry')).toEqual(await everything(`/api/v1/work-items/${first!.id}/entries`))
    expect(of('relationship')).toEqual(await everything(`/api/v1/projects/${fx.projectId}/relationships`))
  }, timeLimit(60_000))

  test('one snapshot: work written while the client is still reading is not in the export', async () => {
    const response = await openExport(fx.keys.owner)
    expect(response.status).toBe(200)
    const reader = response.body!.getReader()
    const decoder = new TextDecoder()
    let text = decoder.decode((await reader.read()).value, { stream: true })
    // Written after the export began and before its last work item was read (the export is ~3.6 MiB,
    // and at most about one MiB waits in its queue for the client).
    const project = await fx.as('owner', 'GET', `/api/v1/projects/${fx.projectId}`)
    const last = (await fx.as('owner', 'GET', `/api/v1/work-items/${project.key}-${ITEMS}`)) as { id: string; title: string }
    const added = await fx.as('editor', 'POST', `/api/v1/projects/${fx.projectId}/work-items`, { title: 'Written during the export' }, 201)
    await fx.as('editor', 'PATCH', `/api/v1/work-items/${last!.id}`, { title: 'Renamed during the export' })
    for (let chunk = await reader.read(); !chunk.done; chunk = await reader.read()) text += decoder.decode(chunk.value, { stream: true })
    const items = linesOf(text).filter((line) => line.type === 'work_item').map((line) => line.data)
    expect(items).toHaveLength(ITEMS)
    expect(items.map((item) => item.id)).not.toContain(added.id)
    expect(items.find((item) => item.id === last!.id)?.title).toBe(last!.title)
    // Put back for the other tests.
    await fx.as('owner', 'DELETE', `/api/v1/work-items/${added.id}`)
    await fx.as('editor', 'PATCH', `/api/v1/work-items/${last!.id}`, { title: last!.title })
  }, timeLimit(60_000))

  test('owner only, with every section scope; a project the caller cannot see is 404', async () => {
    expect((await fx.call('editor', 'GET', exportPath())).status).toBe(403)
    expect((await fx.call('viewer', 'GET', exportPath())).status).toBe(403)
    const stranger = await createProjectFixture(api)
    const hidden = await stranger.call('owner', 'GET', exportPath())
    expect(hidden.status).toBe(404)
    expect((await fx.call('owner', 'GET', exportPath(crypto.randomUUID()))).status).toBe(404)
    expect((await fx.call('owner', 'GET', exportPath('not-a-uuid'))).status).toBe(404)
    // Every section's read scope: without entries:read the export is refused, naming it.
    const all = api.service.core.scopes.map((scope) => scope.name)
    const lacking = (await api.createKey(fx.users.owner.id, all.filter((scope) => scope !== 'entries:read'))).secret
    const refused = await api.request('GET', exportPath(), { key: lacking })
    expect(refused.status).toBe(403)
    expect(refused.text).toContain('entries:read')
  })

  test.skipIf(!usingServer())(
    'a client that stops reading is cut off after exportIdleSeconds, giving back its slot (exportsAtOnce: 1; server only: the embedded database reads through without waiting)',
    async () => {
      const stalled = await openExport(fx.keys.owner)
      expect(stalled.status).toBe(200)
      const reader = stalled.body!.getReader()
      await reader.read()
      // Its one slot is taken while it waits for the client.
      const second = await fx.call('owner', 'GET', exportPath())
      expect(second.status).toBe(503)
      expect(second.headers.get('retry-after')).toBe('5')
      // After a second without reading it ends: its slot is free again, and the rest of its body never comes.
      const deadline = Date.now() + timeLimit(15_000)
      let freed = false
      while (!freed && Date.now() < deadline) {
        const again = await openExport(fx.keys.owner)
        freed = again.status === 200
        await again.body?.cancel()
        if (!freed) await Bun.sleep(100)
      }
      expect(freed).toBe(true)
      let cutOff = false
      try {
        for (let chunk = await reader.read(); !chunk.done; chunk = await reader.read());
      } catch {
        cutOff = true
      }
      expect(cutOff).toBe(true)
    },
    timeLimit(60_000),
  )

  test.skipIf(usingServer())('on the embedded database an unread export holds nothing: writes and other exports go on', async () => {
    const unread = await openExport(fx.keys.owner)
    expect(unread.status).toBe(200)
    const added = await fx.as('editor', 'POST', `/api/v1/projects/${fx.projectId}/work-items`, { title: 'Written beside an unread export' }, 201)
    const other = await api.request('GET', exportPath(), { key: fx.keys.owner })
    expect(other.status).toBe(200)
    expect(linesOf(other.text).some((line) => line.type === 'work_item' && line.data.id === added.id)).toBe(true)
    await unread.body!.cancel()
    await fx.as('owner', 'DELETE', `/api/v1/work-items/${added.id}`)
  }, timeLimit(60_000))
})

const ORDER = ['project', 'label', 'custom_field', 'member', 'work_item', 'entry', 'relationship']
