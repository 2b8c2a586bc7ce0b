/**
 * The `mcp` plugin: every enabled plugin's tools over MCP Streamable HTTP at `/mcp`, with the
 * same Bearer key, scopes, project access, validation, audit (`via: "mcp"`) and error codes as
 * REST. Stateless: each POST carries its own JSON-RPC exchange (no session id, no stream kept).
 * `/mcp?readonly=1` (or an OAuth grant of read scopes only) lists and runs only the tools that
 * change nothing (their `readOnlyHint`). Without a live credential: 401 whose challenge names the
 * protected resource's metadata (RFC 9728), where MCP clients start OAuth.
 */
import { WebStandardStreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js'
import { Elysia } from 'elysia'
import { answerResponse } from '../../src/http/answer'
import { BodyProblem } from '../../src/http/body'
import { requestIdOf } from '../../src/http/request-id'
import { definePlugin } from '../../src/plugin'
import { ApiError } from '../../src/http/errors'
import { actorOf, AuthenticatorRef, type Principal } from '../../src/services/identity'
import { linkOrigin, OAuthServerRef, onlyReads } from '../auth/api'
import { createMcpServer, type SentArguments } from './server'

const jsonRpcError = (status: number, code: number, message: string, headers: Record<string, string> = {}) =>
  new Response(JSON.stringify({ jsonrpc: '2.0', error: { code, message }, id: null }), { status, headers: { 'content-type': 'application/json', ...headers } })

const parseError = () => jsonRpcError(400, -32700, 'Parse error: the body must be JSON (at most 1 MiB).')

/**
 * One JSON-RPC message per POST: a batch (a JSON array) would run any number of tool calls for
 * one request, past the per-key rate limit that counts requests. MCP 2025-06-18 dropped batching.
 */
const batchRefused = () => jsonRpcError(400, -32600, 'Invalid Request: JSON-RPC batches are not supported; send one message per POST.')

/** `?readonly=`: `1`/`true` on, `0`/`false` or absent off, anything else undefined (refused). */
const readOnlyOf = (value: string | null) => (value === null || value === '0' || value === 'false' ? false : value === '1' || value === 'true' ? true : undefined)
const readonlyRefused = () => jsonRpcError(400, -32600, 'Invalid Request: readonly is 1 (only the read tools) or 0.')

const isObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value)

/**
 * Every answer repeats its request's id: a longer one is refused, so that a refusal stays small
 * whatever the client sends (ids are counters and UUIDs).
 */
const MAX_ID_LENGTH = 200
const idTooLong = (body: unknown) => isObject(body) && typeof body.id === 'string' && body.id.length > MAX_ID_LENGTH
const longIdRefused = () => jsonRpcError(400, -32600, `Invalid Request: an id is a number or a string of at most ${MAX_ID_LENGTH} characters.`)

/**
 * `value` with every object rebuilt without a prototype, so that it holds only what was sent: a
 * schema reads each property it names on the value, and would find Object.prototype's for a
 * field keyed `constructor` that the client left out (and refuse it, or fail to clone it).
 * Nesting is bounded by the body parser.
 */
function withoutPrototypes(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(withoutPrototypes)
  if (!isObject(value)) return value
  const copy: Record<string, unknown> = Object.create(null)
  for (const [key, item] of Object.entries(value)) copy[key] = withoutPrototypes(item)
  return copy
}

/**
 * A tool call's arguments as sent, and the message without them for the SDK: its schema parsing
 * drops an argument named `__proto__` and refuses one named `constructor`, where a tool refuses
 * each by name, as any unknown argument, when its own schema checks what was sent.
 */
function detachArguments(body: unknown): { message: unknown; sent?: SentArguments } {
  if (!isObject(body) || body.method !== 'tools/call' || !isObject(body.params) || !Object.hasOwn(body.params, 'arguments')) return { message: body }
  const { arguments: args, ...params } = body.params
  return { message: { ...body, params: { ...params, arguments: {} } }, sent: { arguments: withoutPrototypes(args) } }
}

export default definePlugin({
  name: 'mcp',
  description: 'The same capabilities as MCP tools over Streamable HTTP at /mcp.',
  dependencies: ['auth'],

  routes: ({ tools, services, log, isSecureRequest, publicUrl }) =>
    new Elysia({ name: 'mcp' }).all(
      '/mcp',
      async ({ request, body, set }) => {
        let principal: Principal
        try {
          principal = await services.get(AuthenticatorRef).authenticateBearer(request.headers.get('authorization'), undefined, 'mcp')
        } catch (error) {
          // RFC 9728: the challenge names the resource's metadata, where an MCP client finds the authorization server.
          if (error instanceof ApiError && error.status === 401) {
            const metadata = services.get(OAuthServerRef).resourceMetadataUrl(linkOrigin(request, isSecureRequest(request), publicUrl || undefined), 'mcp')
            error.headers['www-authenticate'] = `${error.headers['www-authenticate']}, resource_metadata="${metadata}"`
          }
          throw error
        }
        // Stateless: no server-initiated stream to open (GET) and no session to end (DELETE).
        if (request.method !== 'POST')
          return jsonRpcError(405, -32000, 'Method not allowed: this server is stateless; POST JSON-RPC messages.', { allow: 'POST' })
        if (body instanceof BodyProblem) return parseError()
        if (Array.isArray(body)) return batchRefused()
        if (idTooLong(body)) return longIdRefused()
        const asked = readOnlyOf(new URL(request.url).searchParams.get('readonly'))
        if (asked === undefined) return readonlyRefused()
        // An app granted only read scopes gets the read tools only, whatever it asks.
        const readonly = asked || Boolean(principal.grant && onlyReads([...principal.scopes]))
        const actor = actorOf(principal, 'mcp', requestIdOf(set))
        const { message, sent } = detachArguments(body)
        const server = createMcpServer(tools, actor, log, sent, { readonly })
        const transport = new WebStandardStreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true })
        await server.connect(transport)
        try {
          return await answerResponse(await transport.handleRequest(request, message === undefined ? undefined : { parsedBody: message }))
        } finally {
          await server.close()
        }
      },
      { detail: { hide: true } },
    ),
})
