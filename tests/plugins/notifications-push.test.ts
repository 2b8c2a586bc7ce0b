/**
 * Notifications about work on the user's devices: through the service, the fan-out, the push
 * outbox and the real firebase-admin to the fake FCM server. A thread update whose reason the
 * user pushes (by default `assigned` and `mentioned`) reaches every device of theirs with the
 * thread's collapse key; `inbox` writes the thread only, `off` not even that; a thread read or
 * done, from any door, sends each device a data-only `work.read`; quiet hours hold a work push but
 * not its clearing; none of it is a display call. Without the push plugin the inbox works alone.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { threadIdOf } from '../../plugins/notifications/pushes'
import { sqlOn } from '../helpers/database'
import { startFakeFcm, type FakeFcm, type RecordedSend } from '../helpers/fake-fcm'
import { createProjectFixture, type ProjectFixture } from '../helpers/project-fixture'
import { eventually, startTestService, type TestService } from '../helpers/service'
import { signIn } from '../helpers/sessions'

let fcm: FakeFcm
let api: TestService
let fx: ProjectFixture
const sql = sqlOn(() => api)
const items = () => `/api/v1/projects/${fx.projectId}/work-items`
type Who = 'owner' | 'editor' | 'viewer'
/** Each fixture user's devices (FCM tokens). */
const devices: Record<Who, string[]> = { owner: [], editor: [], viewer: [] }
/** Each fixture user's display name, as pushes name the actor. */
const names = {} as Record<Who, string>
let sequence = 0

beforeAll(async () => {
  fcm = await startFakeFcm(undefined, { redirect: true })
  api = await startTestService({ provide: fcm.provide, config: { push: { pollIntervalMs: 50 }, notifications: { pollIntervalMs: 50 } } })
  fx = await createProjectFixture(api)
  for (const who of ['owner', 'editor', 'viewer'] as const) {
    names[who] = (await sql<{ name: string }>('select display_name as name from users where id = $1', [fx.users[who].id]))[0]!.name
    const session = await signIn(api, fx.users[who])
    // The editor has two devices: each gets every push.
    for (let i = 0; i < (who === 'editor' ? 2 : 1); i++) {
      const token = `work-${who}-${i}:APA91b${Math.random().toString(36).slice(2, 12)}`
      const response = await api.request('POST', '/api/devices', { body: { token, platform: 'android' }, headers: { authorization: `Bearer ${session}` } })
      expect([200, 201]).toContain(response.status)
      devices[who].push(token)
    }
  }
})
afterAll(async () => {
  await api?.stop()
  await fcm?.close()
})

/** What `who`'s devices received about a work item (data `workItemId`) or a thread (`threadId`), in order. */
const received = (who: Who, match: Partial<Record<'workItemId' | 'threadId' | 'type', string>>) =>
  fcm.delivered().filter((send) => devices[who].includes(send.token) && Object.entries(match).every(([key, value]) => send.message.data?.[key] === value))

/** Waits until nothing is queued: no change left to fan out, no delivery left to send. */
async function settled() {
  await eventually(async () => {
    const [row] = await sql<{ n: number }>(
      `select (select count(*) from notification_activities)::int + (select count(*) from deliveries where state in ('pending', 'sending'))::int as n`,
    )
    expect(row!.n).toBe(0)
  }, 10_000)
}

const preferences = (who: Who, body?: unknown) => fx.call(who, body === undefined ? 'GET' : 'PUT', '/api/v1/users/me/notifications', body)
const NO_QUIET = { quietHours: null, mutedPageIds: [] }

