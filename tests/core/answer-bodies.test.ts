/**
 * Long answers leave as a stream of one chunk (src/http/answer.ts `answerBody`): Bun.serve writes
 * an answer completed after an `await` without corking the socket, and a long string body then
 * costs ~15× the kernel time of a stream body (bench/RESULTS.md, "Answer bodies"). What a client
 * reads is the same: the status, the headers the route set, the body byte for byte; only
 * Content-Length gives way to chunked transfer. Short answers are unchanged. The Node entry's bridge
 * sends such an answer whole, with its Content-Length.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { answerBody, answerResponse, STREAMED_BODY_BYTES } from '../../src/http/answer'
import { nodeListener } from '../../src/http/node-server'
import { listen, type Listening } from '../helpers/http'
import { connectMcp } from '../helpers/mcp'
import { createProjectFixture, type ProjectFixture } from '../helpers/project-fixture'
import { startTestService, type TestService } from '../helpers/service'

describe('answerBody', () => {
  test('text under the bound (in UTF-8 bytes) is the text itself; from the bound on, a Response of one chunk with the status, byte for byte', async () => {
    const short = 'a'.repeat(STREAMED_BODY_BYTES - 1)
    expect(answerBody(short)).toBe(short)
    // Fewer characters than the bound, as many bytes: measured in bytes.
    const accented = 'é'.repeat(STREAMED_BODY_BYTES / 2)
    expect(answerBody(accented)).toBeInstanceOf(Response)
    const long = `{"data":"${'é€😀'.repeat(STREAMED_BODY_BYTES)}"}`
    const answer = answerBody(long, 201) as Response
    expect(answer).toBeInstanceOf(Response)
    expect(answer.status).toBe(201)
    expect(answer.headers.get('content-length')).toBeNull()
    const reader = answer.body!.getReader()
    const first = await reader.read()
    expect(new TextDecoder().decode(first.value)).toBe(long)
    expect((await reader.read()).done).toBe(true)
    expect((answerBody(long, 'Created') as Response).status).toBe(200)
  })

  test('answerResponse streams a long JSON Response built elsewhere with its status and headers, and leaves anything else as it is', async () => {
    const long = JSON.stringify({ items: 'x'.repeat(STREAMED_BODY_BYTES) })
    const built = new Response(long, { status: 202, headers: { 'content-type': 'application/json', 'content-length': String(long.length), 'mcp-session-id': 'a' } })
    const streamed = await answerResponse(built)
    expect(streamed.status).toBe(202)
    expect(streamed.headers.get('mcp-session-id')).toBe('a')
    expect(streamed.headers.get('content-length')).toBeNull()
    expect(await streamed.text()).toBe(long)
    const short = await answerResponse(new Response('{"a":1}', { status: 200, headers: { 'content-type': 'application/json', 'x-kept': '1' } }))
    expect([short.status, short.headers.get('x-kept'), await short.text()]).toEqual([200, '1', '{"a":1}'])
    const html = new Response('<p>'.repeat(STREAMED_BODY_BYTES), { headers: { 'content-type': 'text/html' } })
    expect(await answerResponse(html)).toBe(html)
  })
})

describe('over a socket (Bun.serve, as the Bun entry serves)', () => {
  let api: TestService
  let site: Listening
  let fx: ProjectFixture
  beforeAll(async () => {
    api = await startTestService()
    site = listen(api)
    fx = await createProjectFixture(api)
  })
  afterAll(async () => {
    site?.stop()
    await api?.stop()
  })

  const get = (path: string, key = fx.keys.owner) => fetch(`${site.url}${path}`, { headers: { authorization: `Bearer ${key}` } })
  /** The answer without its request id (which differs per answer). */
  const withoutRequestId = (text: string) => text.replace(/"requestId":"[^"]+"/, '"requestId":"…"')

  test('a long list page is chunked, with its ETag, Link and request id, and the same body as in-process; a short one keeps Content-Length', async () => {
    const created = await fx.as('owner', 'POST', `/api/v1/projects/${fx.projectId}/work-items/bulk`, {
      items: Array.from({ length: 60 }, (_, i) => ({ title: `Item ${i} ${'of a long title '.repeat(4)}`, description: 'd'.repeat(300) })),
    })
    expect(created.length ?? created.items?.length).toBeGreaterThan(0)
    const path = `/api/v1/projects/${fx.projectId}/work-items?size=100`
    for (const round of ['first read (loads the page)', 'second read (the cached page)']) {
      const answer = await get(path)
      expect(answer.status, round).toBe(200)
      expect(answer.headers.get('transfer-encoding'), round).toBe('chunked')
      expect(answer.headers.get('content-length'), round).toBeNull()
      expect(answer.headers.get('content-type'), round).toBe('application/json')
      expect(answer.headers.get('etag'), round).toStartWith('W/"l')
      expect(answer.headers.get('link'), round).toContain('rel="first"')
      const text = await answer.text()
      expect(text.length).toBeGreaterThan(STREAMED_BODY_BYTES)
      expect(JSON.parse(text).meta.requestId).toBe(answer.headers.get('x-request-id')!)
      const inProcess = await api.request('GET', path, { key: fx.keys.owner })
      expect(withoutRequestId(text)).toBe(withoutRequestId(inProcess.text))
      expect(JSON.parse(text).data).toHaveLength(60)
    }
    const short = await get(`/api/v1/projects/${fx.projectId}/work-items?size=1`)
    expect(short.headers.get('content-length')).toBe(String(Buffer.byteLength(await short.text())))
    // A 304 for the long page's ETag still has no body.
    const etag = (await get(path)).headers.get('etag')!
    const notModified = await fetch(`${site.url}${path}`, { headers: { authorization: `Bearer ${fx.keys.owner}`, 'if-none-match': etag } })
    expect([notModified.status, await notModified.text()]).toEqual([304, ''])
  })

  test('a long 201 keeps its status and Location; a long MCP answer arrives whole through the SDK client', async () => {
    const description = 'A description long enough to make the answer long. '.repeat(300)
    const response = await fetch(`${site.url}/api/v1/projects/${fx.projectId}/work-items`, {
      method: 'POST',
      headers: { authorization: `Bearer ${fx.keys.owner}`, 'content-type': 'application/json' },
      body: JSON.stringify({ title: 'Long', description }),
    })
    expect(response.status).toBe(201)
    expect(response.headers.get('transfer-encoding')).toBe('chunked')
    const body = await response.json()
    expect(response.headers.get('location')).toBe(`/api/v1/projects/${fx.projectId}/work-items/${body.data.id}`)
    expect(body.data.description).toBe(description)
    const client = await connectMcp(site.url, fx.keys.owner)
    try {
      const listed = await client.callTool({ name: 'list_work_items', arguments: { projectId: fx.projectId, size: 100 } })
      const text = (listed.content as Array<{ text: string }>)[0]!.text
      expect(text.length).toBeGreaterThan(STREAMED_BODY_BYTES)
      // Whole: every work item the REST list shows, in its order, the long description intact.
      const rest = await api.request('GET', `/api/v1/projects/${fx.projectId}/work-items?size=100`, { key: fx.keys.owner })
      const { items } = JSON.parse(text) as { items: Array<{ id: string }> }
      expect(items.map((item) => item.id)).toEqual(rest.body.data.map((item: { id: string }) => item.id))
      expect(text).toContain(description)
    } finally {
      await client.close()
    }
  })
})

