/**
 * Cursor pages on every list ("Lists accept `cursor` … besides `page`"): each list that
 * took only `page` walked by cursor, two rows at a time, returns what the page walk returns in
 * the same order, with the exact total on every page and no next cursor on the last; its MCP
 * tool walks the same; and a cursor issued by another list (or for another team, page or
 * filter) is 400 naming `cursor`. Work items, entries and the other filtered lists have their
 * own tests.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import type { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { callTool, connectMcp, listen, type Listening } from '../helpers/mcp'
import { startTestService, type TestService, type TestUser } from '../helpers/service'
import { startWebhookReceiver, type WebhookReceiver } from '../helpers/webhook-receiver'

/** Rows made for every list: three pages of two, the last one short. */
const ROWS = 5
const SIZE = 2

let api: TestService
let http: Listening
let mcp: Client
let receiver: WebhookReceiver
let admin: TestUser
let key: string
const teams: string[] = []
const projects: string[] = []
const pages: string[] = []
const webhooks: string[] = []
let pageName: string

const call = (method: string, path: string, body?: unknown) => api.request(method, path, { key, body })
async function created(path: string, body: unknown) {
  const response = await call('POST', path, body)
  if (response.status !== 201) throw new Error(`POST ${path}: ${response.status} ${response.text}`)
  return response.body.data
}

beforeAll(async () => {
  receiver = await startWebhookReceiver(() => ({ status: 200, body: 'thanks' }))
  api = await startTestService({ config: { webhooks: { allowPrivateTargets: true, manualDeliveriesPerMinute: 100 } } })
  http = listen(api)
  const organization = await api.createOrganization()
  admin = await api.createUser(organization, 'administrator')
  key = (await api.createKey(admin.id, api.service.core.scopes.map((scope) => scope.name))).secret
  mcp = await connectMcp(http.url, key)
  const users: TestUser[] = []
  for (let i = 0; i < ROWS; i++) users.push(await api.createUser(organization))

  for (let i = 0; i < ROWS; i++) teams.push((await created('/api/v1/teams', { name: `Team ${i}` })).id)
  for (const user of users) await created(`/api/v1/teams/${teams[0]}/members`, { userId: user.id })
  for (let i = 0; i < ROWS; i++) projects.push((await created('/api/v1/projects', { name: `Project ${i}` })).id)
  // The creator is the first member of project 0; four more make five.
  for (const user of users.slice(1)) await created(`/api/v1/projects/${projects[0]}/members`, { userId: user.id, accessLevel: 'viewer' })
  for (const team of teams) await created(`/api/v1/projects/${projects[0]}/teams`, { teamId: team, accessLevel: 'viewer' })
  for (const project of projects.slice(1)) await created(`/api/v1/projects/${project}/teams`, { teamId: teams[0], accessLevel: 'editor' })

  for (let i = 0; i < ROWS; i++) pages.push((await created('/api/v1/pages', { name: `board-${i}-${crypto.randomUUID().slice(0, 6)}` })).id)
  pageName = (await call('GET', `/api/v1/pages/${pages[0]}`)).body.data.name
  for (const user of users.slice(0, 3)) await created(`/api/v1/pages/${pages[0]}/access`, { userId: user.id })
  for (const team of teams.slice(0, 2)) await created(`/api/v1/pages/${pages[0]}/access`, { teamId: team, level: 'editor' })
  for (let i = 0; i < ROWS; i++) await created(`/api/v1/pages/${pages[0]}/components`, { type: 'horizontalBox', title: `Box ${i}` })
  for (let i = 0; i < ROWS; i++) await created(`/api/v1/pages/${pages[0]}/share-links`, {})
  for (let i = 0; i < ROWS; i++) {
    const sent = await api.request('POST', '/api/message', { body: { apiKey: admin.displayApiKey, pageName, message: `Message ${i}` }, headers: { 'content-type': 'application/json' } })
    if (sent.status !== 200) throw new Error(`POST /api/message: ${sent.status} ${sent.text}`)
  }

  for (let i = 0; i < ROWS; i++) webhooks.push((await created('/api/v1/webhooks', { url: `http://127.0.0.1:${receiver.port}/hooks/${i}`, events: ['work_item.created'] })).id)
  for (let i = 0; i < ROWS; i++) await created(`/api/v1/webhooks/${webhooks[0]}/test`, undefined)
}, 120_000)
afterAll(async () => {
  await mcp?.close()
  http?.stop()
  await api?.stop()
  await receiver?.close()
})

interface ListCase {
  name: string
  path: () => string
  /** The row's identity as the list shows it. */
  id: (item: any) => string
  /** The MCP tool of the list, with its arguments besides paging. */
  tool?: { name: string; args: () => Record<string, unknown> }
}