describe('what is pushed', () => {
  test('an assignment reaches each device of the assignee: project and number, who did what to which item, the thread in its data and collapse key', async () => {
    const item = await fx.as('owner', 'POST', items(), { title: 'Fix the login page', assigneeId: fx.users.editor.id }, 201)
    await settled()
    const threadId = threadIdOf(fx.users.editor.id, item.id)
    const sends = received('editor', { workItemId: item.id })
    expect(sends.map((send) => send.token).sort()).toEqual([...devices.editor].sort())
    for (const send of sends) {
      expect(send.message.notification).toEqual({ title: `Fixture #${item.number}`, body: `${names.owner} assigned you: Fix the login page` })
      expect(send.message.data).toMatchObject({ type: 'work', threadId, workItemId: item.id, projectId: fx.projectId })
      expect(send.message.android?.collapse_key).toBe(threadId.replaceAll('-', ''))
      expect(send.message.apns?.headers?.['apns-collapse-id']).toBe(threadId.replaceAll('-', ''))
    }
    // The thread the push names is the inbox's.
    const inbox = await fx.as('editor', 'GET', '/api/v1/notifications', undefined, 200)
    expect(inbox.find((thread: any) => thread.workItem.id === item.id).id).toBe(threadId)
    // The actor, who watches what they created, is pushed nothing.
    expect(received('owner', { workItemId: item.id })).toEqual([])
    // Not a display call: no display account's usage moved.
    expect((await sql<{ n: number }>('select count(*)::int as n from display_usage'))[0]!.n).toBe(0)
  })

  test('a mention pushes; a comment on a watched item reaches the inbox only, until the user pushes comments', async () => {
    const item = await fx.as('owner', 'POST', items(), { title: 'Quarterly report' }, 201)
    await fx.as('owner', 'POST', `/api/v1/work-items/${item.id}/entries`, { body: `@${fx.users.viewer.username} can you check the numbers?` }, 201)
    await settled()
    const [mention] = received('viewer', { workItemId: item.id })
    expect(mention?.message.notification?.body).toBe(`${names.owner} mentioned you in a comment: Quarterly report`)
    // The viewer now watches it: a comment is a thread update, not a push (comments default to inbox).
    await fx.as('editor', 'POST', `/api/v1/work-items/${item.id}/entries`, { body: 'Numbers look fine.' }, 201)
    await settled()
    expect(received('viewer', { workItemId: item.id })).toHaveLength(1)
    const thread = (await fx.as('viewer', 'GET', '/api/v1/notifications', undefined, 200)).find((each: any) => each.workItem.id === item.id)
    expect(thread).toMatchObject({ reasons: ['mentioned', 'commented'], excerpt: 'Numbers look fine.' })
    expect((await preferences('viewer')).body.data.work).toEqual({ assigned: 'push', mentioned: 'push', status_changed: 'inbox', commented: 'inbox', created: 'inbox' })
    // Comments pushed from now on; what the body leaves out of `work` stays.
    const put = await preferences('viewer', { ...NO_QUIET, work: { commented: 'push' } })
    expect(put.status).toBe(200)
    expect(put.body.data.work).toEqual({ assigned: 'push', mentioned: 'push', status_changed: 'inbox', commented: 'push', created: 'inbox' })
    expect((await preferences('viewer', NO_QUIET)).body.data.work.commented).toBe('push')
    await fx.as('editor', 'POST', `/api/v1/work-items/${item.id}/entries`, { body: 'One more thing.' }, 201)
    await settled()
    const pushed = received('viewer', { workItemId: item.id })
    expect(pushed).toHaveLength(2)
    expect(pushed[1]!.message.notification?.body).toBe(`${names.editor} commented: Quarterly report`)
    await preferences('viewer', { ...NO_QUIET, work: { commented: 'inbox' } })
  })

  test('`off` writes no thread for that reason; the reasons left still do', async () => {
    expect((await preferences('viewer', { ...NO_QUIET, work: { created: 'off', status_changed: 'push' } })).status).toBe(200)
    await fx.as('viewer', 'PUT', `/api/v1/projects/${fx.projectId}/subscription`, undefined, 200)
    try {
      const item = await fx.as('editor', 'POST', items(), { title: 'Nobody is told of this' }, 201)
      await settled()
      expect((await fx.as('viewer', 'GET', '/api/v1/notifications', undefined, 200)).find((each: any) => each.workItem.id === item.id)).toBeUndefined()
      // A status change on the watched project: a thread, and a push (status_changed is `push` now).
      await fx.as('editor', 'PATCH', `${items()}/${item.id}`, { status: 'in_progress' }, 200)
      await settled()
      const thread = (await fx.as('viewer', 'GET', '/api/v1/notifications', undefined, 200)).find((each: any) => each.workItem.id === item.id)
      expect(thread).toMatchObject({ reasons: ['status_changed'] })
      const [push] = received('viewer', { workItemId: item.id })
      expect(push?.message.notification?.body).toBe(`${names.editor} moved it to in_progress: Nobody is told of this`)
    } finally {
      await fx.as('viewer', 'DELETE', `/api/v1/projects/${fx.projectId}/subscription`)
      await preferences('viewer', { ...NO_QUIET, work: { created: 'inbox', status_changed: 'inbox' } })
    }
  })

  test('a preference that is not push, inbox or off, or a reason that does not exist, is 400 and changes nothing', async () => {
    const before = (await preferences('editor')).body.data
    for (const work of [{ assigned: 'loud' }, { reviewed: 'push' }, 'push', { assigned: null }]) {
      const response = await preferences('editor', { ...NO_QUIET, work })
      expect(response.status).toBe(400)
      expect(response.body.errors[0].field ?? response.body.errors[0].source?.pointer ?? '').toContain('work')
    }
    expect((await preferences('editor')).body.data).toEqual(before)
  })

  test('quiet hours hold a work push', async () => {
    // Quiet all day but a minute, in UTC: the push is held.
    const now = new Date()
    const clock = (at: Date) => `${String(at.getUTCHours()).padStart(2, '0')}:${String(at.getUTCMinutes()).padStart(2, '0')}`
    const quietHours = { start: clock(new Date(now.getTime() - 60_000)), end: clock(new Date(now.getTime() - 120_000)), timeZone: 'UTC' }
    expect((await preferences('viewer', { quietHours, mutedPageIds: [] })).status).toBe(200)
    try {
      const item = await fx.as('owner', 'POST', items(), { title: 'At night', assigneeId: fx.users.viewer.id }, 201)
      await eventually(async () => {
        const rows = await sql<{ state: string }>(`select d.state from deliveries d join messages m on m.id = d.message_id and m.organization_id = d.organization_id where m.data->>'workItemId' = $1`, [item.id])
        expect(rows.map((row) => row.state)).toEqual(['held'])
      }, 10_000)
      expect(received('viewer', { workItemId: item.id })).toEqual([])
    } finally {
      await preferences('viewer', NO_QUIET)
    }
  })
})

