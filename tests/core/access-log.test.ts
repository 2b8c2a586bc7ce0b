/**
 * The access log: one JSON line per request at info through the service's logger, with
 * the request id, method, route pattern (never the path), status and duration; none when
 * `server.accessLog` is false.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { UNMATCHED_ROUTE } from '../../src/http/access-log'
import { capturingLogger } from '../helpers/logger'
import { createProjectFixture, type ProjectFixture } from '../helpers/project-fixture'
import { startTestService, type TestService } from '../helpers/service'

interface Line {
  level: string
  message: string
  fields: Record<string, unknown>
}

const PLUGINS = ['auth', 'teams', 'projects', 'work-items']
const lines: Line[] = []
let api: TestService
let fx: ProjectFixture

beforeAll(async () => {
  api = await startTestService({ plugins: PLUGINS, log: capturingLogger(lines, { fields: true }) })
  fx = await createProjectFixture(api)
})
afterAll(() => api.stop())

/** The access-log lines written while `run` ran. */
async function logged(run: () => Promise<unknown>): Promise<Line[]> {
  const from = lines.length
  await run()
  return lines.slice(from).filter((line) => line.message === 'request')
}

describe('access log', () => {
  test('a 200 on a route with parameters logs its pattern, not the path with the ids', async () => {
    let requestId: string | null = null
    const written = await logged(async () => {
      const response = await fx.call('owner', 'GET', `/api/v1/projects/${fx.projectId}/work-items`)
      expect(response.status).toBe(200)
      requestId = response.headers.get('x-request-id')
    })
    expect(written).toHaveLength(1)
    const [line] = written as [Line]
    expect(line.level).toBe('info')
    expect(line.fields).toEqual({ requestId, method: 'GET', route: '/api/v1/projects/:projectId/work-items', status: 200, durationMs: expect.any(Number) })
    expect(line.fields.durationMs as number).toBeGreaterThanOrEqual(0)
    expect(JSON.stringify(line)).not.toContain(fx.projectId)
  })

  test('an unknown path is logged as the fixed placeholder, whatever it says', async () => {
    const hostile = `/api/v1/${'x'.repeat(300)}/%22%0a%7B"injected":1}`
    const written = await logged(async () => {
      expect((await api.request('GET', hostile)).status).toBe(404)
    })
    expect(written).toHaveLength(1)
    expect(written[0]!.fields).toMatchObject({ method: 'GET', route: UNMATCHED_ROUTE, status: 404, requestId: expect.any(String) })
    expect(JSON.stringify(written)).not.toContain('injected')
  })

  test('a refused body is logged with its route and 400', async () => {
    const written = await logged(async () => {
      expect((await fx.call('owner', 'POST', '/api/v1/projects', { name: 42 })).status).toBe(400)
    })
    expect(written.map((line) => line.fields)).toEqual([{ requestId: expect.any(String), method: 'POST', route: '/api/v1/projects', status: 400, durationMs: expect.any(Number) }])
  })

  test('the request id is the one the client sent, when well formed', async () => {
    const written = await logged(() => api.request('GET', '/health', { headers: { 'x-request-id': 'trace-0123456789' } }))
    expect(written.map((line) => line.fields)).toEqual([{ requestId: 'trace-0123456789', method: 'GET', route: '/health', status: 200, durationMs: expect.any(Number) }])
  })

  test('server.accessLog false writes no line', async () => {
    const quiet: Line[] = []
    const off = await startTestService({ plugins: ['auth'], log: capturingLogger(quiet, { fields: true }), config: { server: { accessLog: false } } })
    try {
      expect((await off.request('GET', '/health')).status).toBe(200)
      expect((await off.request('GET', '/no/such/route')).status).toBe(404)
      expect(quiet.filter((line) => line.message === 'request')).toEqual([])
    } finally {
      await off.stop()
    }
  })
})
