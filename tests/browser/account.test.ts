/**
 * The account area in a real browser: sign in, create a key with two scopes, read its secret
 * from the page, use it, revoke it in the page, and see it refused. Plus SameSite: a form on
 * another site cannot ride the session cookie.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import type { Browser } from 'playwright-core'
import { artifactPath, chromiumAvailable, launchChromium } from '../helpers/browser'
import { listen, type Listening } from '../helpers/http'
import { startTestService, type TestService, type TestUser } from '../helpers/service'

let api: TestService
let site: Listening
let browser: Browser
let user: TestUser

describe.skipIf(!chromiumAvailable)(`account pages in headless Chromium${chromiumAvailable ? '' : ' — skipped: /usr/bin/chromium is not installed (.ci/run installs it)'}`, () => {
  beforeAll(async () => {
    api = await startTestService()
    site = listen(api, 'localhost')
    user = await api.createUser(await api.createOrganization(), 'member', { password: 'browser password' })
    browser = await launchChromium()
  })
  afterAll(async () => {
    await browser?.close()
    site?.stop()
    await api?.stop()
  })

  async function signIn() {
    const page = await browser.newPage()
    await page.goto(`${site.url}/account/sign-in`)
    await page.fill('input[name=email]', user.email)
    await page.fill('input[name=password]', 'browser password')
    await Promise.all([page.waitForURL(`${site.url}/account/keys`), page.click('button[type=submit]')])
    return page
  }

  test('create a key with two scopes, use it, revoke it in the page, and it stops working', async () => {
    const page = await signIn()
    await page.fill('input[name=name]', 'browser key')
    await page.check('input[name=scopes][value="teams:read"]')
    await page.check('input[name=scopes][value="users:read"]')
    await page.click('form[action="/account/keys"] button[type=submit]')
    const secret = (await page.textContent('#new-secret'))!.trim()
    expect(secret).toMatch(/^wtk_[0-9A-Za-z]{42}$/)
    expect(await page.textContent('.warning')).toContain('shown this once')

    const me = await fetch(`${site.url}/api/v1/users/me`, { headers: { authorization: `Bearer ${secret}` } })
    expect(me.status).toBe(200)
    expect((await me.json()).data.key.scopes.sort()).toEqual(['teams:read', 'users:read'])

    await page.goto(`${site.url}/account/keys`)
    expect(await page.content()).not.toContain(secret)
    await page.screenshot({ path: artifactPath('account-keys.png'), fullPage: true })
    page.once('dialog', (dialog) => dialog.accept())
    const row = page.locator('tr', { hasText: 'browser key' })
    await Promise.all([page.waitForURL(`${site.url}/account/keys`), row.locator('button', { hasText: 'Revoke' }).click()])
    expect(await row.textContent()).toContain('Revoked')
    const after = await fetch(`${site.url}/api/v1/users/me`, { headers: { authorization: `Bearer ${secret}` } })
    expect(after.status).toBe(401)
    await page.close()
  })

  test('dismissing the confirmation keeps the key', async () => {
    const page = await signIn()
    await page.fill('input[name=name]', 'kept key')
    await page.check('input[name=scopes][value="users:read"]')
    await page.click('form[action="/account/keys"] button[type=submit]')
    const secret = (await page.textContent('#new-secret'))!.trim()
    await page.goto(`${site.url}/account/keys`)
    const dialogs: Array<{ type: string; message: string }> = []
    const dismissed = new Promise<void>((resolve) =>
      page.once('dialog', async (dialog) => {
        dialogs.push({ type: dialog.type(), message: dialog.message() })
        await dialog.dismiss()
        resolve()
      }),
    )
    await page.locator('tr', { hasText: 'kept key' }).locator('button', { hasText: 'Revoke' }).click()
    await dismissed
    expect(dialogs).toHaveLength(1)
    expect(dialogs[0]!.type).toBe('confirm')
    expect(dialogs[0]!.message).toContain('kept key')
    expect((await fetch(`${site.url}/api/v1/users/me`, { headers: { authorization: `Bearer ${secret}` } })).status).toBe(200)
    // Reloaded, the row still offers Revoke and is not marked revoked.
    await page.goto(`${site.url}/account/keys`)
    const row = page.locator('tr', { hasText: 'kept key' })
    expect(await row.count()).toBe(1)
    expect(await row.textContent()).not.toContain('Revoked')
    expect(await row.locator('button', { hasText: 'Revoke' }).count()).toBe(1)
    await page.close()
  })

  test('a form on another site does not carry the session cookie (SameSite=Strict)', async () => {
    const page = await signIn()
    // 127.0.0.1 and localhost are different sites to the browser.
    const attacker = Bun.serve({
      port: 0,
      hostname: '127.0.0.1',
      fetch: () =>
        new Response(
          `<form id="f" method="post" action="${site.url}/account/keys"><input name="name" value="forged"><input name="scopes" value="users:read"></form><script>document.getElementById('f').submit()</script>`,
          { headers: { 'content-type': 'text/html' } },
        ),
    })
    try {
      await page.goto(`http://127.0.0.1:${attacker.port}/`)
      await page.waitForURL(`${site.url}/account/sign-in`)
      const keys = await api.request('GET', '/account/api/keys', {
        headers: { authorization: `Bearer ${(await api.request('POST', '/account/api/sessions', { body: { email: user.email, password: 'browser password' } })).body.data.token}` },
      })
      expect(keys.body.data.map((key: { name: string }) => key.name)).not.toContain('forged')
    } finally {
      attacker.stop(true)
      await page.close()
    }
  })
})