describe('clearing a thread from every device', () => {
  /** A new item assigned to the editor, pushed to both devices; its thread id. */
  async function assignedThread(): Promise<{ itemId: string; threadId: string }> {
    const item = await fx.as('owner', 'POST', items(), { title: `Clear me ${++sequence}`, assigneeId: fx.users.editor.id }, 201)
    await settled()
    expect(received('editor', { workItemId: item.id })).toHaveLength(2)
    return { itemId: item.id, threadId: threadIdOf(fx.users.editor.id, item.id) }
  }

  const clears = (threadId: string) => received('editor', { type: 'work.read', threadId })
  const expectClearedOnce = (sends: RecordedSend[], threadId: string) => {
    expect(sends.map((send) => send.token).sort()).toEqual([...devices.editor].sort())
    for (const send of sends) {
      // Data-only: nothing shown; a background push to APNs; the thread's collapse key, so a device that has not shown the notification yet gets only this.
      expect(send.message.notification).toBeUndefined()
      expect(send.message.data).toMatchObject({ type: 'work.read', threadId })
      expect(send.message.apns?.headers).toMatchObject({ 'apns-push-type': 'background', 'apns-priority': '5' })
      expect(send.message.android?.collapse_key).toBe(threadId.replaceAll('-', ''))
    }
  }

  test('PATCH read: each device gets work.read once; done afterwards, on a read thread, sends nothing more', async () => {
    const { threadId } = await assignedThread()
    await fx.as('editor', 'PATCH', `/api/v1/notifications/${threadId}`, { read: true }, 200)
    await settled()
    expectClearedOnce(clears(threadId), threadId)
    await fx.as('editor', 'PATCH', `/api/v1/notifications/${threadId}`, { done: true }, 200)
    await fx.as('editor', 'PATCH', `/api/v1/notifications/${threadId}`, { read: true }, 200)
    await settled()
    expect(clears(threadId)).toHaveLength(2)
  })

  test('done on an unread thread clears it; so does mark-read, for each thread it marks; marking unread sends nothing', async () => {
    const first = await assignedThread()
    await fx.as('editor', 'PATCH', `/api/v1/notifications/${first.threadId}`, { done: true }, 200)
    const second = await assignedThread()
    const third = await assignedThread()
    await fx.as('editor', 'POST', '/api/v1/notifications/mark-read', {}, 200)
    await fx.as('editor', 'PATCH', `/api/v1/notifications/${third.threadId}`, { read: false }, 200)
    await settled()
    for (const { threadId } of [first, second, third]) expectClearedOnce(clears(threadId), threadId)
  })

  test('the MCP tool clears too: any door', async () => {
    const { threadId } = await assignedThread()
    const response = await api.request('POST', '/mcp', {
      key: fx.keys.editor,
      headers: { accept: 'application/json, text/event-stream' },
      body: { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'mark_notifications_read', arguments: {} } },
    })
    expect(response.status).toBe(200)
    await settled()
    expectClearedOnce(clears(threadId), threadId)
  })

  test('quiet hours do not hold a clearing (it shows nothing)', async () => {
    const { threadId } = await assignedThread()
    const now = new Date()
    const clock = (at: Date) => `${String(at.getUTCHours()).padStart(2, '0')}:${String(at.getUTCMinutes()).padStart(2, '0')}`
    await preferences('editor', { quietHours: { start: clock(new Date(now.getTime() - 60_000)), end: clock(new Date(now.getTime() - 120_000)), timeZone: 'UTC' }, mutedPageIds: [] })
    try {
      await fx.as('editor', 'PATCH', `/api/v1/notifications/${threadId}`, { read: true }, 200)
      await settled()
      expectClearedOnce(clears(threadId), threadId)
    } finally {
      await preferences('editor', NO_QUIET)
    }
  })
})

