/**
 * "Notify me" on the live page in headless Chromium: the button, the service worker it registers,
 * a push shown as a notification (delivered to the worker through the DevTools protocol: headless
 * Chromium here has no push service to subscribe with), and the subscription route the button
 * posts to, with the page's own session cookie, through to a push arriving at a local push service.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import type { Browser, BrowserContext, Page } from 'playwright-core'
import { WebPushAgentRef } from '../../plugins/push/api'
import { queryText } from '../../src/db'
import { chromiumAvailable, launchChromium } from '../helpers/browser'
import { createDisplayFixture, type DisplayFixture } from '../helpers/display-fixture'
import { listen, type Listening } from '../helpers/http'
import { startTestService, type TestService } from '../helpers/service'
import { startWebPushReceiver, type WebPushReceiver } from '../helpers/webpush-receiver'

let api: TestService
let site: Listening
let browser: Browser
let context: BrowserContext
let fx: DisplayFixture
let receiver: WebPushReceiver

/** The reader on the live page, signing in first unless the context already has their session. */
async function readerOnPage(): Promise<Page> {
  const page = await context.newPage()
  const path = `/pages/${fx.pageName}`
  await page.goto(`${site.url}${path}`)
  if (new URL(page.url()).pathname === '/account/sign-in') {
    await page.fill('input[name=email]', fx.reader.email)
    await page.fill('input[name=password]', 'reader password')
    await Promise.all([page.waitForURL(`${site.url}${path}`), page.click('button[type=submit]')])
  }
  return page
}

describe.skipIf(!chromiumAvailable)(`"Notify me" in headless Chromium${chromiumAvailable ? '' : ' — skipped: /usr/bin/chromium is not installed (.ci/run installs it)'}`, () => {
  beforeAll(async () => {
    receiver = await startWebPushReceiver()
    api = await startTestService({
      provide: (services) => services.provide(WebPushAgentRef, { ca: receiver.ca }),
      config: { push: { pollIntervalMs: 50, webPush: { allowPrivateTargets: true } } },
    })
    site = listen(api, 'localhost')
    fx = await createDisplayFixture(api, 'notify-board')
    browser = await launchChromium()
    context = await browser.newContext()
    await context.grantPermissions(['notifications'], { origin: site.url })
  })
  afterAll(async () => {
    await browser?.close()
    site?.stop()
    await api?.stop()
    await receiver?.close()
  })

  test('the live page offers "Notify me"; a click registers the service worker, which shows a push as a notification', async () => {
    const page = await readerOnPage()
    const button = page.locator('button[data-notify]')
    await button.waitFor({ timeout: 5000 })
    expect(await button.textContent()).toBe('Notify me')

    await button.click()
    // The worker is registered and active whether or not the browser then finds a push service.
    const scope = await page.evaluate(async () => {
      // A deadline, not a count of tries: on a loaded host the worker's activation can take seconds.
      for (const deadline = Date.now() + 15_000; Date.now() < deadline; ) {
        const registration = await navigator.serviceWorker.getRegistration('/push/')
        if (registration?.active?.state === 'activated') return registration.scope
        await new Promise((resolve) => setTimeout(resolve, 25))
      }
      return null
    })
    expect(scope).toBe(`${site.url}/push/`)
    // Headless Chromium here has no push service: the button says why instead of claiming success.
    await page.waitForFunction(() => !document.querySelector('button[data-notify]')?.hasAttribute('disabled'), undefined, { timeout: 10_000 })
    const state = await button.getAttribute('data-notify')
    if (state === 'off') expect(await button.getAttribute('data-error')).toBeTruthy()
    else expect(state).toBe('on')

    // A push, as the browser's push service would hand it to the worker.
    const cdp = await context.newCDPSession(page)
    await cdp.send('ServiceWorker.enable')
    const registrationId = await new Promise<string>((resolve) => {
      cdp.on('ServiceWorker.workerRegistrationUpdated', (event: { registrations: Array<{ registrationId: string; scopeURL: string }> }) => {
        const found = event.registrations.find((registration) => registration.scopeURL === `${site.url}/push/`)
        if (found) resolve(found.registrationId)
      })
    })
    const payload = { title: 'notify-board', body: 'Disk usage above 90%', data: { pageName: 'notify-board', pageId: fx.pageId, messageId: '0192f0c4-7b1e-7c3a-9d52-5b0e1f2a3c4d', sentAt: new Date().toISOString() } }
    // Delivered again until shown (one tag, so repeats collapse into one notification): in two of
    // three CI runs on a loaded host a delivery through the DevTools protocol reached no worker, where
    // alone it always did. What is judged is that the worker shows a push it gets, not the protocol.
    let shown: Array<{ title: string; body: string; tag: string; pageName?: string }> = []
    for (const deadline = Date.now() + 30_000; !shown.length && Date.now() < deadline; ) {
      await cdp.send('ServiceWorker.deliverPushMessage', { origin: site.url, registrationId, data: JSON.stringify(payload) })
      shown = await page.evaluate(async () => {
        const registration = await navigator.serviceWorker.getRegistration('/push/')
        for (const deadline = Date.now() + 3_000; Date.now() < deadline; ) {
          const notifications = await registration!.getNotifications()
          if (notifications.length) return notifications.map((each) => ({ title: each.title, body: each.body, tag: each.tag, pageName: each.data?.pageName }))
          await new Promise((resolve) => setTimeout(resolve, 25))
        }
        return []
      })
    }
    expect(shown).toEqual([{ title: 'notify-board', body: 'Disk usage above 90%', tag: payload.data.messageId, pageName: 'notify-board' }])
    await page.close()
  }, 60_000)

  test("the page's subscription route registers the signed-in user's browser, which then gets the page's messages", async () => {
    const page = await readerOnPage()
    const subscription = receiver.subscribe()
    const status = await page.evaluate(async (body) => {
      const response = await fetch('/push/subscriptions', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) })
      return response.status
    }, { endpoint: subscription.endpoint, expirationTime: null, keys: subscription.keys })
    expect(status).toBe(201)
    const sent = await api.request('POST', '/api/message', { body: { apiKey: fx.creator.displayApiKey, pageName: fx.pageName, message: 'Backup done' } })
    expect(sent.status).toBe(200)
    const [push] = await receiver.waitFor(1, 10_000, (each) => each.subscriptionId === subscription.id)
    expect(push!.payload).toMatchObject({ title: fx.pageName, body: 'Backup done' })
    await page.close()
  })

  test('the subscription route wants the session cookie and this site as the origin', async () => {
    const subscription = receiver.subscribe()
    const body = { endpoint: subscription.endpoint, keys: subscription.keys }
    const anonymous = await api.request('POST', '/push/subscriptions', { body })
    expect(anonymous.status).toBe(401)
    const page = await readerOnPage()
    const cookies = await context.cookies(site.url)
    const cookie = cookies.map((each) => `${each.name}=${each.value}`).join('; ')
    const foreign = await api.request('POST', '/push/subscriptions', { body, headers: { cookie, origin: 'https://evil.example' } })
    expect(foreign.status).toBe(403)
    expect(await queryText(api.service.core.db, 'select 1 from devices where token = $1', [subscription.endpoint])).toEqual([])
    // The same request from this site's origin is taken: the refusal was the origin's.
    const own = await api.request('POST', '/push/subscriptions', { body, headers: { cookie, origin: 'http://localhost' } })
    expect(own.status).toBe(201)
    await page.close()
  })
})
