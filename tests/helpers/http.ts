/** The test service on a real port, for real clients (MCP SDK, Chromium); free ports for child processes. */
import { createServer } from 'node:net'
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

/** A TCP port of 127.0.0.1 free right now (for a process that will listen on it). */
export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer()
    server.once('error', reject)
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number }
      server.close(() => resolve(port))
    })
  })
}
