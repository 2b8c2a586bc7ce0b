/**
 * `push.sender: "log"`, for development without Firebase: a message's pushes are recorded sent and
 * each is printed to the service log (the real JSON logger on stderr) as the FCM message FCM would
 * receive; credentials are not read. Without credentials (and no log sender) start-up names the setting.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { LOG_SENDER_LINE } from '../../plugins/push/log-sender'
import { createLogger } from '../../src/log'
import { createDisplayFixture, type DisplayFixture } from '../helpers/display-fixture'
import { eventually, startTestService, type TestService, type TestUser } from '../helpers/service'
import { signIn } from '../helpers/sessions'
import { capturingLogger } from '../helpers/logger'

/** The service's JSON log lines written to stderr while capturing (anything else passes through). */
function captureLogLines() {
  const original = process.stderr.write
  const lines: Array<Record<string, any>> = []
  process.stderr.write = function (chunk: string | Uint8Array, ...rest: unknown[]) {
    const text = typeof chunk === 'string' ? chunk : Buffer.from(chunk).toString('utf8')
    if (!text.startsWith('{"time"')) return (original as (...args: unknown[]) => boolean).call(process.stderr, chunk, ...rest)
    for (const line of text.split('\n')) if (line) lines.push(JSON.parse(line))
    return true
  } as typeof process.stderr.write
  return { lines, restore: () => void (process.stderr.write = original) }
}

describe('push.sender "log"', () => {
  let api: TestService
  let fx: DisplayFixture
  let capture: ReturnType<typeof captureLogLines>

  beforeAll(async () => {
    capture = captureLogLines()
    api = await startTestService({
      // The real logger at info (tests are otherwise silent): what a developer's terminal shows.
      log: createLogger('info'),
      // A credentials file that does not exist: the log sender never reads one.
      config: { server: { accessLog: false }, push: { sender: 'log', pollIntervalMs: 50, credentialsFile: '/nonexistent/service-account.json' } },
    })
    fx = await createDisplayFixture(api)
  })
  afterAll(async () => {
    await api?.stop()
    capture.restore()
  })

  async function register(user: TestUser, token: string, platform: string) {
    const session = await signIn(api, user)
    const device = await api.request('POST', '/api/devices', { body: { token, platform }, headers: { authorization: `Bearer ${session}` } })
    expect(device.status).toBe(201)
  }

  test('start-up says the log sender is on, and gives no credentials warning', () => {
    const push = capture.lines.filter((line) => line.plugin === 'push')
    expect(push.map((line) => [line.level, line.message])).toContainEqual(['info', 'push: push.sender is "log": each push is written to this log as its FCM message and recorded sent; nothing goes to FCM'])
    expect(push.filter((line) => line.level === 'warn')).toEqual([])
  })

  test('a message is recorded sent for every device, and each FCM message is printed to the service log', async () => {
    const tokens = { reader: `reader-log:APA91b${crypto.randomUUID()}`, creator: `creator-log:APA91b${crypto.randomUUID()}` }
    await register(fx.reader, tokens.reader, 'android')
    await register(fx.creator, tokens.creator, 'ios')

    const sent = await api.request('POST', '/api/message', { body: { apiKey: fx.creator.displayApiKey, pageName: fx.pageName, message: 'Backup finished on db-2 ✅' } })
    expect(sent.status).toBe(200)
    const messageId = sent.headers.get('x-message-id')!

    const report = await eventually(async () => {
      const answer = await api.request('GET', `/api/v1/pages/${fx.pageId}/messages/${messageId}`, { key: fx.creatorKey })
      expect(answer.status).toBe(200)
      expect(answer.body.data.sent).toBe(2)
      return answer.body.data
    }, 10_000)
    expect(report).toMatchObject({ targeted: 2, sent: 2, failed: 0, pruned: 0, pending: 0, undelivered: 0 })

    // The same message the FCM sender hands firebase-admin (tests/plugins/push.test.ts checks it on the wire).
    const logged = await eventually(async () => {
      const lines = capture.lines.filter((line) => line.message === LOG_SENDER_LINE && line.fcmMessage?.data?.messageId === messageId)
      expect(lines).toHaveLength(2)
      return lines
    }, 5_000)
    for (const token of Object.values(tokens)) {
      const line = logged.find((each) => each.fcmMessage.token === token)!
      expect(line).toMatchObject({ level: 'info', plugin: 'push' })
      expect(line.fcmMessage).toEqual({
        token,
        notification: { title: fx.pageName, body: 'Backup finished on db-2 ✅' },
        data: { pageName: fx.pageName, messageId, sentAt: report.createdAt },
        android: { priority: 'high' },
        apns: { headers: { 'apns-priority': '10', 'apns-push-type': 'alert' }, payload: { aps: { sound: 'default' } } },
        webpush: { headers: { Urgency: 'high' } },
      })
    }
  })
})

describe('the sender setting', () => {
  test('without credentials, the start-up warning points at push.sender "log"', async () => {
    const lines: Array<{ level: string; message: string }> = []
    const api = await startTestService({ log: capturingLogger(lines) })
    await api.stop()
    const warnings = lines.filter((line) => line.level === 'warn' && line.message.includes('no FCM credentials'))
    expect(warnings).toHaveLength(1)
    expect(warnings[0]!.message).toContain('push.sender: "log"')
  })

  test('a sender other than "fcm" or "log" refuses start-up, naming the setting', async () => {
    await expect(startTestService({ config: { push: { sender: 'smtp' } } })).rejects.toThrow('config push.sender')
  })
})
