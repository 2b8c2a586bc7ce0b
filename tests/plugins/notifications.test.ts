/**
 * Notifications about work: who gets a thread (assigned, mentioned, commented, status_changed,
 * created; never the actor; only people who can view the project), watching and ignoring, the
 * inbox (one thread per work item, reasons accumulating until read, read/unread/done, mark-read,
 * the exact unread count, filters, cursors) and what it never shows (another user's thread, a
 * project you lost, a deleted work item). Threads are written by the fan-out workers after the
 * commit, so each test waits for them with a deadline.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { sql as fragment } from 'drizzle-orm'
import { queryRows } from '../../src/db'
import { NotificationFanout } from '../../plugins/notifications/fanout'
import { workPushes } from '../../plugins/notifications/pushes'
import { UserNotifierRef } from '../../plugins/push/api'
import { ProjectAccessRef } from '../../plugins/projects/api'
import { sqlOn, timeLimit } from '../helpers/database'
import { createProjectFixture, type ProjectFixture } from '../helpers/project-fixture'
import { startTestService, type TestService, type TestUser } from '../helpers/service'

let api: TestService
let fx: ProjectFixture
let outsider: TestUser
let outsiderKey: string
const sql = sqlOn(() => api)
const items = () => `/api/v1/projects/${fx.projectId}/work-items`
type Who = 'owner' | 'editor' | 'viewer'

beforeAll(async () => {
  api = await startTestService()
  fx = await createProjectFixture(api)
  // In the organization, but not a member of the project.
  outsider = await api.createUser(fx.organizationId, 'member')
  outsiderKey = (await api.createKey(outsider.id, api.service.core.scopes.map((scope) => scope.name))).secret
}, timeLimit(60_000))
afterAll(() => api?.stop())

/** Waits until no change is queued (the fan-out has written every thread so far), up to a deadline. */
async function settled() {
  for (const deadline = Date.now() + 10_000; Date.now() < deadline; ) {
    const [row] = await sql<{ n: number }>('select count(*)::int as n from notification_activities')
    if (row!.n === 0) return
    await Bun.sleep(20)
  }
  throw new Error('the fan-out did not drain the queue within 10 s')
}

const inbox = async (who: Who | string, query = '') => {
  await settled()
  const response = typeof who === 'string' && !(who in fx.keys) ? await api.request('GET', `/api/v1/notifications${query}`, { key: who }) : await fx.call(who as Who, 'GET', `/api/v1/notifications${query}`)
  expect(response.status).toBe(200)
  return response.body as { data: any[]; meta: any }
}
const threadOf = async (who: Who, workItemId: string) => (await inbox(who)).data.find((thread) => thread.workItem.id === workItemId)

describe('who is told', () => {
  test('assigning someone gives them an assigned thread; the actor, who watches what they created, gets none', async () => {
    const item = await fx.as('owner', 'POST', items(), { title: 'Fix the login page', assigneeId: fx.users.editor.id }, 201)
    const thread = await threadOf('editor', item.id)
    expect(thread).toMatchObject({ reason: 'assigned', reasons: ['assigned'], unread: true, actor: { id: fx.users.owner.id }, workItem: { id: item.id, projectId: fx.projectId, number: item.number, title: 'Fix the login page', status: 'todo' } })
    expect(await threadOf('owner', item.id)).toBeUndefined()
    const watched = await fx.call('owner', 'GET', `/api/v1/work-items/${item.id}/subscription`)
    expect(watched.body.data).toEqual({ watching: true, reason: 'created' })
  })

  test('a mention in a comment tells the mentioned; an e-mail address is no mention; someone who cannot view the project is told nothing', async () => {
    const item = await fx.as('owner', 'POST', items(), { title: 'Mentions' }, 201)
    await fx.as('owner', 'POST', `/api/v1/work-items/${item.id}/entries`, { body: `@${fx.users.viewer.username} and @${outsider.username}, see mail to x@${fx.users.editor.username}.example` }, 201)
    const thread = await threadOf('viewer', item.id)
    expect(thread).toMatchObject({ reason: 'mentioned', unread: true })
    expect(thread.excerpt).toStartWith(`@${fx.users.viewer.username}`)
    expect(await threadOf('editor', item.id)).toBeUndefined()
    expect((await inbox(outsiderKey)).data.find((each) => each.workItem.id === item.id)).toBeUndefined()
    // The mentioned now watch it: the next comment tells them as a comment.
    await fx.as('editor', 'POST', `/api/v1/work-items/${item.id}/entries`, { body: 'A plain comment.' }, 201)
    expect(await threadOf('viewer', item.id)).toMatchObject({ reason: 'mentioned', reasons: ['mentioned', 'commented'], excerpt: 'A plain comment.' })
  })

  test('watching a project tells of new work, comments and status changes; ignoring a work item stops those, never an assignment', async () => {
    expect((await fx.call('viewer', 'PUT', `/api/v1/projects/${fx.projectId}/subscription`)).body.data).toEqual({ watching: true, reason: 'manual' })
    const item = await fx.as('editor', 'POST', items(), { title: 'Watched project' }, 201)
    expect(await threadOf('viewer', item.id)).toMatchObject({ reason: 'created' })
    await fx.as('viewer', 'PATCH', `/api/v1/notifications/${(await threadOf('viewer', item.id)).id}`, { read: true }, 200)
    await fx.as('editor', 'PATCH', `${items()}/${item.id}`, { status: 'in_progress' }, 200)
    expect(await threadOf('viewer', item.id)).toMatchObject({ reason: 'status_changed', reasons: ['status_changed'], unread: true })

    expect((await fx.call('viewer', 'DELETE', `/api/v1/work-items/${item.id}/subscription`)).body.data).toEqual({ watching: false, reason: 'ignored' })
    await fx.as('viewer', 'PATCH', `/api/v1/notifications/${(await threadOf('viewer', item.id)).id}`, { read: true }, 200)
    await fx.as('editor', 'POST', `/api/v1/work-items/${item.id}/entries`, { body: 'Ignored comment' }, 201)
    expect(await threadOf('viewer', item.id)).toMatchObject({ unread: false })
    await fx.as('editor', 'PATCH', `${items()}/${item.id}`, { assigneeId: fx.users.viewer.id }, 200)
    expect(await threadOf('viewer', item.id)).toMatchObject({ reason: 'assigned', reasons: ['assigned'], unread: true })
    expect((await fx.call('viewer', 'DELETE', `/api/v1/projects/${fx.projectId}/subscription`)).body.data).toEqual({ watching: false, reason: null })
  })

  test('a change nobody is told of (priority) queues nothing', async () => {
    const item = await fx.as('owner', 'POST', items(), { title: 'Quiet', assigneeId: fx.users.editor.id }, 201)
    await settled()
    await fx.as('owner', 'PATCH', `${items()}/${item.id}`, { priority: 2 }, 200)
    const [row] = await sql<{ n: number }>('select count(*)::int as n from notification_activities')
    expect(row!.n).toBe(0)
  })
})

