/**
 * The authorization table drives the MCP twins: every row with a tool × {no key, key without the
 * scope, key with it} × six roles × {same, other organization} must give the answer the REST
 * matrix gives — allowed, or refused with the same error code (no key: HTTP 401 on /mcp).
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import type { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { callTool, connectMcp, listen, type Listening } from '../helpers/mcp'
import { startTestService, type TestService } from '../helpers/service'
import { buildWorld, createCast, ENDPOINTS, expectedOutcome, ROLES, type Cast, type Endpoint, type KeyVariant, type World } from './table'

let api: TestService
let http: Listening
let casts: { same: Cast; other: Cast }
let world: World
let allScopes: string[]
const keys = new Map<string, string>()
const clients = new Map<string, Client>()

async function keyFor(userId: string, scopes: string[]) {
  const signature = `${userId}:${[...scopes].sort().join(',')}`
  if (!keys.has(signature)) keys.set(signature, (await api.createKey(userId, scopes)).secret)
  return keys.get(signature)!
}

async function clientFor(key: string) {
  if (!clients.has(key)) clients.set(key, await connectMcp(http.url, key))
  return clients.get(key)!
}

const worldBuilder = async () =>
  buildWorld(api, casts.same, {
    owner: await keyFor(casts.same.owner.id, allScopes),
    administrator: await keyFor(casts.same.administrator.id, allScopes),
  })

beforeAll(async () => {
  api = await startTestService()
  http = listen(api)
  allScopes = api.service.core.scopes.map((scope) => scope.name)
  casts = { same: await createCast(api, await api.createOrganization('A')), other: await createCast(api, await api.createOrganization('B')) }
  world = await worldBuilder()
})
afterAll(async () => {
  for (const client of clients.values()) await client.close()
  http.stop()
  await api.stop()
})

const VARIANTS: KeyVariant[] = ['none', 'without-scope', 'with-scope']

for (const endpoint of ENDPOINTS.filter((row): row is Endpoint & { tool: string; args: NonNullable<Endpoint['args']> } => Boolean(row.tool && row.args))) {
  describe(`${endpoint.tool} (twin of ${endpoint.method} ${endpoint.route})`, () => {
    for (const variant of VARIANTS.filter((each) => each !== 'without-scope' || endpoint.scopes.length > 0)) {
      for (const role of ROLES) {
        for (const sameOrganization of [true, false]) {
          const expected = expectedOutcome(endpoint, variant, role, sameOrganization)
          test(`${variant} · ${role} · ${sameOrganization ? 'same' : 'other'} organization → ${expected.code ?? 'allowed'}`, async () => {
            if (variant === 'none') {
              const response = await fetch(`${http.url}/mcp`, {
                method: 'POST',
                headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
                body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
              })
              expect(response.status).toBe(401)
              expect(response.headers.get('www-authenticate')).toStartWith('Bearer')
              return
            }
            const user = (sameOrganization ? casts.same : casts.other)[role]
            const key = await keyFor(user.id, variant === 'with-scope' ? endpoint.scopes : allScopes.filter((scope) => !endpoint.scopes.includes(scope)))
            const client = await clientFor(key)
            const target = endpoint.mutates && expected.status < 300 ? await worldBuilder() : world
            const outcome = await callTool(client, endpoint.tool, endpoint.args(target))
            expect({ isError: outcome.isError, code: outcome.code }).toEqual({ isError: expected.status >= 300, code: expected.code })
          })
        }
      }
    }
  })
}