describe('through the Node entry\'s bridge (src/http/node-server.ts, here on Bun\'s node:http)', () => {
  test('a long answer that is a stream of one chunk is sent whole, with its Content-Length and ETag', async () => {
    const api = await startTestService()
    const server = createServer(nodeListener((request, client) => api.service.fetch(request, client)))
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    const { port } = server.address() as AddressInfo
    try {
      const fx = await createProjectFixture(api)
      await fx.as('owner', 'POST', `/api/v1/projects/${fx.projectId}/work-items/bulk`, { items: Array.from({ length: 40 }, (_, i) => ({ title: `Item ${i}`, description: 'n'.repeat(300) })) })
      const answer = await fetch(`http://127.0.0.1:${port}/api/v1/projects/${fx.projectId}/work-items?size=100`, { headers: { authorization: `Bearer ${fx.keys.owner}` } })
      const text = await answer.text()
      expect(answer.status).toBe(200)
      expect(text.length).toBeGreaterThan(STREAMED_BODY_BYTES)
      expect(answer.headers.get('content-length')).toBe(String(Buffer.byteLength(text)))
      expect(answer.headers.get('etag')).toStartWith('W/"l')
      expect(JSON.parse(text).data).toHaveLength(40)
    } finally {
      await new Promise((resolve) => server.close(resolve))
      await api.stop()
    }
  })
})

