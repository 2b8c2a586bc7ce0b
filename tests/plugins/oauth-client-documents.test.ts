/**
 * Client ID metadata documents: a client may name itself by an https URL whose JSON gives its
 * name and redirect URIs. The document is read through the public-address guard (a loopback
 * server is refused unless auth.oauth.allowPrivateDocuments), within its size and time bounds,
 * without following redirects, and must name itself as client_id; it is remembered in memory, and
 * written only when a user approves its client.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { createServer, type Server } from 'node:https'
import { ClientDocumentAgentRef } from '../../plugins/auth/api'
import { queryText } from '../../src/db'
import { certificates } from '../helpers/fake-fcm'
import { authorizeQuery, browse, consent, pkcePair, REDIRECT, tokenRequest } from '../helpers/oauth'
import { startTestService, type TestService, type TestServiceOptions } from '../helpers/service'
import { webSession } from '../helpers/sessions'

let api: TestService
let guarded: TestService
let server: Server
let base: string
let cookie: string
/** What the document server answers, by path. */
const documents = new Map<string, { status?: number; body: string; headers?: Record<string, string>; hang?: boolean }>()

beforeAll(async () => {
  const tls = certificates()
  server = createServer({ key: tls.key, cert: tls.cert }, (request, response) => {
    const answer = documents.get(request.url ?? '')
    if (!answer) return void response.writeHead(404).end()
    if (answer.hang) return void response.writeHead(200, { 'content-type': 'application/json' }).write('{')
    response.writeHead(answer.status ?? 200, { 'content-type': 'application/json', ...answer.headers }).end(answer.body)
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  base = `https://127.0.0.1:${(server.address() as { port: number }).port}`
  const provide: TestServiceOptions['provide'] = (services) => services.provide(ClientDocumentAgentRef, { ca: tls.ca })
  api = await startTestService({ config: { auth: { oauth: { allowPrivateDocuments: true, documentMaxBytes: 2048, documentTimeoutMs: 1000 } } }, provide })
  guarded = await startTestService({ database: api.database, provide })
  const organization = await api.createOrganization()
  cookie = (await webSession(api, await api.createUser(organization))).cookie
})
afterAll(async () => {
  await guarded.stop()
  await api.stop()
  server.close()
})

const describeAt = (path: string, document: Record<string, unknown>) => {
  const clientId = `${base}${path}`
  documents.set(path, { body: JSON.stringify({ client_id: clientId, client_name: 'Documented assistant', redirect_uris: [REDIRECT], ...document }) })
  return clientId
}

const refusedPage = async (service: TestService, clientId: string) => {
  const response = await browse(service, `/oauth/authorize?${authorizeQuery({ clientId, challenge: pkcePair().challenge })}`, cookie)
  expect(response.status).toBe(400)
  expect(response.headers.get('location')).toBeNull()
  return response.text()
}

describe('client ID metadata documents', () => {
  test('a document names the client: consent shows its name and URL, and the flow completes', async () => {
    const clientId = describeAt('/assistant.json', {})
    const { verifier, challenge } = pkcePair()
    const page = await browse(api, `/account/authorize?${authorizeQuery({ clientId, challenge })}`, cookie)
    const text = await page.text()
    expect(text).toContain('Documented assistant')
    expect(text).toContain(clientId)
    const back = await consent(api, `/oauth/authorize?${authorizeQuery({ clientId, challenge })}`, cookie)
    const tokens = await tokenRequest(api, { grant_type: 'authorization_code', code: back.searchParams.get('code')!, redirect_uri: REDIRECT, client_id: clientId, code_verifier: verifier })
    expect(tokens.status).toBe(200)
    const [row] = await queryText<{ kind: string; name: string }>(api.service.core.db, `select kind, name from oauth_clients where id = $1`, [clientId])
    expect(row).toEqual({ kind: 'document', name: 'Documented assistant' })
  })

  test('a document that does not name itself, redirects, is too large, not JSON or too slow is no client', async () => {
    documents.set('/other.json', { body: JSON.stringify({ client_id: `${base}/elsewhere.json`, client_name: 'Impostor', redirect_uris: [REDIRECT] }) })
    expect(await refusedPage(api, `${base}/other.json`)).toContain('not registered')
    documents.set('/moved.json', { status: 302, body: '', headers: { location: `${base}/assistant.json` } })
    await refusedPage(api, `${base}/moved.json`)
    documents.set('/large.json', { body: JSON.stringify({ client_id: `${base}/large.json`, client_name: 'x'.repeat(3000), redirect_uris: [REDIRECT] }) })
    await refusedPage(api, `${base}/large.json`)
    documents.set('/text.json', { body: 'not json' })
    await refusedPage(api, `${base}/text.json`)
    documents.set('/slow.json', { body: '', hang: true })
    const started = Date.now()
    await refusedPage(api, `${base}/slow.json`)
    expect(Date.now() - started).toBeLessThan(5000)
    describeAt('/plain-http.json', { redirect_uris: ['http://evil.example/cb'] })
    await refusedPage(api, `${base}/plain-http.json`)
  })

  test('documents are remembered in memory until approved: a flood of authorization requests naming new URLs writes no row', async () => {
    const urls = Array.from({ length: 40 }, (_, index) => describeAt(`/flood-${index}.json`, {}))
    const pages = await Promise.all(urls.map((clientId) => browse(api, `/account/authorize?${authorizeQuery({ clientId, challenge: pkcePair().challenge })}`, cookie)))
    // Read at most 16 at a time: the rest are refused as unknown clients until a read is free.
    expect(pages.filter((page) => page.status === 200).length).toBeGreaterThanOrEqual(16)
    expect(pages.every((page) => page.status === 200 || page.status === 400)).toBe(true)
    const [{ count }] = await queryText<{ count: number }>(api.service.core.db, `select count(*)::int as count from oauth_clients where id = any($1::text[])`, [urls])
    expect(count).toBe(0)
  })

  test('by default a document on a loopback or private address is refused (the public-address guard)', async () => {
    const clientId = describeAt('/guarded.json', {})
    await refusedPage(guarded, clientId)
    const [row] = await queryText(api.service.core.db, `select 1 from oauth_clients where id = $1`, [clientId])
    expect(row).toBeUndefined()
  })
})
