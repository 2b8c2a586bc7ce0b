import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import type { LiveStreams } from '../../plugins/display/live/streams'
import { createDisplayFixture, SAMPLE_DATA, type DisplayFixture } from '../helpers/display-fixture'
import { listen, type Listening } from '../helpers/http'
import { startTestService, type TestService } from '../helpers/service'
import { webSession } from '../helpers/sessions'

let a: TestService
let b: TestService
let bHttp: Listening
let fx: DisplayFixture
let cookie: string

beforeAll(async () => {
  a = await startTestService()
  b = await startTestService({ database: a.database })
  bHttp = listen(b)
  fx = await createDisplayFixture(a)
  cookie = (await webSession(a, fx.reader, { displayName: 'Reader' })).cookie
})
afterAll(async () => {
  bHttp.stop()
  await b.stop()
  await a.stop()
})

/**
 * Reads server-sent events from `response` until `predicate` matches one, or the time is up;
 * `onConnected` runs when the stream says it is registered for the page's events (`: connected`).
 */
async function nextEvent(response: Response, predicate: (event: { event: string; data: any }) => boolean, timeoutMs = 3000, onConnected = () => {}) {
  const reader = response.body!.getReader()
  const decoder = new TextDecoder()
  let buffer = ''
  const deadline = Date.now() + timeoutMs
  try {
    while (Date.now() < deadline) {
      const chunk = await Promise.race([reader.read(), Bun.sleep(deadline - Date.now()).then(() => null)])
      if (!chunk || chunk.done) break
      buffer += decoder.decode(chunk.value, { stream: true })
      let end: number
      while ((end = buffer.indexOf('\n\n')) >= 0) {
        const block = buffer.slice(0, end)
        buffer = buffer.slice(end + 2)
        if (/^: connected$/m.test(block)) onConnected()
        const event = /^event: (.*)$/m.exec(block)?.[1]
        const data = /^data: (.*)$/m.exec(block)?.[1]
        if (event && data) {
          const parsed = { event, data: JSON.parse(data) }
          if (predicate(parsed)) return parsed
        }
      }
    }
    return null
  } finally {
    await reader.cancel().catch(() => {})
  }
}

describe('live dashboard events', () => {
  test('an update accepted by instance A reaches a viewer streaming from instance B within a second', async () => {
    const stream = await fetch(`${bHttp.url}/pages/${fx.pageName}/events`, { headers: { cookie } })
    expect(stream.status).toBe(200)
    expect(stream.headers.get('content-type')).toStartWith('text/event-stream')
    const started = Date.now()
    const connected = Promise.withResolvers<void>()
    const waiting = nextEvent(stream, (event) => event.event === 'component' && event.data.id === fx.components.barChart, 3000, connected.resolve)
    await Promise.race([connected.promise, waiting])
    const posted = await a.request('POST', '/api/component', {
      body: { componentId: fx.components.barChart, apiKey: fx.creator.displayApiKey, timestamp: 2_000_000_000, data: SAMPLE_DATA.barChart },
    })
    expect(posted.status).toBe(200)
    const event = await waiting
    expect(event).not.toBeNull()
    expect(Date.now() - started).toBeLessThan(1500)
    expect(event!.data.data).toEqual(SAMPLE_DATA.barChart)
    expect(event!.data.html).toContain('fill="#7c3aed"')
  })

  test('the stream and the page need a session that may see the page', async () => {
    expect((await fetch(`${bHttp.url}/pages/${fx.pageName}/events`)).status).toBe(401)
    const page = await fetch(`${bHttp.url}/pages/${fx.pageName}`, { redirect: 'manual' })
    expect(page.status).toBe(303)
    expect(page.headers.get('location')).toBe(`/account/sign-in?next=${encodeURIComponent(`/pages/${fx.pageName}`)}`)
    const outsider = await webSession(a, fx.outsider, { displayName: 'Outsider' })
    expect((await fetch(`${bHttp.url}/pages/${fx.pageName}`, { headers: { cookie: `wt_session=${outsider.token}` } })).status).toBe(404)
    expect((await fetch(`${bHttp.url}/pages/${fx.pageName}/events`, { headers: { cookie: `wt_session=${outsider.token}` } })).status).toBe(404)
  })

  // Found by the fuzz suite: HEAD never answered (the stream's body never ends).
  test("HEAD on the events stream answers with the stream's headers at once and opens no stream; it still needs the session", async () => {
    const streamsOf = (service: TestService) => (service.service.contextOf('display').bound as { streams: LiveStreams }).streams
    const [streams, streamsOfA] = [streamsOf(b), streamsOf(a)]
    const before = streams.size + streamsOfA.size
    const head = await a.service.fetch(new Request(`http://localhost/pages/${fx.pageName}/events`, { method: 'HEAD', headers: { cookie } }))
    expect(head.status).toBe(200)
    expect(head.headers.get('content-type')).toStartWith('text/event-stream')
    expect(await head.text()).toBe('')
    expect(streams.size + streamsOfA.size).toBe(before)
    const overSocket = await fetch(`${bHttp.url}/pages/${fx.pageName}/events`, { method: 'HEAD', headers: { cookie }, signal: AbortSignal.timeout(5000) })
    expect(overSocket.status).toBe(200)
    expect(streams.size + streamsOfA.size).toBe(before)
    expect((await a.service.fetch(new Request(`http://localhost/pages/${fx.pageName}/events`, { method: 'HEAD' }))).status).toBe(401)
  })

  // Found by the fuzz suite: both answered 500.
  test('a session cookie that is not percent-encoding is no session, and a page name with U+0000 is no page', async () => {
    const page = await fetch(`${bHttp.url}/pages/${fx.pageName}`, { redirect: 'manual', headers: { cookie: 'wt_session=%ZZ' } })
    expect(page.status).toBe(303)
    expect((await fetch(`${bHttp.url}/pages/${fx.pageName}/events`, { headers: { cookie: 'wt_session=%ZZ; wt_session=x' } })).status).toBe(401)
    const nul = await fetch(`${bHttp.url}/api/pages/%00`, { headers: { authorization: `Bearer ${fx.readerSession}` } })
    expect(nul.status).toBe(404)
    expect((await nul.json()).message).toBe('pageNotFound')
    expect((await fetch(`${bHttp.url}/pages/a%00b`, { headers: { cookie } })).status).toBe(404)
  })
})
