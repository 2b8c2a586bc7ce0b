/**
 * The authorization table drives the MCP twins: every row with a tool × {key without the scope,
 * key with it} × six roles × {same, other organization} must give the answer the REST matrix
 * gives — allowed, or refused with the same error code. Without a key there is no role or
 * organization: one case per tool calls it with no key, and /mcp answers HTTP 401.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import type { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { sql } from 'drizzle-orm'
import { queryRows } from '../../src/db'
import { callTool, connectMcp, listen, type Listening } from '../helpers/mcp'
import { nextCaseInPart, partNote } from '../helpers/part'
import { startTestService, type TestService } from '../helpers/service'
import { ENDPOINTS, expectedOutcome, ROLES, setUpMatrix, variantsFor, type Endpoint, type Matrix } from './table'

let api: TestService
let http: Listening
let matrix: Matrix
const clients = new Map<string, Client>()

async function clientFor(key: string) {
  if (!clients.has(key)) clients.set(key, await connectMcp(http.url, key))
  return clients.get(key)!
}

beforeAll(async () => {
  api = await startTestService()
  http = listen(api)
  matrix = await setUpMatrix(api)
})
afterAll(async () => {
  for (const client of clients.values()) await client.close()
  http.stop()
  await api.stop()
})

for (const endpoint of ENDPOINTS.filter((row): row is Endpoint & { tool: string; args: NonNullable<Endpoint['args']> } => Boolean(row.tool && row.args))) {
  describe(`${endpoint.tool} (twin of ${endpoint.method} ${endpoint.route})${partNote}`, () => {
    const refused = expectedOutcome(endpoint, 'none', 'owner', true)
    if (nextCaseInPart()) test(`none (no key: no role, no organization) → HTTP ${refused.status} ${refused.code}, nothing written`, async () => {
      const response = await fetch(`${http.url}/mcp`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
        body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: endpoint.tool, arguments: endpoint.args(matrix.world) } }),
      })
      expect(response.status).toBe(refused.status)
      expect(response.headers.get('www-authenticate')).toStartWith('Bearer')
      expect((await response.json()).errors[0].code).toBe(refused.code!)
      const requestId = response.headers.get('x-request-id')!
      expect(requestId).toBeTruthy()
      const audited = await queryRows(api.service.core.db, sql`select 1 from audit_logs where request_id = ${requestId}`)
      expect(audited).toEqual([])
    })

    for (const variant of variantsFor(endpoint).filter((each) => each !== 'none')) {
      for (const role of ROLES) {
        for (const sameOrganization of [true, false]) {
          if (!nextCaseInPart()) continue
          const expected = expectedOutcome(endpoint, variant, role, sameOrganization)
          test(`${variant} · ${role} · ${sameOrganization ? 'same' : 'other'} organization → ${expected.code ?? 'allowed'}`, async () => {
            const { casts, allScopes, keyFor } = matrix
            const user = (sameOrganization ? casts.same : casts.other)[role]
            const key = await keyFor(user.id, variant === 'with-scope' ? endpoint.scopes : allScopes.filter((scope) => !endpoint.scopes.includes(scope)))
            const client = await clientFor(key)
            const target = endpoint.mutates && expected.status < 300 ? await matrix.worldBuilder() : matrix.world
            const outcome = await callTool(client, endpoint.tool, endpoint.args(target))
            expect({ isError: outcome.isError, code: outcome.code }).toEqual({ isError: expected.status >= 300, code: expected.code })
          })
        }
      }
    }
  })
}