describe("the user's app", () => {
  test('reads and marks its inbox with the mobile session; an API key still needs the scopes', async () => {
    const item = await fx.as('owner', 'POST', items(), { title: 'Read on the phone', assigneeId: fx.users.viewer.id }, 201)
    await settled()
    const bearer = { authorization: `Bearer ${await signIn(api, fx.users.viewer)}` }
    const list = await api.request('GET', '/api/v1/notifications', { headers: bearer })
    expect(list.status).toBe(200)
    const thread = list.body.data.find((each: any) => each.workItem.id === item.id)
    expect(thread).toMatchObject({ reason: 'assigned', unread: true })
    const read = await api.request('PATCH', `/api/v1/notifications/${thread.id}`, { headers: bearer, body: { read: true } })
    expect(read.status).toBe(200)
    expect(read.body.data.unread).toBe(false)
    expect((await api.request('POST', '/api/v1/notifications/mark-read', { headers: bearer, body: {} })).status).toBe(200)
    const narrow = (await api.createKey(fx.users.viewer.id, ['work_items:read'])).secret
    for (const [method, path] of [['GET', '/api/v1/notifications'], ['POST', '/api/v1/notifications/mark-read']] as const) {
      const refused = await api.request(method, path, { key: narrow, ...(method === 'POST' ? { body: {} } : {}) })
      expect(refused.status).toBe(403)
    }
    expect((await api.request('GET', '/api/v1/notifications', { headers: { authorization: 'Bearer wts_forged' } })).status).toBe(401)
  })
})

describe('without the push plugin', () => {
  test('the inbox works alone: threads are written, nothing is pushed, the preferences route is gone with its plugin', async () => {
    const alone = await startTestService({ config: { plugins: { disabled: ['push', 'alerts'] }, notifications: { pollIntervalMs: 50 } } })
    try {
      const own = await createProjectFixture(alone)
      const item = await own.as('owner', 'POST', `/api/v1/projects/${own.projectId}/work-items`, { title: 'No phones here', assigneeId: own.users.viewer.id }, 201)
      const thread = await eventually(async () => {
        const [found] = await own.as('viewer', 'GET', '/api/v1/notifications', undefined, 200)
        expect(found).toBeDefined()
        return found
      }, 10_000)
      expect(thread).toMatchObject({ reason: 'assigned', workItem: { id: item.id } })
      expect((await own.call('viewer', 'GET', '/api/v1/users/me/notifications')).status).toBe(404)
    } finally {
      await alone.stop()
    }
  })
})
