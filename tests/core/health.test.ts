import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { sql } from 'drizzle-orm'
import { startTestService, type TestService } from '../helpers/service'

let api: TestService

beforeAll(async () => {
  api = await startTestService({ plugins: ['auth'] })
})
afterAll(() => api.stop())

describe('operations endpoints', () => {
  test('/health answers while the process is up', async () => {
    const response = await api.request('GET', '/health')
    expect(response.status).toBe(200)
    expect(response.body).toEqual({ status: 'ok' })
  })

  test('/ready checks the database and the migrations', async () => {
    const ready = await api.request('GET', '/ready')
    expect(ready.status).toBe(200)
    expect(ready.body).toEqual({ status: 'ready', database: api.database.kind })
  })

  test('/ready is 503 when the migrations are not all applied', async () => {
    const fresh = await startTestService({ plugins: ['auth'] })
    try {
      // Forget the bookkeeping: the service must notice rather than trust its start-up.
      await fresh.service.core.db.execute(sql`delete from drizzle.__drizzle_migrations`)
      const notReady = await fresh.request('GET', '/ready')
      expect(notReady.status).toBe(503)
      expect(notReady.body).toEqual({ status: 'not ready', database: fresh.database.kind })
      expect((await fresh.request('GET', '/health')).status).toBe(200)
    } finally {
      await fresh.stop()
    }
  })
})
