/**
 * CORS for browser apps on other origins: allowed origins on the APIs only, preflights,
 * exposed headers, nothing for other origins or for the account area and dashboard pages. And the
 * service's root: the landing page (HTML or JSON) in the account area's look, and the favicon; and a
 * missing dashboard page in the dashboards' look.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { createDisplayFixture, type DisplayFixture } from '../helpers/display-fixture'
import { startTestService, type TestService } from '../helpers/service'
import { signInForm } from '../helpers/sessions'

const APP = 'https://app.example.com'
let api: TestService
let plain: TestService
let key: string
let display: DisplayFixture

beforeAll(async () => {
  api = await startTestService({ config: { server: { cors: { origins: [APP, 'http://localhost:5173'] } } } })
  plain = await startTestService({ plugins: ['auth', 'users', 'teams'] })
  const organization = await api.createOrganization()
  const user = await api.createUser(organization)
  key = (await api.createKey(user.id, ['teams:read'])).secret
  display = await createDisplayFixture(api)
})
afterAll(async () => {
  await api.stop()
  await plain.stop()
})

const preflight = (service: TestService, path: string, origin: string, method = 'POST') =>
  service.request('OPTIONS', path, {
    headers: { origin, 'access-control-request-method': method, 'access-control-request-headers': 'authorization, content-type' },
    unchecked: true,
  })

describe('CORS', () => {
  test('an allowed origin gets its origin echoed, Vary: Origin, the exposed headers and no credentials, on answers and errors alike', async () => {
    for (const [path, options] of [
      ['/api/v1/teams', { key }],
      ['/api/v1/teams', {}],
      ['/api/v1/teams/not-a-uuid', { key }],
    ] as const) {
      const response = await api.request('GET', path, { ...options, headers: { origin: APP }, unchecked: true })
      expect(response.headers.get('access-control-allow-origin'), path).toBe(APP)
      expect(response.headers.get('vary')).toContain('Origin')
      expect(response.headers.get('access-control-allow-credentials')).toBeNull()
      const exposed = response.headers.get('access-control-expose-headers')!.split(', ')
      for (const header of ['ETag', 'Link', 'Location', 'Retry-After', 'X-Request-Id', 'Idempotent-Replayed', 'X-RateLimit-Limit', 'X-RateLimit-Remaining', 'X-RateLimit-Reset'])
        expect(exposed).toContain(header)
    }
    // Origins compare without case in scheme and host.
    const upper = await api.request('GET', '/api/v1/teams', { key, headers: { origin: 'HTTPS://APP.EXAMPLE.COM' } })
    expect(upper.headers.get('access-control-allow-origin')).toBe('HTTPS://APP.EXAMPLE.COM')
  })

  test('the display API and MCP are covered too', async () => {
    const component = await display.post({ apiKey: display.creator.displayApiKey, componentId: display.components.horizontalBox, data: { value: 1 }, timestamp: new Date().toISOString() })
    expect(component.status).toBeLessThan(500)
    const update = await api.request('POST', '/api/component', {
      rawBody: JSON.stringify({ apiKey: display.creator.displayApiKey, componentId: display.components.horizontalBox, data: { value: 1 } }),
      headers: { origin: APP, 'content-type': 'application/json' },
      unchecked: true,
    })
    expect(update.headers.get('access-control-allow-origin')).toBe(APP)
    const message = await api.request('POST', '/api/message', { rawBody: '{}', headers: { origin: APP, 'content-type': 'application/json' }, unchecked: true })
    expect(message.status).toBe(400)
    expect(message.headers.get('access-control-allow-origin')).toBe(APP)
    const mcp = await api.request('POST', '/mcp', { rawBody: '{}', headers: { origin: APP, 'content-type': 'application/json' }, unchecked: true })
    expect(mcp.headers.get('access-control-allow-origin')).toBe(APP)
    for (const path of ['/api/component', '/api/message', '/mcp']) expect((await preflight(api, path, APP)).status, path).toBe(204)
  })

  test('a preflight from an allowed origin is 204 with the methods, the request headers a client sends, and a max age of 600', async () => {
    const response = await preflight(api, '/api/v1/teams/abc', 'http://localhost:5173', 'PATCH')
    expect(response.status).toBe(204)
    expect(response.text).toBe('')
    expect(response.headers.get('access-control-allow-origin')).toBe('http://localhost:5173')
    expect(response.headers.get('access-control-allow-methods')!.split(', ')).toEqual(expect.arrayContaining(['GET', 'POST', 'PUT', 'PATCH', 'DELETE']))
    const allowed = response.headers.get('access-control-allow-headers')!.toLowerCase().split(', ')
    for (const header of ['authorization', 'content-type', 'idempotency-key', 'if-match', 'if-none-match', 'x-request-id']) expect(allowed).toContain(header)
    expect(response.headers.get('access-control-max-age')).toBe('600')
    expect(response.headers.get('vary')).toContain('Origin')
    expect(response.headers.get('x-request-id')).toBeTruthy()
  })

  test('a disallowed origin gets no CORS headers, on answers and preflights', async () => {
    for (const origin of ['https://evil.example.com', 'https://app.example.com.evil.com', 'null', 'http://app.example.com']) {
      const response = await api.request('GET', '/api/v1/teams', { key, headers: { origin } })
      expect(response.status).toBe(200)
      expect(response.headers.get('access-control-allow-origin'), origin).toBeNull()
      expect(response.headers.get('access-control-expose-headers')).toBeNull()
      const flight = await preflight(api, '/api/v1/teams', origin)
      expect(flight.status, origin).not.toBe(204)
      expect(flight.headers.get('access-control-allow-origin')).toBeNull()
      expect(flight.headers.get('access-control-allow-methods')).toBeNull()
    }
  })

  test('never on the account area, the dashboard pages or the root, even for an allowed origin', async () => {
    for (const path of ['/account', '/account/sign-in', `/pages/${display.pageName}`, '/', '/docs', '/health']) {
      const response = await api.request('GET', path, { headers: { origin: APP }, unchecked: true })
      expect(response.headers.get('access-control-allow-origin'), path).toBeNull()
      const flight = await preflight(api, path, APP)
      expect(flight.headers.get('access-control-allow-origin'), path).toBeNull()
    }
    const signIn = await api.request('POST', '/account/api/sessions', { body: { email: 'a@b.c', password: 'x' }, headers: { origin: APP }, unchecked: true })
    expect(signIn.headers.get('access-control-allow-origin')).toBeNull()
  })

  test('without server.cors.origins (the default) no answer carries CORS headers', async () => {
    const response = await plain.request('GET', '/api/v1/teams', { headers: { origin: APP }, unchecked: true })
    expect(response.headers.get('access-control-allow-origin')).toBeNull()
    expect(response.headers.get('vary')).toBeNull()
    expect((await preflight(plain, '/api/v1/teams', APP)).headers.get('access-control-allow-origin')).toBeNull()
  })

  test('an origin that is not scheme://host[:port] refuses start-up, naming the setting', async () => {
    await expect(startTestService({ config: { server: { cors: { origins: ['https://app.example.com/'] } } } })).rejects.toThrow(/server\.cors\.origins\[0\]: must be in the form: scheme:\/\/host\[:port\]/)
  })
})

describe('the root', () => {
  test('GET / is a small page linking the ways in the enabled plugins offer', async () => {
    const response = await api.request('GET', '/', { headers: { accept: 'text/html,application/xhtml+xml,*/*;q=0.8' }, unchecked: true })
    expect(response.status).toBe(200)
    expect(response.headers.get('content-type')).toStartWith('text/html')
    expect(response.headers.get('content-security-policy')).toContain("script-src 'self'")
    for (const href of ['/docs', '/account', '/health']) expect(response.text).toContain(`href="${href}"`)
    expect(response.text).not.toContain('<script')
  })

  test("GET / has the account area's look: it links the core's stylesheet, which the account area's starts with", async () => {
    const response = await api.request('GET', '/', { headers: { accept: 'text/html' }, unchecked: true })
    const href = /<link rel="stylesheet" href="([^"]+)">/.exec(response.text)?.[1]
    expect(href).toBe('/assets/page.css')
    expect(response.headers.get('content-security-policy')).toContain("style-src 'self'")
    expect(response.text).not.toContain('style=')
    for (const service of [api, plain]) {
      // Served by the core: also without the account plugin.
      const sheet = await service.request('GET', href!, { unchecked: true })
      expect(sheet.status).toBe(200)
      expect(sheet.headers.get('content-type')).toBe('text/css; charset=utf-8')
      expect(sheet.headers.get('x-content-type-options')).toBe('nosniff')
      expect(sheet.text).toContain('ul.cards')
    }
    const page = await api.request('GET', href!, { unchecked: true })
    const account = await api.request('GET', '/account/assets/account.css', { unchecked: true })
    expect(account.text.startsWith(page.text)).toBe(true)
  })

  test('a missing dashboard page is a page in the dashboards\' look, not a bare line', async () => {
    const { cookie } = await signInForm(api, display.reader)
    const missing = await api.request('GET', '/pages/no-such-page', { headers: { cookie }, unchecked: true })
    expect(missing.status).toBe(404)
    expect(missing.headers.get('content-type')).toStartWith('text/html')
    expect(missing.text).toMatch(/<link rel="stylesheet" href="\/pages\/assets\/live\.css\?v=[^"]+" \/>/)
    expect(missing.text).toContain('No such page, or not one you can see.')
    expect(missing.text).toContain('href="/pages"')
    const link = await api.request('GET', '/s/dsl_not-a-link', { unchecked: true })
    expect(link.status).toBe(404)
    expect(link.text).toContain('live.css')
    expect(link.text).toContain('No such share link')
    expect(link.text).not.toContain('href="/pages"')
  })

  test('GET / as JSON lists the same links; a service without those plugins does not offer them', async () => {
    const response = await api.request('GET', '/', { headers: { accept: 'application/json' }, unchecked: true })
    expect(response.headers.get('content-type')).toStartWith('application/json')
    expect(response.body.data.links.map((link: { href: string }) => link.href)).toEqual(expect.arrayContaining(['/docs', '/account']))
    const bare = await plain.request('GET', '/', { headers: { accept: 'application/json' }, unchecked: true })
    expect(bare.body.data.links).toEqual([])
    expect(bare.body.data.health).toBe('/health')
  })

  test('/favicon.ico is an image, not a 404', async () => {
    const response = await api.request('GET', '/favicon.ico', { unchecked: true })
    expect(response.status).toBe(200)
    expect(response.headers.get('content-type')).toBe('image/svg+xml')
    expect(response.text).toStartWith('<svg')
  })
})
