/**
 * The push sender's configuration: without credentials it is off (said once at start, messages
 * recorded as undelivered); credentials from a file switch it on; a broken file refuses start-up;
 * devices unseen for the retention period are removed.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { execFileSync } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { pruneStaleDevices } from '../../plugins/push/outbox'
import { queryText } from '../../src/db'
import { createDisplayFixture, type DisplayFixture } from '../helpers/display-fixture'
import { startTestService, type TestService } from '../helpers/service'
import { capturingLogger } from '../helpers/logger'

const scratch = mkdtempSync(join(tmpdir(), 'worktrack-push-config-'))
afterAll(() => rmSync(scratch, { recursive: true, force: true }))

/** A service-account file as Google issues them (with a freshly made key; nothing is ever signed here). */
function serviceAccountFile(): string {
  const keyFile = join(scratch, 'key.pem')
  execFileSync('openssl', ['genpkey', '-algorithm', 'RSA', '-pkeyopt', 'rsa_keygen_bits:2048', '-out', keyFile], { stdio: 'pipe' })
  const file = join(scratch, 'service-account.json')
  writeFileSync(
    file,
    JSON.stringify({
      type: 'service_account',
      project_id: 'demo-project',
      private_key_id: 'test',
      private_key: readFileSync(keyFile, 'utf8'),
      client_email: 'push@demo-project.iam.gserviceaccount.com',
      client_id: '1',
      token_uri: 'https://oauth2.googleapis.com/token',
    }),
  )
  return file
}

describe('start-up', () => {
  const mentionsFcm = (lines: Array<{ level: string; message: string }>) => lines.filter((line) => line.message.includes('FCM'))

  test('without credentials the sender is off and start-up says so in one line', async () => {
    const lines: Array<{ level: string; message: string }> = []
    const api = await startTestService({ log: capturingLogger(lines) })
    await api.stop()
    expect(mentionsFcm(lines)).toEqual([
      { level: 'warn', message: 'push: no FCM credentials (GOOGLE_APPLICATION_CREDENTIALS or push.credentialsFile); the sender is off and messages are recorded as undelivered (to see pushes without Firebase, set push.sender: "log")' },
    ])
  })

  test('credentials from GOOGLE_APPLICATION_CREDENTIALS or push.credentialsFile switch the sender on', async () => {
    const file = serviceAccountFile()
    for (const setting of [{ env: file }, { config: file }]) {
      const lines: Array<{ level: string; message: string }> = []
      const saved = process.env.GOOGLE_APPLICATION_CREDENTIALS
      if (setting.env) process.env.GOOGLE_APPLICATION_CREDENTIALS = setting.env
      try {
        const api = await startTestService({
          log: capturingLogger(lines),
          // No worker: nothing may try to reach Google from a test.
          config: { push: { workers: false, ...(setting.config ? { credentialsFile: setting.config } : {}) } },
        })
        const fx = await createDisplayFixture(api)
        const device = await api.request('POST', '/api/devices', { body: { token: 'on-1', platform: 'web' }, headers: { authorization: `Bearer ${fx.readerSession}` } })
        const sent = await api.request('POST', '/api/message', { body: { apiKey: fx.creator.displayApiKey, pageName: fx.pageName, message: 'queued' } })
        const report = await api.request('GET', `/api/v1/pages/${fx.pageId}/messages/${sent.headers.get('x-message-id')}`, { key: fx.creatorKey })
        await api.stop()
        expect(device.status).toBe(201)
        expect(report.body.data).toMatchObject({ targeted: 1, pending: 1, undelivered: 0 })
        expect(mentionsFcm(lines)).toEqual([])
      } finally {
        if (saved === undefined) delete process.env.GOOGLE_APPLICATION_CREDENTIALS
        else process.env.GOOGLE_APPLICATION_CREDENTIALS = saved
      }
    }
  })

  test('an unreadable credentials file refuses start-up, naming it', async () => {
    const broken = join(scratch, 'broken.json')
    writeFileSync(broken, '{"type": "service_account"')
    await expect(startTestService({ config: { push: { credentialsFile: broken } } })).rejects.toThrow(`push: cannot use the FCM credentials in ${broken}: `)
  })
})

describe('sender off', () => {
  let api: TestService
  let fx: DisplayFixture
  beforeAll(async () => {
    api = await startTestService()
    fx = await createDisplayFixture(api)
  })
  afterAll(() => api.stop())

  test('messages are accepted and their deliveries recorded as undelivered', async () => {
    const device = await api.request('POST', '/api/devices', { body: { token: 'off-1', platform: 'android' }, headers: { authorization: `Bearer ${fx.readerSession}` } })
    expect(device.status).toBe(201)
    const sent = await api.request('POST', '/api/message', { body: { apiKey: fx.creator.displayApiKey, pageName: fx.pageName, message: 'nobody hears this' } })
    expect(sent.status).toBe(200)
    const report = await api.request('GET', `/api/v1/pages/${fx.pageId}/messages/${sent.headers.get('x-message-id')}`, { key: fx.creatorKey })
    expect(report.body.data).toMatchObject({ targeted: 1, undelivered: 1, pending: 0, sent: 0 })
  })

  test('devices unseen for the retention period are removed; recent ones stay', async () => {
    const db = api.service.core.db
    const [user] = await queryText<{ id: string; organizationId: string }>(db, `select id, organization_id as "organizationId" from users where id = $1`, [fx.reader.id])
    await queryText(
      db,
      `insert into devices (token, user_id, organization_id, platform, last_seen_at) values
        ('stale', $1, $2, 'ios', now() - interval '271 days'), ('recent', $1, $2, 'ios', now() - interval '269 days')`,
      [user!.id, user!.organizationId],
    )
    expect(await pruneStaleDevices(db, 270)).toBe(1)
    const left = await queryText<{ token: string }>(db, `select token from devices where token in ('stale', 'recent')`, [])
    expect(left.map((row) => row.token)).toEqual(['recent'])
  })
})
