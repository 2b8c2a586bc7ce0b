/**
 * docs/api.md's list of MCP tools is the server's: the section between its `mcp-tools` markers is
 * what scripts/mcp-tools.ts makes from the tools of a service with every plugin, and those are the
 * tools its MCP server lists over `/mcp` to a key with every scope (names and descriptions). A
 * tool added, removed or reworded fails here until `bun scripts/mcp-tools.ts --write` is run again.
 */
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { readFileSync } from 'node:fs'
import { API_DOC, renderTools, sectionOf, withSection } from '../../scripts/mcp-tools'
import { startTestService, type TestService } from '../helpers/service'

let api: TestService

beforeAll(async () => {
  api = await startTestService()
})
afterAll(async () => {
  await api?.stop()
})

const registered = () => api.service.core.tools.map(({ name, description, scopes }) => ({ name, description, scopes }))

test("docs/api.md lists the server's MCP tools, each with its scopes and description (else: bun scripts/mcp-tools.ts --write)", () => {
  const documented = sectionOf(readFileSync(API_DOC, 'utf8')).split('\n')
  expect(documented).toEqual(renderTools(registered()).split('\n'))
  expect(documented.filter((line) => line.startsWith('- `')).length).toBe(api.service.core.tools.length)
})

test('the registry the list is made from is what /mcp lists to a key with every scope', async () => {
  const organization = await api.createOrganization()
  const owner = await api.createUser(organization, 'superadministrator')
  const key = await api.createKey(
    owner.id,
    api.service.core.scopes.map((scope) => scope.name),
  )
  const listed = await api.request('POST', '/mcp', { key: key.secret, body: { jsonrpc: '2.0', id: 1, method: 'tools/list' }, headers: { accept: 'application/json, text/event-stream' } })
  expect(listed.status).toBe(200)
  const tools = (listed.body.result.tools as Array<{ name: string; description: string }>).map(({ name, description }) => ({ name, description }))
  expect(tools).toEqual(registered().map(({ name, description }) => ({ name, description })))
  expect(tools.length).toBeGreaterThan(20)
})

test('the section is found between its markers and replaced whole', () => {
  const markdown = 'before\n<!-- mcp-tools:start -->\nold\n<!-- mcp-tools:end -->\nafter\n'
  const section = renderTools([{ name: 'get_thing', description: 'One thing,\n  by id.', scopes: ['things:read'] }])
  expect(section.split('\n')).toContain('- `get_thing` (`things:read`): One thing, by id.')
  expect(withSection(markdown, section)).toBe(`before\n${section}\nafter\n`)
  expect(() => sectionOf('no markers')).toThrow('mcp-tools')
})