describe('the inbox', () => {
  test('read, unread, done: done leaves the default list until new activity brings it back; the unread count is exact whatever the filters', async () => {
    const item = await fx.as('owner', 'POST', items(), { title: 'Inbox states', assigneeId: fx.users.editor.id }, 201)
    const thread = await threadOf('editor', item.id)
    const before = (await inbox('editor')).meta.unreadCount
    expect((await fx.as('editor', 'PATCH', `/api/v1/notifications/${thread.id}`, { read: true }, 200)).unread).toBe(false)
    expect((await inbox('editor', '?reason=created')).meta.unreadCount).toBe(before - 1)
    expect((await fx.as('editor', 'PATCH', `/api/v1/notifications/${thread.id}`, { read: false }, 200)).unread).toBe(true)
    const done = await fx.as('editor', 'PATCH', `/api/v1/notifications/${thread.id}`, { done: true }, 200)
    expect(done).toMatchObject({ unread: false })
    expect(done.doneAt).toBeString()
    expect(await threadOf('editor', item.id)).toBeUndefined()
    expect((await inbox('editor', '?done=true')).data.map((each) => each.id)).toContain(thread.id)
    await fx.as('owner', 'POST', `/api/v1/work-items/${item.id}/entries`, { body: 'Back again' }, 201)
    expect(await threadOf('editor', item.id)).toMatchObject({ id: thread.id, unread: true, doneAt: null, reasons: ['commented'] })
  })

  test('filters and cursors: unread, reason (any of the reasons), projectId; unknown filters and garbage cursors are 400 naming them', async () => {
    const all = await inbox('editor', '?size=1')
    expect(all.meta.nextCursor).toBeString()
    const next = await inbox('editor', `?size=1&cursor=${encodeURIComponent(all.meta.nextCursor)}`)
    expect(next.data[0].id).not.toBe(all.data[0].id)
    for (const thread of (await inbox('editor', '?reason=assigned')).data) expect(thread.reasons).toContain('assigned')
    for (const thread of (await inbox('editor', '?unread=false')).data) expect(thread.unread).toBe(false)
    expect((await inbox('editor', `?projectId=${crypto.randomUUID()}`)).data).toEqual([])
    const unknown = await fx.call('editor', 'GET', '/api/v1/notifications?colour=red')
    expect(unknown.status).toBe(400)
    expect(unknown.body.errors[0].field).toBe('colour')
    const garbage = await fx.call('editor', 'GET', '/api/v1/notifications?cursor=garbage')
    expect(garbage.status).toBe(400)
    expect(garbage.body.errors[0].field).toBe('cursor')
  })

  test('mark-read marks the caller’s unread threads only', async () => {
    await fx.as('owner', 'POST', items(), { title: 'To mark', assigneeId: fx.users.editor.id }, 201)
    await fx.as('editor', 'POST', items(), { title: 'For the owner', assigneeId: fx.users.owner.id }, 201)
    const ownerUnread = (await inbox('owner')).meta.unreadCount
    const marked = await fx.as('editor', 'POST', '/api/v1/notifications/mark-read', {}, 200)
    expect(marked.marked).toBeGreaterThan(0)
    expect((await inbox('editor')).meta.unreadCount).toBe(0)
    expect((await inbox('owner')).meta.unreadCount).toBe(ownerUnread)
  })
})

