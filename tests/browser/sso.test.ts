/**
 * Single sign-on in a real browser: the sign-in page offers "Sign in with <name>", the click goes
 * to the identity provider (a real oidc-provider on 127.0.0.1, another site than the service on
 * localhost), which signs the browser in and sends it back to the callback, and the browser lands
 * signed in on /account/keys (or on `next`). This proves what the cookie-jar tests cannot: the
 * flow's SameSite=Lax cookie rides the provider's cross-site redirect back, and the session's
 * SameSite=Strict cookie, set at the end of a chain another site began, is sent by the page's own
 * (same-site) navigation onward.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import type { Browser, BrowserContext, Page } from 'playwright-core'
import { artifactPath, chromiumAvailable, launchChromium } from '../helpers/browser'
import { createTestDatabase, type TestDatabase } from '../helpers/database'
import { listen, type Listening } from '../helpers/http'
import { startOidcProvider, type TestOidcProvider } from '../helpers/oidc-provider'
import { startTestService, type TestService, type TestUser } from '../helpers/service'

let idp: TestOidcProvider
let database: TestDatabase
let api: TestService
let site: Listening
let browser: Browser
let user: TestUser
let organizationId: string

describe.skipIf(!chromiumAvailable)(`single sign-on in headless Chromium${chromiumAvailable ? '' : ' — skipped: /usr/bin/chromium is not installed (.ci/run installs it)'}`, () => {
  beforeAll(async () => {
    idp = await startOidcProvider()
    database = await createTestDatabase()
    // The provider's configuration names the organization: made first, by a service on the same database.
    const setup = await startTestService({ plugins: ['auth'], database })
    organizationId = await setup.createOrganization('Acme')
    await setup.stop()
    const provider = { id: 'acme', name: 'Acme ID', issuer: idp.issuer, clientId: 'worktrack', clientSecret: 'a client secret long enough', organizationId }
    api = await startTestService({ database, config: { auth: { oidc: { providers: [provider] } } } })
    site = listen(api, 'localhost')
    await idp.addClient({ clientId: provider.clientId, clientSecret: provider.clientSecret, redirectUris: [`${site.url}/account/sso/acme/callback`] })
    user = await api.createUser(organizationId, 'member')
    browser = await launchChromium()
  })
  afterAll(async () => {
    await browser?.close()
    site?.stop()
    await api?.stop()
    await database?.close()
    await idp?.stop()
  })

  /** A fresh browser whose provider sign-in (the auto-interactions) is `user`'s account there. */
  async function browserOf(signInAs: TestUser): Promise<{ context: BrowserContext; page: Page; navigations: string[] }> {
    const context = await browser.newContext()
    const account = idp.account({ email: signInAs.email, email_verified: true, name: 'Acme Person' })
    await context.addCookies([{ name: 'login_as', value: account, url: idp.issuer }])
    const page = await context.newPage()
    const navigations: string[] = []
    page.on('framenavigated', (frame) => {
      if (frame === page.mainFrame()) navigations.push(frame.url())
    })
    // Every request of the chain, redirects included (navigations show only where pages landed).
    page.on('request', (request) => {
      if (request.isNavigationRequest() && request.frame() === page.mainFrame()) navigations.push(request.url())
    })
    return { context, page, navigations }
  }

  test('"Sign in with Acme ID": to the provider, back, and signed in on /account/keys', async () => {
    const { context, page, navigations } = await browserOf(user)
    try {
      await page.goto(`${site.url}/account/sign-in`)
      const link = page.getByRole('link', { name: 'Sign in with Acme ID' })
      expect(await link.getAttribute('href')).toBe('/account/sso/acme')
      await Promise.all([page.waitForURL(`${site.url}/account/keys`), link.click()])

      // It went to the provider, and came back to the callback, then on to the keys page.
      expect(navigations.some((url) => url.startsWith(`${idp.issuer}/auth?`))).toBe(true)
      expect(navigations.some((url) => url.startsWith(`${site.url}/account/sso/acme/callback?`))).toBe(true)
      expect(navigations.at(-1)).toBe(`${site.url}/account/keys`)

      // Signed in: the page names the user, and offers what a signed-in user gets.
      expect(await page.locator('header form.sign-out span').textContent()).toBe(`User ${user.username.slice('user'.length)} (${user.email})`)
      expect(await page.locator('h1').textContent()).toBe('API keys')
      const cookies = await context.cookies(site.url)
      const session = cookies.find((cookie) => cookie.name === 'wt_session')
      expect(session).toMatchObject({ httpOnly: true, sameSite: 'Strict', path: '/' })
      expect(cookies.find((cookie) => cookie.name === 'wt_sso')).toBeUndefined()
      await page.screenshot({ path: artifactPath('sso-sign-in.png'), fullPage: true })

      // The session is a real one: reloading stays signed in.
      await page.reload()
      expect(page.url()).toBe(`${site.url}/account/keys`)
    } finally {
      await context.close()
    }
  })

  test('next on the sign-in page is where the browser lands', async () => {
    const { context, page } = await browserOf(user)
    try {
      await page.goto(`${site.url}/account/sign-in?next=${encodeURIComponent('/account/apps')}`)
      await Promise.all([page.waitForURL(`${site.url}/account/apps`), page.getByRole('link', { name: 'Sign in with Acme ID' }).click()])
      expect(await page.locator('h1').textContent()).toBe('Connected apps')
    } finally {
      await context.close()
    }
  })

  test('a refusal lands on the sign-in page with the reason, signed out', async () => {
    const stranger = { ...user, email: 'stranger@elsewhere.example' }
    const { context, page } = await browserOf(stranger)
    try {
      await page.goto(`${site.url}/account/sign-in`)
      await Promise.all([page.waitForURL((url) => url.pathname === '/account/sso/acme/callback'), page.getByRole('link', { name: 'Sign in with Acme ID' }).click()])
      expect(await page.getByRole('alert').textContent()).toBe('No account for stranger@elsewhere.example here; ask an administrator to invite you.')
      expect((await context.cookies(site.url)).map((cookie) => cookie.name)).not.toContain('wt_session')
      await page.goto(`${site.url}/account/keys`)
      expect(new URL(page.url()).pathname).toBe('/account/sign-in')
    } finally {
      await context.close()
    }
  })
})
