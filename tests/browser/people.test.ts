/**
 * The People page in a real browser: an administrator invites someone, sees the link once (not on
 * a reload), and the invitee opens it in another browser, chooses a password and lands signed in
 * on the account area, where a member sees no People page (404).
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import type { Browser } from 'playwright-core'
import { artifactPath, chromiumAvailable, launchChromium } from '../helpers/browser'
import { listen, type Listening } from '../helpers/http'
import { startTestService, type TestService, type TestUser } from '../helpers/service'

let api: TestService
let site: Listening
let browser: Browser
let administrator: TestUser

describe.skipIf(!chromiumAvailable)(`People page in headless Chromium${chromiumAvailable ? '' : ' — skipped: /usr/bin/chromium is not installed (.ci/run installs it)'}`, () => {
  beforeAll(async () => {
    api = await startTestService()
    site = listen(api, 'localhost')
    administrator = await api.createUser(await api.createOrganization('Browser People'), 'administrator', { password: 'admin password' })
    browser = await launchChromium()
  })
  afterAll(async () => {
    await browser?.close()
    site?.stop()
    await api?.stop()
  })

  test('an administrator invites someone; the invitee opens the link, chooses a password and is signed in', async () => {
    const adminContext = await browser.newContext()
    const page = await adminContext.newPage()
    const errors: string[] = []
    page.on('console', (message) => void (message.type() === 'error' && errors.push(message.text())))
    await page.goto(`${site.url}/account/sign-in`)
    await page.fill('input[name=email]', administrator.email)
    await page.fill('input[name=password]', 'admin password')
    await Promise.all([page.waitForURL(`${site.url}/account/keys`), page.click('button[type=submit]')])

    await Promise.all([page.waitForURL(`${site.url}/account/people`), page.click('nav a[href="/account/people"]')])
    expect(await page.locator('tr[data-user]').count()).toBe(1)
    await page.fill('form.invite input[name=email]', 'invitee@example.com')
    await page.fill('form.invite input[name=displayName]', 'Ivy Invitee')
    await page.selectOption('form.invite select[name=role]', 'member')
    await page.click('form.invite button[type=submit]')
    const link = (await page.textContent('#invite-link'))!.trim()
    expect(link).toMatch(new RegExp(`^${site.url}/account/invite/wti_[0-9A-Za-z]{42}$`))
    expect(await page.textContent('.warning')).toContain('shown this once')
    // The list shows the invitee among the invited; a reload shows the link no more.
    expect(await page.locator('tr', { hasText: 'invitee@example.com' }).textContent()).toContain('invited')
    await page.screenshot({ path: artifactPath('account-people.png'), fullPage: true })
    await page.goto(`${site.url}/account/people?status=invited`)
    expect(await page.locator('#invite-link').count()).toBe(0)
    expect(await page.content()).not.toContain(link.split('/').at(-1)!)
    expect(await page.locator('tr', { hasText: 'Ivy Invitee' }).count()).toBe(1)

    // The invitee, in a browser of their own.
    const inviteeContext = await browser.newContext()
    const invitee = await inviteeContext.newPage()
    await invitee.goto(link)
    expect(await invitee.textContent('main')).toContain('Browser People')
    await invitee.fill('input[name=password]', 'my new password')
    await invitee.fill('input[name=confirm]', 'my new password')
    await Promise.all([invitee.waitForURL(`${site.url}/account/keys`), invitee.click('button[type=submit]')])
    expect(await invitee.textContent('header')).toContain('invitee@example.com')
    // A member: no People link, and the page is 404.
    expect(await invitee.locator('nav a[href="/account/people"]').count()).toBe(0)
    const people = await invitee.goto(`${site.url}/account/people`)
    expect(people!.status()).toBe(404)
    await invitee.screenshot({ path: artifactPath('account-invite-accepted.png'), fullPage: true })

    // The link is spent.
    const again = await (await browser.newContext()).newPage()
    const spent = await again.goto(link)
    expect(spent!.status()).toBe(404)
    expect(await again.textContent('main')).toContain('not valid')

    // The administrator sees them active now.
    await page.goto(`${site.url}/account/people`)
    expect(await page.locator('tr', { hasText: 'invitee@example.com' }).textContent()).toContain('active')
    expect(errors).toEqual([])
    await adminContext.close()
    await inviteeContext.close()
  })
})