const LISTS: ListCase[] = [
  { name: 'teams', path: () => '/api/v1/teams', id: (item) => item.id, tool: { name: 'list_teams', args: () => ({}) } },
  { name: 'team members', path: () => `/api/v1/teams/${teams[0]}/members`, id: (item) => item.userId, tool: { name: 'list_team_members', args: () => ({ teamId: teams[0] }) } },
  { name: 'team projects', path: () => `/api/v1/teams/${teams[0]}/projects`, id: (item) => item.id, tool: { name: 'list_team_projects', args: () => ({ teamId: teams[0] }) } },
  { name: 'projects', path: () => '/api/v1/projects', id: (item) => item.id, tool: { name: 'list_projects', args: () => ({}) } },
  { name: 'project members', path: () => `/api/v1/projects/${projects[0]}/members`, id: (item) => item.userId, tool: { name: 'list_project_members', args: () => ({ projectId: projects[0] }) } },
  { name: 'project teams', path: () => `/api/v1/projects/${projects[0]}/teams`, id: (item) => item.teamId },
  { name: 'pages', path: () => '/api/v1/pages', id: (item) => item.id },
  { name: 'page access', path: () => `/api/v1/pages/${pages[0]}/access`, id: (item) => item.principalId },
  { name: 'components', path: () => `/api/v1/pages/${pages[0]}/components`, id: (item) => item.id },
  { name: 'share links', path: () => `/api/v1/pages/${pages[0]}/share-links`, id: (item) => item.id },
  { name: 'message reports', path: () => `/api/v1/pages/${pages[0]}/messages`, id: (item) => item.id },
  { name: 'webhooks', path: () => '/api/v1/webhooks', id: (item) => item.id, tool: { name: 'list_webhooks', args: () => ({}) } },
  { name: 'webhook deliveries', path: () => `/api/v1/webhooks/${webhooks[0]}/deliveries`, id: (item) => item.id },
]

const withQuery = (path: string, query: string) => `${path}${path.includes('?') ? '&' : '?'}${query}`

async function get(path: string) {
  const response = await call('GET', path)
  if (response.status !== 200) throw new Error(`GET ${path}: ${response.status} ${response.text}`)
  return response.body
}

/** The list's ids by `page`, every page's `totalItems` checked. */
async function pageWalk(list: ListCase): Promise<string[]> {
  const ids: string[] = []
  for (let page = 0; ; page++) {
    const body = await get(withQuery(list.path(), `size=${SIZE}&page=${page}`))
    expect(body.meta.totalItems).toBe(ROWS)
    ids.push(...body.data.map(list.id))
    if (page + 1 >= body.meta.totalPages) break
  }
  return ids
}

/** The list's ids by cursor from its first page; every page's total checked, and that only the last has no next cursor. */
async function cursorWalk(list: ListCase): Promise<{ ids: string[]; cursors: string[] }> {
  const ids: string[] = []
  const cursors: string[] = []
  let cursor: string | null = null
  for (let page = 0; page < 10; page++) {
    const body = await get(withQuery(list.path(), `size=${SIZE}${cursor ? `&cursor=${cursor}` : ''}`))
    expect(body.meta).toMatchObject({ size: SIZE, totalItems: ROWS, totalPages: Math.ceil(ROWS / SIZE) })
    ids.push(...body.data.map(list.id))
    cursor = body.meta.nextCursor
    if (cursor === null) break
    expect(typeof cursor).toBe('string')
    cursors.push(cursor)
  }
  expect(cursor).toBeNull()
  return { ids, cursors }
}

/** A cursor each list issued (its first page's next cursor), by list name. */
const issued = new Map<string, string>()

