/**
 * Nothing is lost when a process dies mid-send: a worker process is killed (SIGKILL) with one
 * batch in flight at FCM and more deliveries pending; another instance then delivers every one,
 * each accepted by FCM exactly once.
 */
import { afterAll, expect, test } from 'bun:test'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { openDatabase } from '../../src/db'
import { createDisplayFixture } from '../helpers/display-fixture'
import { createTestDatabase, pgliteTemplate, usingServer, type TestDatabase, timeLimit } from '../helpers/database'
import { startFakeFcm, type Responder } from '../helpers/fake-fcm'
import { eventually, startTestService } from '../helpers/service'

const DEVICES = 30
const BATCH = 10
const scratch = mkdtempSync(join(tmpdir(), 'worktrack-push-restart-'))
afterAll(() => rmSync(scratch, { recursive: true, force: true }))

/** The server database of this file, or an embedded one in a directory a second process can open. */
async function openShared(): Promise<TestDatabase> {
  if (usingServer()) return createTestDatabase()
  const url = `pglite:${join(scratch, 'db')}`
  return { ...(await openDatabase(url, { loadDataDir: await pgliteTemplate() })), url }
}
const reopen = async (database: TestDatabase): Promise<TestDatabase> =>
  usingServer() ? database : { ...(await openDatabase(database.url)), url: database.url }

test('a worker killed with deliveries in flight and pending: after restart each is delivered exactly once', async () => {
  let responder: Responder = () => 'stall'
  const fcm = await startFakeFcm((token, attempt) => responder(token, attempt), { redirect: true })
  // One reader holds every device here: the per-user bound is raised to fit them.
  const push = { pollIntervalMs: 50, batchSize: BATCH, concurrency: 1, leaseSeconds: 2, maxDevicesPerUser: DEVICES }
  const provide = fcm.provide
  let database = await openShared()
  try {
    // Instance A takes the message but runs no workers: every delivery stays pending.
    const a = await startTestService({ database, provide, config: { push: { ...push, workers: false } } })
    const fx = await createDisplayFixture(a)
    const tokens = Array.from({ length: DEVICES }, (_, i) => `restart-${i}:APA91b${Math.random().toString(36).slice(2)}`)
    for (const token of tokens)
      expect((await a.request('POST', '/api/devices', { body: { token, platform: 'android' }, headers: { authorization: `Bearer ${fx.readerSession}` } })).status).toBe(201)
    const sent = await a.request('POST', '/api/message', { body: { apiKey: fx.creator.displayApiKey, pageName: fx.pageName, message: 'survive a crash' } })
    expect(sent.status).toBe(200)
    const messageId = sent.headers.get('x-message-id')!
    await a.stop()
    if (!usingServer()) await database.close()

    // Process B claims one batch and sends it; FCM never answers; B is killed mid-send.
    const caFile = join(scratch, 'ca.pem')
    writeFileSync(caFile, fcm.ca)
    const b = Bun.spawn([process.execPath, 'tests/helpers/push-worker.ts'], {
      env: { ...process.env, DATABASE_URL: database.url, FAKE_FCM_PORT: String(fcm.port), FAKE_FCM_CA: caFile, PUSH_CONFIG: JSON.stringify(push), LOG_LEVEL: 'error' },
      stdout: 'ignore',
      stderr: 'inherit',
    })
    await eventually(async () => expect(fcm.sends.length).toBe(BATCH), 20_000)
    b.kill('SIGKILL')
    await b.exited
    const inFlight = fcm.sends.map((send) => send.token)
    expect(fcm.delivered()).toHaveLength(0)
    fcm.releaseStalled()

    // Instance C, on the same database, finds the pending rows and, after the lease, the in-flight ones.
    responder = () => undefined
    database = await reopen(database)
    const c = await startTestService({ database, provide, config: { push } })
    try {
      const report = async () => (await c.request('GET', `/api/v1/pages/${fx.pageId}/messages/${messageId}`, { key: fx.creatorKey })).body.data
      const done = await eventually(async () => {
        const current = await report()
        expect(current.sent).toBe(DEVICES)
        return current
      }, 20_000)
      expect(done).toMatchObject({ targeted: DEVICES, sent: DEVICES, pending: 0, failed: 0 })
      const accepted = fcm.delivered().map((send) => send.token)
      expect(accepted.sort()).toEqual([...tokens].sort())
      // The batch in flight when B died was sent again (FCM never accepted it the first time).
      for (const token of inFlight) expect(fcm.sends.filter((send) => send.token === token)).toHaveLength(2)
    } finally {
      await c.stop()
    }
  } finally {
    await database.close()
    await fcm.close()
  }
}, timeLimit(60_000))
