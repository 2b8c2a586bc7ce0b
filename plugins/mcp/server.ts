/**
 * One MCP server per request (stateless Streamable HTTP): it lists only the tools the key's
 * scopes allow and runs each through the same validation, service function and error mapping
 * as REST. A refused call is a tool result with `isError: true` and the REST error code.
 */
import { Server } from '@modelcontextprotocol/sdk/server/index.js'
import { AjvJsonSchemaValidator } from '@modelcontextprotocol/sdk/validation/ajv'
import { CallToolRequestSchema, ErrorCode, ListToolsRequestSchema, McpError, type CallToolResult } from '@modelcontextprotocol/sdk/types.js'
import { CachedPage } from '../../src/http/list-cache'
import { Page, valueOf } from '../../src/http/answer'
import { forbidden, notFound } from '../../src/http/errors'
import { mapError } from '../../src/http/error-mapper'
import { describeError, type Logger } from '../../src/log'
import type { ToolDefinition } from '../../src/plugin'
import { missingScopes, requireScopes, type Actor } from '../../src/services/identity'
import { validate } from '../../src/validate'

const SERVER_INFO = { name: 'worktrack', version: '1.0.0' }

/** The JSON object a tool answers (MCP's structured content is an object): a Page becomes `{items, meta}`, an array `{items}`. */
function structured(value: unknown): Record<string, unknown> {
  if (value instanceof Page) return { items: value.items, meta: value.meta }
  if (Array.isArray(value)) return { items: value }
  if (typeof value !== 'object' || value === null) return value === undefined || value === null ? {} : { value }
  return value as Record<string, unknown>
}

function success(value: unknown): CallToolResult {
  const content = structured(value)
  return { content: [{ type: 'text', text: JSON.stringify(content) }], structuredContent: content }
}

function failure(error: unknown, log: Logger, tool: string, requestId: string): CallToolResult {
  const mapped = mapError(error)
  if (mapped.unexpected) log.error('tool failed', { tool, requestId, ...describeError(error) })
  const payload = { error: mapped.items[0]!, errors: mapped.items, status: mapped.status }
  return { isError: true, content: [{ type: 'text', text: JSON.stringify(payload) }], structuredContent: payload }
}

/** JSON Schema of a TypeBox schema (the TypeBox symbols dropped). */
const jsonSchema = (schema: unknown) => JSON.parse(JSON.stringify(schema))

const allowed = (tool: ToolDefinition, actor: Actor) => missingScopes(actor, tool.scopes).length === 0

/** One schema validator for every per-request server: building one (Ajv) per request cost ~30 % of a call. */
const schemaValidator = new AjvJsonSchemaValidator()

/** The arguments of the request's tool call exactly as sent (own keys, whatever their names). */
export interface SentArguments {
  arguments: unknown
}

type RequestHandler = (request: unknown, extra: unknown) => Promise<unknown>

interface SchemaRefusal {
  issues?: Array<{ path?: unknown[]; message?: string }>
}

/** zod's refusal (`ZodError`, or its core's `$ZodError`), matched by name: the SDK may load its own build of zod. */
const isSchemaRefusal = (error: unknown): error is SchemaRefusal => error instanceof Error && /^\$?ZodError$/.test(error.name)

/** A schema refusal's issues in a line: where and what (never the value). */
const issuesOf = (refusal: SchemaRefusal) =>
  (refusal.issues ?? [])
    .slice(0, 5)
    .map((issue) => `${(issue.path ?? []).join('.') || 'the message'}: ${issue.message ?? 'invalid'}`)
    .join('; ')

/**
 * The SDK parses a request's params with its schema before the handler runs and answers a
 * refusal as an internal error (-32603, MCP's 500), though the client's message is at fault:
 * invalid params (-32602).
 */
function refusalsAsInvalidParams(server: Server): void {
  const handlers = (server as unknown as { _requestHandlers: Map<string, RequestHandler> })._requestHandlers
  for (const [method, handler] of handlers)
    handlers.set(method, async (request, extra) => {
      try {
        return await handler(request, extra)
      } catch (error) {
        if (isSchemaRefusal(error)) throw new McpError(ErrorCode.InvalidParams, `Invalid params of ${method}: ${issuesOf(error)}`)
        throw error
      }
    })
}

/**
 * A server for one request; `sent` is its tool call's arguments as sent, read instead of the SDK's
 * parsed copy; `readonly`: only the tools that change nothing are listed and run.
 */
export function createMcpServer(tools: readonly ToolDefinition[], actor: Actor, log: Logger, sent?: SentArguments, options: { readonly?: boolean } = {}): Server {
  const server = new Server(SERVER_INFO, { capabilities: { tools: {} }, jsonSchemaValidator: schemaValidator })
  server.setRequestHandler(ListToolsRequestSchema, async () => {
    const memo = new Map<string, Promise<unknown>>()
    const listed = tools.filter((tool) => allowed(tool, actor) && (!options.readonly || tool.readOnly))
    return {
      tools: await Promise.all(
        listed.map(async (tool) => ({
          name: tool.name,
          description: tool.description,
          inputSchema: jsonSchema(tool.describe ? await tool.describe(actor, memo) : tool.input),
          annotations: { readOnlyHint: tool.readOnly ?? false, destructiveHint: tool.destructive ?? false },
        })),
      ),
    }
  })
  server.setRequestHandler(CallToolRequestSchema, async (request) => {
    const { name, arguments: args } = request.params
    const tool = tools.find((candidate) => candidate.name === name)
    try {
      if (!tool) throw notFound(`No tool named "${name}".`)
      if (options.readonly && !tool.readOnly) throw forbidden(`This connection is read only (/mcp?readonly=1): "${name}" changes data.`)
      requireScopes(actor, tool.scopes)
      const value = await tool.run(actor, validate(tool.input, sent ? sent.arguments : (args ?? {})))
      // A write's answer (201 and its Location) is HTTP's; a tool answers with the resource.
      return success(value instanceof CachedPage ? await value.page() : valueOf(value))
    } catch (error) {
      return failure(error, log, name, actor.requestId)
    }
  })
  refusalsAsInvalidParams(server)
  return server
}