describe.each(LISTS)('$name', (list) => {
  test('a cursor walk returns the page walk, in order, with the exact total on every page; the last page has no next cursor', async () => {
    const byPage = await pageWalk(list)
    expect(byPage).toHaveLength(ROWS)
    expect(new Set(byPage).size).toBe(ROWS)
    const { ids, cursors } = await cursorWalk(list)
    expect(ids).toEqual(byPage)
    expect(cursors).toHaveLength(Math.ceil(ROWS / SIZE) - 1)
    issued.set(list.name, cursors[0]!)
  })

  test('following Link rel="next" from the first page walks the list by cursor: every row once, as the page walk has them', async () => {
    const ids: string[] = []
    let target: string | undefined = withQuery(list.path(), `size=${SIZE}`)
    for (let page = 0; target && page < 10; page++) {
      const response = await call('GET', target)
      expect(response.status).toBe(200)
      ids.push(...response.body.data.map(list.id))
      const next = /<([^>]*)>; rel="next"/.exec(response.headers.get('link') ?? '')?.[1]
      // Never a page number: the first page's `next` is its meta.nextCursor, as every later page's.
      if (next) expect(next).toBe(withQuery(list.path(), `size=${SIZE}&cursor=${response.body.meta.nextCursor}`))
      else expect(response.body.meta.nextCursor).toBeNull()
      target = next
    }
    expect(target).toBeUndefined()
    expect(ids).toEqual(await pageWalk(list))
  })

  test("another list's cursor, or a forged or truncated one, is 400 naming cursor", async () => {
    const foreign = issued.get(list.name === 'teams' ? 'projects' : 'teams') ?? (await cursorWalk(LISTS[list.name === 'teams' ? 3 : 0]!)).cursors[0]!
    const own = issued.get(list.name) ?? (await cursorWalk(list)).cursors[0]!
    for (const cursor of [foreign, own.slice(0, -3), Buffer.from('["x","1"]').toString('base64url')]) {
      const response = await call('GET', withQuery(list.path(), `size=${SIZE}&cursor=${cursor}`))
      expect({ cursor, status: response.status }).toEqual({ cursor, status: 400 })
      expect(response.body.errors[0].field).toBe('cursor')
    }
  })

  if (list.tool) {
    const tool = list.tool
    test(`${tool.name} walks by cursor as REST does`, async () => {
      const ids: string[] = []
      let cursor: string | null = null
      for (let page = 0; page < 10; page++) {
        const outcome = await callTool(mcp, tool.name, { ...tool.args(), size: SIZE, ...(cursor ? { cursor } : {}) })
        expect(outcome.isError).toBe(false)
        expect(outcome.data.meta.totalItems).toBe(ROWS)
        ids.push(...outcome.data.items.map(list.id))
        cursor = outcome.data.meta.nextCursor
        if (cursor === null) break
      }
      expect(cursor).toBeNull()
      expect(ids).toEqual((await cursorWalk(list)).ids)
      const foreign = await callTool(mcp, tool.name, { ...tool.args(), size: SIZE, cursor: issued.get(list.name === 'teams' ? 'projects' : 'teams') ?? 'AAAA' })
      expect(foreign.isError).toBe(true)
      expect(foreign.code).toBe('BAD_REQUEST')
      expect(JSON.stringify(foreign.data)).toContain('cursor')
    })
  }
})

describe('a cursor is valid only for what issued it', () => {
  test("another team's, page's or webhook's cursor, or one issued without the filter, is 400 naming cursor", async () => {
    const cases: Array<[string, string]> = [
      [`/api/v1/teams/${teams[0]}/members`, `/api/v1/teams/${teams[1]}/members`],
      [`/api/v1/teams/${teams[0]}/projects`, `/api/v1/teams/${teams[1]}/projects`],
      [`/api/v1/projects/${projects[0]}/teams`, `/api/v1/projects/${projects[1]}/teams`],
      [`/api/v1/pages/${pages[0]}/components`, `/api/v1/pages/${pages[1]}/components`],
      [`/api/v1/webhooks/${webhooks[0]}/deliveries`, `/api/v1/webhooks/${webhooks[1]}/deliveries`],
      [`/api/v1/webhooks/${webhooks[0]}/deliveries`, `/api/v1/webhooks/${webhooks[0]}/deliveries?status=pending`],
    ]
    for (const [issuer, other] of cases) {
      const cursor = (await get(withQuery(issuer, `size=${SIZE}`))).meta.nextCursor as string
      expect(typeof cursor).toBe('string')
      const response = await call('GET', withQuery(other, `size=${SIZE}&cursor=${cursor}`))
      expect({ other, status: response.status }).toEqual({ other, status: 400 })
      expect(response.body.errors[0].field).toBe('cursor')
    }
  })

  test('a cursor walk of deliveries by status returns the page walk by status', async () => {
    // Pings settle as the receiver answers: wait until all five have, so both walks see one set.
    const settled = async () => (await get(withQuery(`/api/v1/webhooks/${webhooks[0]}/deliveries`, 'size=100&status=succeeded'))).meta.totalItems
    for (let i = 0; i < 300 && (await settled()) < ROWS; i++) await Bun.sleep(50)
    const path = `/api/v1/webhooks/${webhooks[0]}/deliveries?status=succeeded`
    const list: ListCase = { name: 'succeeded deliveries', path: () => path, id: (item) => item.id }
    expect((await cursorWalk(list)).ids).toEqual(await pageWalk(list))
  })
})
