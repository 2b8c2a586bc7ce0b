/**
 * Swagger UI at /docs in a real browser, under the page's own Content-Security-Policy: it renders
 * the operations, fetches nothing from another origin, breaks no policy rule, and a key typed into
 * "Authorize" is not kept in local storage.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import type { Browser } from 'playwright-core'
import { chromiumAvailable, launchChromium } from '../helpers/browser'
import { listen, type Listening } from '../helpers/http'
import { startTestService, type TestService } from '../helpers/service'
import { timeLimit } from '../helpers/database'

let api: TestService
let site: Listening
let browser: Browser

describe.skipIf(!chromiumAvailable)(`Swagger UI in headless Chromium${chromiumAvailable ? '' : ' — skipped: /usr/bin/chromium is not installed (.ci/run installs it)'}`, () => {
  beforeAll(async () => {
    api = await startTestService()
    site = listen(api, 'localhost')
    browser = await launchChromium()
  })
  afterAll(async () => {
    await browser?.close()
    site?.stop()
    await api?.stop()
  })

  test('renders under its CSP from this origin only, and keeps no key in local storage', async () => {
    const page = await browser.newPage()
    const violations: string[] = []
    const foreign: string[] = []
    page.on('console', (message) => {
      if (/Content Security Policy|Refused to/i.test(message.text())) violations.push(message.text())
    })
    page.on('request', (request) => {
      if (!request.url().startsWith(site.url) && !request.url().startsWith('data:')) foreign.push(request.url())
    })
    await page.goto(`${site.url}/docs`)
    await page.waitForSelector('.opblock', { timeout: 15_000 })
    expect(await page.locator('.opblock').count()).toBeGreaterThan(20)
    await page.click('button.authorize')
    await page.fill('.modal-ux input[type=text], .modal-ux input[type=password]', 'wtk_notarealkeyatall')
    await page.click('.modal-ux button.authorize')
    const stored = await page.evaluate(() => JSON.stringify({ ...window.localStorage }))
    expect(stored).not.toContain('wtk_notarealkeyatall')
    expect(violations).toEqual([])
    expect(foreign).toEqual([])
  }, timeLimit(30_000))
})
