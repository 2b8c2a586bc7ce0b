/** The test service on a real port, for real clients (MCP SDK, Chromium). */
import type { TestService } from './service'

export interface Listening {
  url: string
  port: number
  stop(): void
}

/** Serves the test service over HTTP on a free port of `hostname`. */
export function listen(api: TestService, hostname = '127.0.0.1'): Listening {
  const server = Bun.serve({ port: 0, hostname, fetch: (request, bun) => api.service.fetch(request, { ip: bun.requestIP(request)?.address }) })
  return { url: `http://${hostname}:${server.port}`, port: server.port!, stop: () => server.stop(true) }
}
