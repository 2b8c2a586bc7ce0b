/**
 * Dashboards as a product: default placement that fills rows,
 * every change of a page reaching its open viewers (title, place, added and removed components,
 * the page's title), the page index, the way back after sign-in, kiosk mode and share links
 * (editors only, hashed, audited, bounded, read-only without a session, gone when revoked or
 * expired).
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { sql } from 'drizzle-orm'
import { sameSitePath } from '../../plugins/account/web'
import { DEFAULT_SIZE, place } from '../../plugins/display/pages/layout'
import { queryRows } from '../../src/db'
import { hashSecret } from '../../src/secrets'
import { createDisplayFixture, SAMPLE_DATA, type DisplayFixture } from '../helpers/display-fixture'
import { listen, type Listening } from '../helpers/http'
import { startTestService, type TestService, type TestUser } from '../helpers/service'
import { webSession } from '../helpers/sessions'
import { openEventStream } from '../helpers/sse'

let api: TestService
let site: Listening
let fx: DisplayFixture
let readerCookie: string

beforeAll(async () => {
  api = await startTestService({ config: { display: { maxShareLinksPerPage: 3 } } })
  site = listen(api)
  fx = await createDisplayFixture(api, 'wall')
  readerCookie = (await webSession(api, fx.reader)).cookie
})
afterAll(async () => {
  site?.stop()
  await api?.stop()
})

async function v1(method: string, path: string, body?: unknown, key = fx.creatorKey) {
  const response = await api.request(method, path, { key, body })
  if (response.status >= 300) throw new Error(`${method} ${path}: ${response.status} ${response.text}`)
  return response.body.data
}

const page = (path: string, cookie?: string) => fetch(`${site.url}${path}`, { headers: cookie ? { cookie } : {}, redirect: 'manual' })

describe('placement of new components', () => {
  test('components without a position fill rows left to right, each type at its default size', () => {
    const placed: Array<{ x: number; y: number; width: number; height: number }> = []
    const add = (type: keyof typeof DEFAULT_SIZE) => {
      const spot = place(placed, { type })
      placed.push(spot)
      return spot
    }
    expect(add('barChart')).toEqual({ x: 0, y: 0, width: 12, height: 6 })
    expect(add('lineChart')).toEqual({ x: 12, y: 0, width: 12, height: 6 })
    expect(add('verticalBox')).toEqual({ x: 0, y: 6, width: 6, height: 5 })
    expect(add('verticalBox')).toEqual({ x: 6, y: 6, width: 6, height: 5 })
    expect(add('horizontalBox')).toEqual({ x: 12, y: 6, width: 12, height: 3 })
    // The gap under the short horizontal box is taken by the next box that fits it.
    expect(add('verticalBox')).toEqual({ x: 12, y: 9, width: 6, height: 5 })
    expect(place(placed, { type: 'verticalBox', width: 12, height: 2 })).toEqual({ x: 0, y: 11, width: 12, height: 2 })
  })

  test('a given column or row is kept and the other found; a width past the edge is cut at 24', () => {
    const placed = [{ x: 0, y: 0, width: 12, height: 6 }]
    expect(place(placed, { type: 'pieChart', x: 0 })).toEqual({ x: 0, y: 6, width: 12, height: 6 })
    expect(place(placed, { type: 'pieChart', y: 0 })).toEqual({ x: 12, y: 0, width: 12, height: 6 })
    expect(place(placed, { type: 'pieChart', x: 3, y: 2 })).toEqual({ x: 3, y: 2, width: 12, height: 6 })
    expect(place([], { type: 'barChart', width: 40 }).width).toBe(24)
  })

  test('POST …/components without a position: the API places four charts two to a row', async () => {
    const board = await v1('POST', '/api/v1/pages', { name: `rows-${Date.now()}` })
    const spots = []
    for (const type of ['barChart', 'lineChart', 'pieChart', 'barChart']) {
      const created = await v1('POST', `/api/v1/pages/${board.id}/components`, { type })
      spots.push([created.x, created.y, created.width])
    }
    expect(spots).toEqual([
      [0, 0, 12],
      [12, 0, 12],
      [0, 6, 12],
      [12, 6, 12],
    ])
  })
})

describe('every change of a page reaches its open viewers', () => {
  test("a component's title and place, a new component, a removed one and the page's title arrive as events", async () => {
    const stream = await openEventStream(`${site.url}/pages/${fx.pageName}/events`, { cookie: readerCookie })
    try {
      await v1('PATCH', `/api/v1/pages/${fx.pageId}/components/${fx.components.barChart}`, { title: 'Deploys per day', y: 20 })
      const retitled = await stream.waitFor((event) => event.event === 'component' && event.data.id === fx.components.barChart, 2000)
      expect(retitled?.data.html).toContain('<h2>Deploys per day</h2>')
      expect(retitled?.data.html).toContain('data-y="20"')
      expect(retitled?.data.html).toContain('grid-row: 21 / span')

      const added = await v1('POST', `/api/v1/pages/${fx.pageId}/components`, { type: 'verticalBox', title: 'New box' })
      const arrived = await stream.waitFor((event) => event.event === 'component' && event.data.id === added.id, 2000)
      expect(arrived?.data.html).toContain('<h2>New box</h2>')
      expect(arrived?.data.html).toContain('No data yet')

      await v1('DELETE', `/api/v1/pages/${fx.pageId}/components/${added.id}`)
      expect(await stream.waitFor((event) => event.event === 'removed' && event.data.id === added.id, 2000)).not.toBeNull()

      await v1('PATCH', `/api/v1/pages/${fx.pageId}`, { title: 'Operations wall' })
      const retitledPage = await stream.waitFor((event) => event.event === 'page', 2000)
      expect(retitledPage?.data).toEqual({ name: fx.pageName, title: 'Operations wall' })
    } finally {
      stream.close()
    }
  })

  test('events of another page do not reach this one', async () => {
    const other = await v1('POST', '/api/v1/pages', { name: `other-${Date.now()}` })
    await v1('POST', `/api/v1/pages/${other.id}/access`, { userId: fx.reader.id })
    const stream = await openEventStream(`${site.url}/pages/${fx.pageName}/events`, { cookie: readerCookie })
    try {
      const elsewhere = await v1('POST', `/api/v1/pages/${other.id}/components`, { type: 'pieChart' })
      const here = await v1('POST', `/api/v1/pages/${fx.pageId}/components`, { type: 'pieChart' })
      expect(await stream.waitFor((event) => event.event === 'component' && event.data.id === here.id, 2000)).not.toBeNull()
      expect(stream.events.some((event) => event.data?.id === elsewhere.id)).toBe(false)
      await v1('DELETE', `/api/v1/pages/${fx.pageId}/components/${here.id}`)
    } finally {
      stream.close()
    }
  })
})

describe('the page index', () => {
  test('GET /pages lists the pages the user can see, most recently changed first, with their title, name and last update', async () => {
    const quiet = await v1('POST', '/api/v1/pages', { name: `quiet-${Date.now()}`, title: 'Quiet <board>' })
    await v1('POST', `/api/v1/pages/${quiet.id}/access`, { userId: fx.reader.id })
    await v1('POST', '/api/v1/pages', { name: `hidden-${Date.now()}`, title: 'Not for the reader' })
    const posted = await api.request('POST', '/api/component', {
      body: { componentId: fx.components.pieChart, apiKey: fx.creator.displayApiKey, timestamp: Date.now() / 1000, data: SAMPLE_DATA.pieChart },
    })
    expect(posted.status).toBe(200)
    const response = await page('/pages', readerCookie)
    expect(response.status).toBe(200)
    const text = await response.text()
    const items = [...text.matchAll(/<li><a href="([^"]+)"><strong>([^<]*)<\/strong><\/a>\s*<span class="meta">([^<]*)·([^<]*)· updated <time datetime="([^"]+)"/g)]
    // The fixture's page was fed last: first. Pages of earlier tests the reader was given may follow.
    const links = items.map((item) => item[1])
    expect(links[0]).toBe(`/pages/${fx.pageName}`)
    const quietRow = items.find((item) => item[1] === `/pages/${quiet.name}`)!
    expect(quietRow[2]).toBe('Quiet &lt;board&gt;')
    expect(quietRow[4]!.trim()).toBe('0 components')
    expect(items[0]![4]!.trim()).toMatch(/^\d+ components$/)
    expect(Date.parse(items[0]![5]!)).toBeGreaterThan(Date.parse(quietRow[5]!))
    const [{ count }] = (await queryRows<{ count: number }>(api.service.core.db, sql`select count(*)::int as count from page_viewers where user_id = ${fx.reader.id}`)) as [{ count: number }]
    expect(items.length).toBe(count)
    expect(text).not.toContain('Not for the reader')
  })

  test('a user who sees no page is told how to get one; without a session, sign-in comes first and returns here', async () => {
    const text = await (await page('/pages', (await webSession(api, fx.outsider)).cookie)).text()
    expect(text).toContain('No dashboards you can see yet')
    const signedOut = await page('/pages')
    expect(signedOut.status).toBe(303)
    expect(signedOut.headers.get('location')).toBe('/account/sign-in?next=%2Fpages')
    const kiosk = await page(`/pages/${fx.pageName}?kiosk=1`)
    expect(kiosk.headers.get('location')).toBe(`/account/sign-in?next=${encodeURIComponent(`/pages/${fx.pageName}?kiosk=1`)}`)
  })

  test('the landing page and the account area link to the index', async () => {
    expect(await (await page('/', undefined)).text()).toContain('href="/pages"')
    expect(await (await page('/account/keys', readerCookie)).text()).toContain('<a href="/pages">Dashboards</a>')
  })
})

describe('sign-in returns to the page that sent you', () => {
  test('only paths of this site are followed', () => {
    expect(sameSitePath('/pages/ops?kiosk=1')).toBe('/pages/ops?kiosk=1')
    expect(sameSitePath('/pages/a%20b#top')).toBe('/pages/a%20b#top')
    for (const hostile of ['//evil.example/x', '/\\evil.example', 'https://evil.example/', 'javascript:alert(1)', 'pages', '/\tx', `/${'a'.repeat(3000)}`, '', undefined])
      expect(sameSitePath(hostile)).toBeUndefined()
  })

  /** Signs in through the form with `next`; returns the redirect's location. */
  async function signInWith(next: string) {
    const form = await page(`/account/sign-in?next=${encodeURIComponent(next)}`)
    const html = await form.text()
    const csrf = /name="csrf" value="([^"]+)"/.exec(html)![1]!
    const hidden = /name="next" value="([^"]*)"/.exec(html)?.[1]
    const cookie = form.headers.getSetCookie().map((line) => line.split(';')[0]).join('; ')
    const body = new URLSearchParams({ csrf, email: fx.reader.email, password: 'reader password', ...(hidden !== undefined ? { next: hidden.replaceAll('&amp;', '&') } : {}) })
    const response = await fetch(`${site.url}/account/sign-in`, { method: 'POST', headers: { cookie, 'content-type': 'application/x-www-form-urlencoded' }, body, redirect: 'manual' })
    expect(response.status).toBe(303)
    return { location: response.headers.get('location'), hidden }
  }

  test('the form carries `next` and the sign-in goes there; another origin goes to the keys page instead', async () => {
    expect(await signInWith(`/pages/${fx.pageName}?kiosk=1`)).toEqual({ location: `/pages/${fx.pageName}?kiosk=1`, hidden: `/pages/${fx.pageName}?kiosk=1`.replace('&', '&amp;') })
    expect(await signInWith('//evil.example/steal')).toEqual({ location: '/account/keys', hidden: undefined })
    expect((await signInWith('https://evil.example/')).location).toBe('/account/keys')
  })

  test('a signed-in visit to the sign-in page goes straight to `next`', async () => {
    const response = await page(`/account/sign-in?next=${encodeURIComponent('/pages')}`, readerCookie)
    expect(response.status).toBe(303)
    expect(response.headers.get('location')).toBe('/pages')
  })
})

