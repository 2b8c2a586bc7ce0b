/** A real MCP client (the SDK's Client over Streamable HTTP) against the service on a real port. */
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
export { listen, type Listening } from './http'

/** Connects (initializes) a client with the key to `path` (`/mcp?readonly=1`…); throws what the transport throws (e.g. 401). */
export async function connectMcp(baseUrl: string, key: string | undefined, path = '/mcp'): Promise<Client> {
  const client = new Client({ name: 'worktrack-tests', version: '1.0.0' })
  const transport = new StreamableHTTPClientTransport(new URL(path, baseUrl), {
    requestInit: key ? { headers: { authorization: `Bearer ${key}` } } : {},
  })
  await client.connect(transport)
  return client
}

export interface ToolOutcome {
  isError: boolean
  data: any
  code?: string
}

/** Calls a tool and returns its structured result, and the error code when refused. */
export async function callTool(client: Client, name: string, args: Record<string, unknown>): Promise<ToolOutcome> {
  const result = (await client.callTool({ name, arguments: args })) as { isError?: boolean; structuredContent?: any; content: Array<{ text?: string }> }
  const data = result.structuredContent ?? JSON.parse(result.content[0]?.text ?? 'null')
  return { isError: Boolean(result.isError), data, code: result.isError ? data?.error?.code : undefined }
}
