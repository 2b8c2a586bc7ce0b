/**
 * Requests are routed by their path whatever their Host header says: Elysia finds the
 * path at the first "/" after the 11th character of the URL, so a one-letter Host shifted the
 * path (`Host: x` + `/aaaa/api/v1/users/me` was served as `/api/v1/users/me`), past any path
 * rule at a proxy.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { connect } from 'node:net'
import { listen, type Listening } from '../helpers/http'
import { startTestService, type TestService } from '../helpers/service'

let api: TestService
let http: Listening
let key: string

beforeAll(async () => {
  api = await startTestService()
  http = listen(api)
  const organization = await api.createOrganization()
  key = (await api.createKey((await api.createUser(organization)).id, ['users:read'])).secret
})
afterAll(async () => {
  http.stop()
  await api.stop()
})

/** One raw HTTP/1.1 request over a socket (no client library normalises it); returns the status line's code and the body. */
function raw(path: string, host: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const socket = connect(http.port, '127.0.0.1', () => {
      socket.write(`GET ${path} HTTP/1.1\r\nHost: ${host}\r\nAuthorization: Bearer ${key}\r\nConnection: close\r\n\r\n`)
    })
    let text = ''
    socket.on('data', (chunk) => (text += chunk.toString('utf8')))
    socket.on('end', () => resolve({ status: Number(/^HTTP\/1\.1 (\d{3})/.exec(text)?.[1]), body: text.slice(text.indexOf('\r\n\r\n') + 4) }))
    socket.on('error', reject)
  })
}

describe('routing ignores the Host header', () => {
  test.each(['x', 'a:1', 'ab', 'abc', 'localhost', '127.0.0.1:1'])('Host %p: /aaaa/api/v1/users/me is 404, /api/v1/users/me is 200', async (host) => {
    const shifted = await raw('/aaaa/api/v1/users/me', host)
    expect(shifted.status).toBe(404)
    const direct = await raw('/api/v1/users/me', host)
    expect(direct.status).toBe(200)
  })

  test('the same through the service handler with a short host in the URL', async () => {
    const shifted = await api.service.fetch(new Request('http://x/aaaa/api/v1/users/me', { headers: { authorization: `Bearer ${key}` } }))
    expect(shifted.status).toBe(404)
    const https = await api.service.fetch(new Request('https://y/bb/api/v1/users/me?x=1', { headers: { authorization: `Bearer ${key}` } }))
    expect(https.status).toBe(404)
    const direct = await api.service.fetch(new Request('http://x/api/v1/users/me?page=0', { headers: { authorization: `Bearer ${key}` } }))
    expect(direct.status).toBe(200)
  })
})