describe('what is never shown', () => {
  test("another user's thread is 404, to read and to change", async () => {
    const item = await fx.as('owner', 'POST', items(), { title: 'Private thread', assigneeId: fx.users.editor.id }, 201)
    const thread = await threadOf('editor', item.id)
    expect((await fx.call('viewer', 'PATCH', `/api/v1/notifications/${thread.id}`, { read: true })).status).toBe(404)
    expect((await threadOf('editor', item.id)).unread).toBe(true)
  })

  test('losing access to the project hides its threads; a deleted work item takes its threads with it', async () => {
    const other = await createProjectFixture(api, fx.organizationId)
    const item = await other.as('owner', 'POST', `/api/v1/projects/${other.projectId}/work-items`, { title: 'Soon hidden', assigneeId: other.users.viewer.id }, 201)
    await settled()
    const seen = await api.request('GET', '/api/v1/notifications', { key: other.keys.viewer })
    const thread = seen.body.data.find((each: any) => each.workItem.id === item.id)
    expect(thread).toBeDefined()
    await other.as('owner', 'DELETE', `/api/v1/projects/${other.projectId}/members/${other.users.viewer.id}`, undefined, 200)
    const hidden = await api.request('GET', '/api/v1/notifications', { key: other.keys.viewer })
    expect(hidden.body.data.find((each: any) => each.id === thread.id)).toBeUndefined()
    expect((await api.request('PATCH', `/api/v1/notifications/${thread.id}`, { key: other.keys.viewer, body: { read: true } })).status).toBe(404)

    const gone = await fx.as('owner', 'POST', items(), { title: 'Soon deleted', assigneeId: fx.users.editor.id }, 201)
    await settled()
    await fx.as('owner', 'DELETE', `${items()}/${gone.id}`, undefined, 200)
    expect(await threadOf('editor', gone.id)).toBeUndefined()
    expect((await sql<{ n: number }>('select count(*)::int as n from notification_threads where work_item_id = $1', [gone.id]))[0]!.n).toBe(0)
  })

  test('subscriptions of a work item or project the caller cannot see are 404, the same as unknown ones', async () => {
    const item = await fx.as('owner', 'POST', items(), { title: 'Invisible to outsiders' }, 201)
    for (const path of [`/api/v1/work-items/${item.id}/subscription`, `/api/v1/work-items/${crypto.randomUUID()}/subscription`, `/api/v1/projects/${fx.projectId}/subscription`]) {
      const response = await api.request('PUT', path, { key: outsiderKey })
      expect(response.status).toBe(404)
    }
    expect((await sql<{ n: number }>('select count(*)::int as n from work_item_subscriptions where user_id = $1', [outsider.id]))[0]!.n).toBe(0)
  })
})

describe('exactly once', () => {
  test('a fan-out rolled back after it wrote (a crash before its commit) leaves the change to be fanned out again, once', async () => {
    // A service of its own, whose workers fan nothing out: the test drives the fan-out.
    const quiet = await startTestService({ config: { notifications: { workers: false } } })
    try {
      const { db } = quiet.service.core
      const fanout = new NotificationFanout(db, quiet.service.core.services.get(ProjectAccessRef), { concurrency: 1, batchSize: 10, pollIntervalMs: 1000 }, workPushes(quiet.service.core.services.find(UserNotifierRef)))
      const own = await createProjectFixture(quiet)
      const count = async (table: string, workItemId: string) =>
        (await queryRows<{ n: number }>(db, fragment`select count(*)::int as n from ${fragment.identifier(table)} where work_item_id = ${workItemId}`))[0]!.n
      const item = await own.as('owner', 'POST', `/api/v1/projects/${own.projectId}/work-items`, { title: 'Crash course', assigneeId: own.users.viewer.id }, 201)
      const crash = new Error('crashed after writing, before the commit')
      const attempt = db.transaction(async (tx) => {
        expect((await fanout.fanOut(tx, own.organizationId, 10)).changes).toBe(1)
        // Written in this transaction: the thread is there as the crash comes.
        expect((await queryRows<{ n: number }>(tx, fragment`select count(*)::int as n from notification_threads where work_item_id = ${item.id}`))[0]!.n).toBe(1)
        throw crash
      })
      await expect(attempt).rejects.toBe(crash)
      // Nothing of it committed; the change is still queued and is fanned out again, once.
      expect(await count('notification_threads', item.id)).toBe(0)
      expect(await count('notification_activities', item.id)).toBe(1)
      expect((await db.transaction((tx) => fanout.fanOut(tx, own.organizationId, 10))).changes).toBe(1)
      expect((await db.transaction((tx) => fanout.fanOut(tx, own.organizationId, 10))).changes).toBe(0)
      expect(await count('notification_activities', item.id)).toBe(0)
      const inbox = await own.as('viewer', 'GET', '/api/v1/notifications', undefined, 200)
      expect(inbox.map((thread: any) => [thread.workItem.id, thread.reasons])).toEqual([[item.id, ['assigned']]])
    } finally {
      await quiet.stop()
    }
  })
})
