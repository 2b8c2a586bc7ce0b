/**
 * A live stream (`/pages/{pageName}/events`) ends within a second of losing what let it open:
 * its session (sign-out, expiry), its user (deactivation), or the user's access to the page (entry
 * removed, team membership removed, page deleted); a share link's stream (`/s/{token}/events`)
 * when the link is revoked or expires or its page is deleted. On every instance: the stream is
 * served by instance B, the change is made through instance A.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { sql } from 'drizzle-orm'
import { csrfFor } from '../../plugins/account/web-security'
import { queryRows } from '../../src/db'
import { listen, type Listening } from '../helpers/http'
import { startTestService, type TestService, type TestUser } from '../helpers/service'
import { webSession } from '../helpers/sessions'

let a: TestService
let b: TestService
let bHttp: Listening
let organization: string
let creator: TestUser
let creatorKey: string
let adminKey: string

beforeAll(async () => {
  a = await startTestService()
  b = await startTestService({ database: a.database })
  bHttp = listen(b)
  organization = await a.createOrganization()
  creator = await a.createUser(organization)
  const admin = await a.createUser(organization, 'administrator')
  creatorKey = (await a.createKey(creator.id, ['dashboards:read', 'dashboards:write'])).secret
  adminKey = (await a.createKey(admin.id, ['teams:write', 'team_members:write', 'teams:read'])).secret
})
afterAll(async () => {
  bHttp.stop()
  await b.stop()
  await a.stop()
})

async function v1(key: string, method: string, path: string, body?: unknown) {
  const response = await a.request(method, path, { key, body })
  if (response.status >= 300) throw new Error(`${method} ${path}: ${response.status} ${response.text}`)
  return response.body.data
}

let pages = 0
async function newPage(grant?: { userId: string } | { teamId: string }) {
  const page = await v1(creatorKey, 'POST', '/api/v1/pages', { name: `live-${++pages}-${Math.random().toString(36).slice(2, 6)}` })
  if (grant) await v1(creatorKey, 'POST', `/api/v1/pages/${page.id}/access`, grant)
  return page as { id: string; name: string }
}

interface OpenStream {
  /** Resolves with the time the stream ended (ms since epoch). */
  ended: Promise<number>
  close(): void
}

/** Opens the event stream of a page (by name, with a session token) or of a share link's path on instance B, and waits until it is connected. */
async function openStream(pageName: string, token: string | null): Promise<OpenStream> {
  const controller = new AbortController()
  const url = token === null ? `${bHttp.url}${pageName}/events` : `${bHttp.url}/pages/${pageName}/events`
  const response = await fetch(url, { headers: token === null ? {} : { cookie: `wt_session=${token}` }, signal: controller.signal })
  expect(response.status).toBe(200)
  const reader = response.body!.getReader()
  const first = await reader.read()
  expect(new TextDecoder().decode(first.value)).toContain(': connected')
  const ended = (async () => {
    try {
      for (let chunk = await reader.read(); !chunk.done; chunk = await reader.read()) {}
    } catch {
      // aborted by close()
    }
    return Date.now()
  })()
  return { ended, close: () => controller.abort() }
}

/** Expects the stream to end within `ms` of now. */
async function endsWithin(stream: OpenStream, ms: number) {
  const start = Date.now()
  const outcome = await Promise.race([stream.ended, Bun.sleep(ms + 250).then(() => null)])
  stream.close()
  expect(outcome).not.toBeNull()
  expect(outcome! - start).toBeLessThanOrEqual(ms)
}

