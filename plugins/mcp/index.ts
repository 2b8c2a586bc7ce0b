/**
 * The `mcp` plugin: every enabled plugin's tools over MCP Streamable HTTP at `/mcp`, with the
 * same Bearer key, scopes, project access, validation, audit (`via: "mcp"`) and error codes as
 * REST. Stateless: each POST carries its own JSON-RPC exchange (no session id, no stream kept).
 */
import { WebStandardStreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js'
import { Elysia } from 'elysia'
import { answerResponse } from '../../src/http/answer'
import { BodyProblem } from '../../src/http/body'
import { requestIdOf } from '../../src/http/request-id'
import { definePlugin } from '../../src/plugin'
import { actorOf, AuthenticatorRef } from '../../src/services/identity'
import { createMcpServer } from './server'

const jsonRpcError = (status: number, code: number, message: string, headers: Record<string, string> = {}) =>
  new Response(JSON.stringify({ jsonrpc: '2.0', error: { code, message }, id: null }), { status, headers: { 'content-type': 'application/json', ...headers } })

const parseError = () => jsonRpcError(400, -32700, 'Parse error: the body must be JSON (at most 1 MiB).')

/**
 * One JSON-RPC message per POST: a batch (a JSON array) would run any number of tool calls for
 * one request, past the per-key rate limit that counts requests. MCP 2025-06-18 dropped batching.
 */
const batchRefused = () => jsonRpcError(400, -32600, 'Invalid Request: JSON-RPC batches are not supported; send one message per POST.')

export default definePlugin({
  name: 'mcp',
  description: 'The same capabilities as MCP tools over Streamable HTTP at /mcp.',
  dependencies: ['auth'],

  routes: ({ tools, services, log }) =>
    new Elysia({ name: 'mcp' }).all(
      '/mcp',
      async ({ request, body, set }) => {
        const principal = await services.get(AuthenticatorRef).authenticateBearer(request.headers.get('authorization'))
        // Stateless: no server-initiated stream to open (GET) and no session to end (DELETE).
        if (request.method !== 'POST')
          return jsonRpcError(405, -32000, 'Method not allowed: this server is stateless; POST JSON-RPC messages.', { allow: 'POST' })
        if (body instanceof BodyProblem) return parseError()
        if (Array.isArray(body)) return batchRefused()
        const actor = actorOf(principal, 'mcp', requestIdOf(set))
        const server = createMcpServer(tools, actor, log)
        const transport = new WebStandardStreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true })
        await server.connect(transport)
        try {
          return await answerResponse(await transport.handleRequest(request, body === undefined ? undefined : { parsedBody: body }))
        } finally {
          await server.close()
        }
      },
      { detail: { hide: true } },
    ),
})