describe('kiosk mode', () => {
  test('?kiosk=1 marks the page for the kiosk layout; without it the page has its header and the way back to the index', async () => {
    const kiosk = await (await page(`/pages/${fx.pageName}?kiosk=1`, readerCookie)).text()
    expect(kiosk).toMatch(/<body class="live kiosk"/)
    const normal = await (await page(`/pages/${fx.pageName}`, readerCookie)).text()
    expect(normal).toMatch(/<body class="live"/)
    expect(normal).toContain('<a href="/pages">All dashboards</a>')
  })
})

describe('share links', () => {
  test('an editor creates a link shown once; only its hash is stored; the list and the link never show the token again; audited', async () => {
    const created = await api.request('POST', `/api/v1/pages/${fx.pageId}/share-links`, { key: fx.creatorKey, body: {} })
    expect(created.status).toBe(201)
    const link = created.body.data
    expect(link.url).toMatch(/^\/s\/dsl_[0-9A-Za-z]{42}$/)
    expect(created.headers.get('location')).toBe(`/api/v1/pages/${fx.pageId}/share-links/${link.id}`)
    const token = link.url.slice(3)
    expect(link.prefix).toBe(token.slice(0, 8))
    expect(link.expiresAt).toBeNull()
    const [row] = await queryRows<Record<string, unknown>>(api.service.core.db, sql`select * from page_share_links where id = ${link.id}`)
    expect(row!.token_hash).toBe(hashSecret(token))
    expect(JSON.stringify(row)).not.toContain(token)
    const listed = await v1('GET', `/api/v1/pages/${fx.pageId}/share-links`)
    expect(listed.find((item: { id: string }) => item.id === link.id)).toEqual({ ...link, url: undefined })
    expect(JSON.stringify(listed)).not.toContain(token)
    expect(await v1('GET', `/api/v1/pages/${fx.pageId}/share-links/${link.id}`)).not.toHaveProperty('url')
    const audits = await queryRows<{ action: string; resource_id: string }>(api.service.core.db, sql`select action, resource_id from audit_logs where resource_id = ${link.id}`)
    expect(audits.map((audit) => audit.action)).toEqual(['page.share_link_created'])
    await v1('DELETE', `/api/v1/pages/${fx.pageId}/share-links/${link.id}`)
  })

  test('anyone with the link sees the live page read-only without a session; revoked, it is 404 and audited', async () => {
    const link = await v1('POST', `/api/v1/pages/${fx.pageId}/share-links`, {})
    const shown = await page(link.url)
    expect(shown.status).toBe(200)
    expect(shown.headers.get('referrer-policy')).toBe('no-referrer')
    expect(shown.headers.get('x-robots-tag')).toContain('noindex')
    const html = await shown.text()
    expect(html).toContain('Shared view · read-only')
    expect(html).toContain(`data-events="${link.url}/events"`)
    expect(html).toContain(`id="component-${fx.components.barChart}"`)
    expect(html).not.toContain('All dashboards')
    expect((await page(`${link.url}?kiosk=1`)).status).toBe(200)
    const stream = await openEventStream(`${site.url}${link.url}/events`, {})
    try {
      const posted = await api.request('POST', '/api/component', {
        body: { componentId: fx.components.lineChart, apiKey: fx.creator.displayApiKey, timestamp: Date.now() / 1000, data: SAMPLE_DATA.lineChart },
      })
      expect(posted.status).toBe(200)
      expect(await stream.waitFor((event) => event.event === 'component' && event.data.id === fx.components.lineChart, 2000)).not.toBeNull()
      await v1('DELETE', `/api/v1/pages/${fx.pageId}/share-links/${link.id}`)
      const ended = await stream.waitFor((event) => event.event === 'end', 1000)
      expect(ended?.data.reason).toContain('revoked')
    } finally {
      stream.close()
    }
    expect((await page(link.url)).status).toBe(404)
    expect((await page(`${link.url}/events`)).status).toBe(404)
    const audits = await queryRows<{ action: string }>(api.service.core.db, sql`select action from audit_logs where resource_id = ${link.id} order by occurred_at, id`)
    expect(audits.map((audit) => audit.action)).toEqual(['page.share_link_created', 'page.share_link_revoked'])
  })

  test('an expired link is 404; an expiry in the past is refused', async () => {
    const link = await v1('POST', `/api/v1/pages/${fx.pageId}/share-links`, { expiresAt: new Date(Date.now() + 86_400_000).toISOString() })
    expect((await page(link.url)).status).toBe(200)
    await api.service.core.db.execute(sql`update page_share_links set expires_at = now() - interval '1 second' where id = ${link.id}`)
    expect((await page(link.url)).status).toBe(404)
    const past = await api.request('POST', `/api/v1/pages/${fx.pageId}/share-links`, { key: fx.creatorKey, body: { expiresAt: '2020-01-01T00:00:00Z' } })
    expect(past.status).toBe(400)
    expect(past.body.errors[0].field).toBe('expiresAt')
    await v1('DELETE', `/api/v1/pages/${fx.pageId}/share-links/${link.id}`)
  })

  test('tokens that are not a link are 404 before any lookup: malformed, wrong checksum, another page kind of secret', async () => {
    const link = await v1('POST', `/api/v1/pages/${fx.pageId}/share-links`, {})
    const token: string = link.url.slice(3)
    const flipped = token.slice(0, 10) + (token[10] === 'a' ? 'b' : 'a') + token.slice(11)
    for (const bad of ['x', flipped, token.replace('dsl_', 'wtk_'), `${token}x`, '%00', '%ZZ', fx.creator.displayApiKey!]) expect((await page(`/s/${bad}`)).status).toBe(404)
    await v1('DELETE', `/api/v1/pages/${fx.pageId}/share-links/${link.id}`)
  })

  test('viewers may not manage links (403), outsiders do not see the page (404), editor entries may', async () => {
    const readerKey = (await api.createKey(fx.reader.id, ['dashboards:read', 'dashboards:write'])).secret
    const outsiderKey = (await api.createKey(fx.outsider.id, ['dashboards:read', 'dashboards:write'])).secret
    expect((await api.request('GET', `/api/v1/pages/${fx.pageId}/share-links`, { key: readerKey })).status).toBe(403)
    expect((await api.request('POST', `/api/v1/pages/${fx.pageId}/share-links`, { key: readerKey, body: {} })).status).toBe(403)
    expect((await api.request('GET', `/api/v1/pages/${fx.pageId}/share-links`, { key: outsiderKey })).status).toBe(404)
    expect((await api.request('POST', `/api/v1/pages/${fx.pageId}/share-links`, { key: outsiderKey, body: {} })).status).toBe(404)
    await v1('PATCH', `/api/v1/pages/${fx.pageId}/access/${fx.reader.id}`, { level: 'editor' })
    try {
      const created = await api.request('POST', `/api/v1/pages/${fx.pageId}/share-links`, { key: readerKey, body: {} })
      expect(created.status).toBe(201)
      expect((await api.request('DELETE', `/api/v1/pages/${fx.pageId}/share-links/${created.body.data.id}`, { key: readerKey })).status).toBe(200)
    } finally {
      await v1('PATCH', `/api/v1/pages/${fx.pageId}/access/${fx.reader.id}`, { level: 'viewer' })
    }
    const readOnly = (await api.createKey(fx.creator.id, ['dashboards:read'])).secret
    expect((await api.request('POST', `/api/v1/pages/${fx.pageId}/share-links`, { key: readOnly, body: {} })).status).toBe(403)
  })

  test('a page holds at most display.maxShareLinksPerPage links: one more is 409 naming the limit', async () => {
    const board = await v1('POST', '/api/v1/pages', { name: `linked-${Date.now()}` })
    for (let i = 0; i < 3; i++) await v1('POST', `/api/v1/pages/${board.id}/share-links`, {})
    const refused = await api.request('POST', `/api/v1/pages/${board.id}/share-links`, { key: fx.creatorKey, body: {} })
    expect(refused.status).toBe(409)
    expect(refused.body.errors[0].message).toContain('maxShareLinksPerPage')
    expect((await v1('GET', `/api/v1/pages/${board.id}/share-links`)).length).toBe(3)
  })
})