describe('a live stream ends within a second, on another instance', () => {
  test('when its session signs out', async () => {
    const viewer = await a.createUser(organization)
    const page = await newPage({ userId: viewer.id })
    const session = await webSession(a, viewer, { displayName: 'Viewer' })
    const stream = await openStream(page.name, session.token)
    const signOut = await a.service.fetch(
      new Request('http://localhost/account/sign-out', {
        method: 'POST',
        headers: { cookie: `wt_session=${session.token}`, 'content-type': 'application/x-www-form-urlencoded' },
        body: `csrf=${encodeURIComponent(csrfFor(session.token))}`,
      }),
    )
    expect(signOut.status).toBe(303)
    await endsWithin(stream, 1000)
  })

  test('when its session expires', async () => {
    const viewer = await a.createUser(organization)
    const page = await newPage({ userId: viewer.id })
    const session = await webSession(a, viewer, { displayName: 'Viewer' })
    await a.service.core.db.execute(sql`update sessions set expires_at = now() + interval '1500 milliseconds' where id = ${session.id}`)
    const stream = await openStream(page.name, session.token)
    const [{ left }] = await queryRows<{ left: number }>(a.service.core.db, sql`select extract(epoch from expires_at - now()) * 1000 as left from sessions where id = ${session.id}`) as [{ left: number }]
    await endsWithin(stream, Math.max(0, Number(left)) + 1000)
  })

  test("when the user's own access entry is removed", async () => {
    const viewer = await a.createUser(organization)
    const page = await newPage({ userId: viewer.id })
    const stream = await openStream(page.name, (await webSession(a, viewer, { displayName: 'Viewer' })).token)
    await v1(creatorKey, 'DELETE', `/api/v1/pages/${page.id}/access/${viewer.id}`)
    await endsWithin(stream, 1000)
  })

  test('when the user leaves the team that gave access', async () => {
    const viewer = await a.createUser(organization)
    const team = await v1(adminKey, 'POST', '/api/v1/teams', { name: `Wall ${Math.random().toString(36).slice(2, 8)}` })
    await v1(adminKey, 'POST', `/api/v1/teams/${team.id}/members`, { userId: viewer.id })
    const page = await newPage({ teamId: team.id })
    const stream = await openStream(page.name, (await webSession(a, viewer, { displayName: 'Viewer' })).token)
    await v1(adminKey, 'DELETE', `/api/v1/teams/${team.id}/members/${viewer.id}`)
    await endsWithin(stream, 1000)
  })

  test('when the team that gave access is deleted', async () => {
    const viewer = await a.createUser(organization)
    const team = await v1(adminKey, 'POST', '/api/v1/teams', { name: `Gone ${Math.random().toString(36).slice(2, 8)}` })
    await v1(adminKey, 'POST', `/api/v1/teams/${team.id}/members`, { userId: viewer.id })
    const page = await newPage({ teamId: team.id })
    const stream = await openStream(page.name, (await webSession(a, viewer, { displayName: 'Viewer' })).token)
    await v1(adminKey, 'DELETE', `/api/v1/teams/${team.id}`)
    await endsWithin(stream, 1000)
  })

  test('when the page is deleted', async () => {
    const viewer = await a.createUser(organization)
    const page = await newPage({ userId: viewer.id })
    const stream = await openStream(page.name, (await webSession(a, viewer, { displayName: 'Viewer' })).token)
    await v1(creatorKey, 'DELETE', `/api/v1/pages/${page.id}`)
    await endsWithin(stream, 1000)
  })

  test('when the user is deactivated', async () => {
    const viewer = await a.createUser(organization)
    const page = await newPage({ userId: viewer.id })
    const stream = await openStream(page.name, (await webSession(a, viewer, { displayName: 'Viewer' })).token)
    await a.deactivateUser(viewer.id)
    await endsWithin(stream, 1000)
  })

  test('when its share link is revoked (no session at all)', async () => {
    const page = await newPage()
    const link = await v1(creatorKey, 'POST', `/api/v1/pages/${page.id}/share-links`, {})
    const stream = await openStream(link.url, null)
    await v1(creatorKey, 'DELETE', `/api/v1/pages/${page.id}/share-links/${link.id}`)
    await endsWithin(stream, 1000)
    expect((await fetch(`${bHttp.url}${link.url}/events`)).status).toBe(404)
  })

  test('when its share link expires', async () => {
    const page = await newPage()
    const link = await v1(creatorKey, 'POST', `/api/v1/pages/${page.id}/share-links`, { expiresAt: new Date(Date.now() + 3_600_000).toISOString() })
    await a.service.core.db.execute(sql`update page_share_links set expires_at = now() + interval '1500 milliseconds' where id = ${link.id}`)
    const stream = await openStream(link.url, null)
    const [{ left }] = (await queryRows<{ left: number }>(a.service.core.db, sql`select extract(epoch from expires_at - now()) * 1000 as left from page_share_links where id = ${link.id}`)) as [{ left: number }]
    await endsWithin(stream, Math.max(0, Number(left)) + 1000)
  })

  test('when the page of its share link is deleted', async () => {
    const page = await newPage()
    const link = await v1(creatorKey, 'POST', `/api/v1/pages/${page.id}/share-links`, {})
    const stream = await openStream(link.url, null)
    await v1(creatorKey, 'DELETE', `/api/v1/pages/${page.id}`)
    await endsWithin(stream, 1000)
  })

  test('a stream whose access is unchanged stays open', async () => {
    const viewer = await a.createUser(organization)
    const other = await a.createUser(organization)
    const page = await newPage({ userId: viewer.id })
    await v1(creatorKey, 'POST', `/api/v1/pages/${page.id}/access`, { userId: other.id })
    const component = await v1(creatorKey, 'POST', `/api/v1/pages/${page.id}/components`, { type: 'verticalBox' })
    const session = await webSession(a, viewer, { displayName: 'Viewer' })
    const response = await fetch(`${bHttp.url}/pages/${page.name}/events`, { headers: { cookie: `wt_session=${session.token}` } })
    const reader = response.body!.getReader()
    // Someone else losing access makes every instance re-check this page's viewers; this one passes.
    await v1(creatorKey, 'DELETE', `/api/v1/pages/${page.id}/access/${other.id}`)
    await a.deactivateUser(other.id)
    const data = { type: 'verticalBox', backgroundColor: '#fff', topText: { value: 'still', size: 12, color: '#000' }, bottomText: { value: 'open', size: 12, color: '#000' } }
    const posted = await a.request('POST', '/api/component', { body: { componentId: component.id, apiKey: creator.displayApiKey, timestamp: 1, data } })
    expect(posted.status).toBe(200)
    let text = ''
    const deadline = Date.now() + 3000
    while (!text.includes('event: component') && Date.now() < deadline) {
      const chunk = await Promise.race([reader.read(), Bun.sleep(deadline - Date.now()).then(() => null)])
      if (!chunk || chunk.done) break
      text += new TextDecoder().decode(chunk.value)
    }
    await reader.cancel().catch(() => {})
    expect(text).toContain('event: component')
  })
})
