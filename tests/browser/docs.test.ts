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
import { waitLimit } from '../helpers/time'

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
    await page.waitForSelector('.opblock', { timeout: waitLimit(15_000) })
    // Every operation renders. Swagger UI renders a long document's operations as they scroll into
    // view (a virtual list: those scrolled past are taken out), so the page is scrolled to its end,
    // collecting the operations seen, until they are all the document's.
    const document = (await api.request('GET', '/docs/json')).body
    const operations = Object.values<Record<string, unknown>>(document.paths).reduce((sum, item) => sum + Object.keys(item).filter((key) => key !== 'parameters').length, 0)
    const seen = new Set<string>()
    for (const deadline = Date.now() + waitLimit(20_000); seen.size < operations && Date.now() < deadline; await page.waitForTimeout(30)) {
      for (const id of await page.locator('.opblock').evaluateAll((blocks) => blocks.map((block) => block.id))) seen.add(id)
      await page.mouse.wheel(0, 600)
    }
    expect(seen.size).toBe(operations)
    await page.click('button.authorize')
    await page.fill('.modal-ux input[type=text], .modal-ux input[type=password]', 'wtk_notarealkeyatall')
    await page.click('.modal-ux button.authorize')
    const stored = await page.evaluate(() => JSON.stringify({ ...window.localStorage }))
    expect(stored).not.toContain('wtk_notarealkeyatall')
    expect(violations).toEqual([])
    expect(foreign).toEqual([])
  }, timeLimit(60_000))
})
