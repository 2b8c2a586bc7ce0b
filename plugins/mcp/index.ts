/**
 * The `mcp` plugin: every enabled plugin's tools over MCP Streamable HTTP at `/mcp`, with the
 * same Bearer key, scopes, project access, validation, audit (`via: "mcp"`) and error codes as
 * REST. Stateless: each POST carries its own JSON-RPC exchange (no session id, no stream kept).
 */
import { WebStandardStreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js'
import { Elysia } from 'elysia'
import { BodyProblem } from '../../src/http/body'
import { requestIdOf } from '../../src/http/request-id'
import { definePlugin } from '../../src/plugin'
import { actorOf, AuthenticatorRef } from '../../src/services/auth'
import { createMcpServer } from './server'

const parseError = () =>
  new Response(JSON.stringify({ jsonrpc: '2.0', error: { code: -32700, message: 'Parse error: the body must be JSON (at most 1 MiB).' }, id: null }), {
    status: 400,
    headers: { 'content-type': 'application/json' },
  })

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
          return new Response(JSON.stringify({ jsonrpc: '2.0', error: { code: -32000, message: 'Method not allowed: this server is stateless; POST JSON-RPC messages.' }, id: null }), {
            status: 405,
            headers: { allow: 'POST', 'content-type': 'application/json' },
          })
        if (body instanceof BodyProblem) return parseError()
        const actor = actorOf(principal, 'mcp', requestIdOf(set))
        const server = createMcpServer(tools, actor, log)
        const transport = new WebStandardStreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true })
        await server.connect(transport)
        try {
          return await transport.handleRequest(request, body === undefined ? undefined : { parsedBody: body })
        } finally {
          await server.close()
        }
      },
      { detail: { hide: true } },
    ),
})
