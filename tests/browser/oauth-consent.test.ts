/**
 * OAuth consent in a real browser, with the app's redirect URI a real loopback server: signed out,
 * the authorization URL goes through sign-in and back to the consent page (`next`); the page names
 * the app, where it returns and what it asks (a scope the role cannot hold said not granted); a box
 * cleared grants less, and Allow really lands on the app — Chrome holds a form post's redirects to
 * the page's CSP `form-action`, so this proves the consent page lets the app's origin through (and a
 * control shows Chrome refusing it without). Deny lands there with access_denied. "Connected apps"
 * lists the grant and its Disconnect (confirmed in a dialog) stops the token at once.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import type { Browser, BrowserContext, ConsoleMessage, Page } from 'playwright-core'
import { artifactPath, chromiumAvailable, launchChromium } from '../helpers/browser'
import { listen, type Listening } from '../helpers/http'
import { authorizeQuery, pkcePair } from '../helpers/oauth'
import { startTestService, type TestService, type TestUser } from '../helpers/service'

const CLIENT_NAME = 'Chromium <test> & assistant'
const ASKED = 'work_items:read work_items:write audit_logs:read'

let api: TestService
let site: Listening
let browser: Browser
let context: BrowserContext
let user: TestUser
/** The app: its redirect URI on 127.0.0.1 (another site than the service on localhost). */
let app: ReturnType<typeof Bun.serve>
let callback: string
/** Every query the app's callback received, in order. */
const received: URLSearchParams[] = []
let clientId: string
/** From the approved authorization, for Connected apps. */
let accessToken: string
let refreshToken: string

const bearer = (token: string) => fetch(`${site.url}/api/v1/users/me`, { headers: { authorization: `Bearer ${token}` } })

/** Console lines of the page that are CSP violations. */
function cspViolations(page: Page): string[] {
  const seen: string[] = []
  page.on('console', (message: ConsoleMessage) => {
    if (message.text().includes('Content Security Policy')) seen.push(message.text())
  })
  return seen
}

