/**
 * A JSON-RPC request to /mcp whose params do not fit its method (no params, a tool call without a
 * tool's name) is the client's mistake: -32602 invalid params with the request's id and where the
 * params went wrong, never -32603 (internal error, MCP's 500) and never an unexpected error log.
 * An id too long to repeat is refused before anything runs.
 */
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { capturingLogger } from '../helpers/logger'
import { startTestService, type TestService } from '../helpers/service'

let api: TestService
let key: string
const lines: Array<{ level: string; message: string }> = []

beforeAll(async () => {
  api = await startTestService({ log: capturingLogger(lines) })
  const user = await api.createUser(await api.createOrganization())
  key = (await api.createKey(user.id, ['teams:read'])).secret
})
afterAll(() => api?.stop())

const MESSAGES: Array<[string, Record<string, unknown>, string]> = [
  ['initialize without params', { method: 'initialize' }, 'params'],
  ['initialize without a protocol version', { method: 'initialize', params: { capabilities: {}, clientInfo: { name: 'c', version: '1' } } }, 'params.protocolVersion'],
  ['a tool call without params', { method: 'tools/call' }, 'params'],
  ['a tool call without a name', { method: 'tools/call', params: { arguments: {} } }, 'params.name'],
  ['a tool call whose name is a number', { method: 'tools/call', params: { name: 5 } }, 'params.name'],
]

test.each(MESSAGES)('%s: -32602 naming where, with the request id', async (_name, message, where) => {
  const from = lines.length
  const response = await api.request('POST', '/mcp', { key, body: { jsonrpc: '2.0', id: 7, ...message }, headers: { accept: 'application/json, text/event-stream' } })
  expect(response.body).toEqual({ jsonrpc: '2.0', id: 7, error: { code: -32602, message: expect.stringContaining(`${where}: `) } })
  expect(lines.slice(from).filter((line) => line.level === 'error')).toEqual([])
})

test('an id longer than 200 characters is refused, so no answer repeats it', async () => {
  const from = lines.length
  const response = await api.request('POST', '/mcp', { key, body: { jsonrpc: '2.0', id: 'x'.repeat(100_000), method: 'tools/call', params: { name: 'list_teams', arguments: { cursor: 'x' } } }, headers: { accept: 'application/json, text/event-stream' } })
  expect(response.status).toBe(400)
  expect(response.body).toEqual({ jsonrpc: '2.0', id: null, error: { code: -32600, message: expect.stringContaining('at most 200 characters') } })
  const fits = await api.request('POST', '/mcp', { key, body: { jsonrpc: '2.0', id: 'x'.repeat(200), method: 'tools/list' }, headers: { accept: 'application/json, text/event-stream' } })
  expect(fits.body.id).toBe('x'.repeat(200))
  expect(lines.slice(from).filter((line) => line.level === 'error')).toEqual([])
})