describe.skipIf(!chromiumAvailable)(`OAuth consent in headless Chromium${chromiumAvailable ? '' : ' — skipped: /usr/bin/chromium is not installed (.ci/run installs it)'}`, () => {
  beforeAll(async () => {
    api = await startTestService()
    site = listen(api, 'localhost')
    user = await api.createUser(await api.createOrganization(), 'member', { password: 'consent password' })
    app = Bun.serve({
      port: 0,
      hostname: '127.0.0.1',
      fetch: (request) => {
        const url = new URL(request.url)
        // The app's own page, linking to the authorization URL (a link from another site, as an app's "Connect" button).
        if (url.pathname === '/start')
          return new Response(`<!doctype html><title>App</title><a id="connect" href="${Bun.escapeHTML(url.searchParams.get('to') ?? '')}">Connect</a>`, { headers: { 'content-type': 'text/html; charset=utf-8' } })
        if (url.pathname !== '/callback') return new Response('not found', { status: 404 })
        received.push(url.searchParams)
        return new Response(`<!doctype html><title>App callback</title><h1 id="app">The app got its answer</h1>`, { headers: { 'content-type': 'text/html; charset=utf-8' } })
      },
    })
    callback = `http://127.0.0.1:${app.port}/callback`
    const registered = await fetch(`${site.url}/oauth/register`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ client_name: CLIENT_NAME, redirect_uris: [callback] }),
    })
    expect(registered.status).toBe(201)
    clientId = ((await registered.json()) as { client_id: string }).client_id
    browser = await launchChromium()
    context = await browser.newContext()
  })
  afterAll(async () => {
    await context?.close()
    await browser?.close()
    app?.stop(true)
    site?.stop()
    await api?.stop()
  })

  const authorizationUrl = (challenge: string, state: string, extra: { scope?: string; resource?: string } = {}) =>
    `${site.url}/oauth/authorize?${authorizeQuery({ clientId, redirectUri: callback, challenge, state, ...extra })}`

  const atCallback = (url: URL) => url.origin === new URL(callback).origin && url.pathname === '/callback'

  test('signed out: sign in and back to consent; clear a box, Allow, and the browser lands on the app with a code for less', async () => {
    const page = await context.newPage()
    const violations = cspViolations(page)
    const { verifier, challenge } = pkcePair()
    const state = 'st <1> & done'
    const query = authorizeQuery({ clientId, redirectUri: callback, challenge, state, scope: ASKED })

    await page.goto(authorizationUrl(challenge, state, { scope: ASKED }))
    await page.waitForURL((url) => url.pathname === '/account/sign-in')
    expect(new URL(page.url()).searchParams.get('next')).toBe(`/account/authorize?${query}`)
    await page.fill('input[name=email]', user.email)
    await page.fill('input[name=password]', 'consent password')
    await Promise.all([page.waitForURL((url) => url.pathname === '/account/authorize'), page.click('button[type=submit]')])
    // The `next` round trip brought the request back unchanged.
    expect(new URL(page.url()).search).toBe(`?${query}`)

    expect(await page.textContent('.consent h2')).toBe(`“${CLIENT_NAME}” wants to act as you`)
    expect(await page.textContent('.consent strong')).toBe(`127.0.0.1:${app.port}`)
    const boxes = page.locator('input[type=checkbox][name=scopes]')
    expect(await boxes.evaluateAll((inputs) => inputs.map((input) => [(input as HTMLInputElement).value, (input as HTMLInputElement).checked]))).toEqual([
      ['work_items:read', true],
      ['work_items:write', true],
    ])
    const refused = (await page.textContent('[data-refused]'))!
    expect(refused).toContain('Not granted')
    expect(refused).toContain('audit_logs:read')
    await page.screenshot({ path: artifactPath('oauth-consent.png'), fullPage: true })

    await page.uncheck('input[name=scopes][value="work_items:write"]')
    await Promise.all([page.waitForURL(atCallback), page.click('button[name=decision][value=approve]')])
    expect(await page.textContent('#app')).toBe('The app got its answer')
    expect(violations).toEqual([])
    expect(received).toHaveLength(1)
    const answer = received[0]!
    expect(answer.get('code')).toMatch(/^wtc_/)
    expect(answer.get('state')).toBe(state)
    expect(answer.get('iss')).toBe(site.url)
    expect(answer.get('error')).toBeNull()

    const token = await fetch(`${site.url}/oauth/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ grant_type: 'authorization_code', code: answer.get('code')!, redirect_uri: callback, client_id: clientId, code_verifier: verifier }),
    })
    expect(token.status).toBe(200)
    const tokens = (await token.json()) as { access_token: string; refresh_token: string; scope: string }
    expect(tokens.scope).toBe('work_items:read')
    expect(tokens.access_token).toMatch(/^wto_/)
    accessToken = tokens.access_token
    refreshToken = tokens.refresh_token
    const me = await bearer(accessToken)
    expect(me.status).toBe(200)
    const body = (await me.json()) as { data: { user: { id: string }; grant: { clientName: string; scopes: string[] } } }
    expect(body.data.user.id).toBe(user.id)
    expect(body.data.grant).toMatchObject({ clientName: CLIENT_NAME, scopes: ['work_items:read'] })
    await page.close()
  })

  test("signed in, from a link on the app's site: straight to consent; Deny lands on the app with access_denied and the state", async () => {
    const page = await context.newPage()
    const violations = cspViolations(page)
    const state = 'deny? yes & keep'
    // A link on the app's page: the browser leaves the SameSite=Strict session cookie out of that
    // cross-site chain, and the consent page reloads itself to get it.
    await page.goto(`http://127.0.0.1:${app.port}/start?to=${encodeURIComponent(authorizationUrl(pkcePair().challenge, state, { scope: 'work_items:read', resource: `${site.url}/mcp` }))}`)
    await page.click('#connect')
    // Signed in: straight to consent, no sign-in on the way.
    await page.waitForURL((url) => url.pathname === '/account/authorize' && url.origin === site.url)
    await page.waitForSelector('.consent')
    expect(await page.textContent('.consent')).toContain('MCP (/mcp) only')
    await Promise.all([page.waitForURL(atCallback), page.click('button[name=decision][value=deny]')])
    expect(violations).toEqual([])
    expect(received).toHaveLength(2)
    const answer = received[1]!
    expect(answer.get('error')).toBe('access_denied')
    expect(answer.get('state')).toBe(state)
    expect(answer.get('iss')).toBe(site.url)
    expect(answer.get('code')).toBeNull()
    await page.close()
  })

  test('Connected apps lists the grant; Disconnect, confirmed in its dialog, removes it and the token is refused at once', async () => {
    const page = await context.newPage()
    await page.goto(`${site.url}/account/apps`)
    // The denied authorization made no grant: one row.
    const rows = page.locator('tr[data-grant]')
    expect(await rows.count()).toBe(1)
    const row = rows.first()
    const cells = await row.locator('td').allTextContents()
    expect(cells[0]).toBe(CLIENT_NAME)
    expect(cells[1]).toBe(`127.0.0.1:${app.port}`)
    expect(cells[2]).toBe('work_items:read')
    const grantId = (await row.getAttribute('data-grant'))!
    await page.screenshot({ path: artifactPath('oauth-apps.png'), fullPage: true })

    const dialogs: Array<{ type: string; message: string }> = []
    page.once('dialog', async (dialog) => {
      dialogs.push({ type: dialog.type(), message: dialog.message() })
      await dialog.accept()
    })
    await row.locator('button', { hasText: 'Disconnect' }).click()
    await page.locator(`tr[data-grant="${grantId}"]`).waitFor({ state: 'detached' })
    expect(new URL(page.url()).pathname).toBe('/account/apps')
    expect(dialogs).toEqual([{ type: 'confirm', message: `Disconnect “${CLIENT_NAME}”? It stops working at once.` }])
    expect(await page.locator('tr[data-grant]').count()).toBe(0)
    expect(await page.textContent('main')).toContain('No connected apps.')

    expect((await bearer(accessToken)).status).toBe(401)
    const refreshed = await fetch(`${site.url}/oauth/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ grant_type: 'refresh_token', refresh_token: refreshToken, client_id: clientId }),
    })
    expect(refreshed.status).toBe(400)
    expect(((await refreshed.json()) as { error: string }).error).toBe('invalid_grant')
    await page.close()
  })

  test("control: with form-action 'self' only, Chrome refuses the redirect to the app — the consent page's CSP is what lets Allow through", async () => {
    const page = await context.newPage()
    let policy = ''
    // The consent page as served, but for its CSP narrowed back to the account area's default.
    await page.route(
      (url) => url.pathname === '/account/authorize',
      async (route) => {
        const response = await route.fetch()
        policy = response.headers()['content-security-policy'] ?? ''
        await route.fulfill({ response, headers: { ...response.headers(), 'content-security-policy': policy.replace(/form-action [^;]+/, "form-action 'self'") } })
      },
    )
    const refusal = new Promise<string>((resolve) =>
      page.on('console', (message) => {
        if (message.text().includes('form-action')) resolve(message.text())
      }),
    )
    // Straight to the consent page: Playwright routes a redirect chain's first request only.
    await page.goto(`${site.url}/account/authorize?${authorizeQuery({ clientId, redirectUri: callback, challenge: pkcePair().challenge, state: 'control', scope: 'work_items:read' })}`)
    expect(policy).toContain(`form-action 'self' http://127.0.0.1:${app.port}`)
    // The form's post and its redirect go untouched.
    await page.unrouteAll()
    await page.click('button[name=decision][value=approve]')
    let timer: Timer | undefined
    const refused = await Promise.race([refusal, new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error('no CSP refusal reported')), 10_000)))])
    clearTimeout(timer)
    // Chrome names the form's own URL (same origin, allowed) and refuses where it was redirected.
    expect(refused).toContain("violates the following Content Security Policy directive: \"form-action 'self'\"")
    // The browser stayed out of the app: its callback heard nothing more…
    expect(atCallback(new URL(page.url()))).toBe(false)
    expect(received).toHaveLength(2)
    // …though the service had approved (its 303 to the app comes after the grant is written).
    await page.goto(`${site.url}/account/apps`)
    expect(await page.locator('tr[data-grant]').count()).toBe(1)
    await page.close()
  })
})
