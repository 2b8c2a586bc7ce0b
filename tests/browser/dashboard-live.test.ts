/**
 * A live dashboard stays live in a real browser: sign-in returns to the page that sent you, a
 * component's title, a new component, a removed one and the page's title appear without reload,
 * a dropped stream reconnects by itself and resynchronises what it missed, an alert firing marks
 * its component (and a resolve missed while away unmarks it), and a share link shows the page
 * without a session until it is revoked.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import type { Browser, Page } from 'playwright-core'
import type { LiveStreams } from '../../plugins/display/live/streams'
import { chromiumAvailable, launchChromium } from '../helpers/browser'
import { createDisplayFixture, SAMPLE_DATA, type DisplayFixture } from '../helpers/display-fixture'
import { listen, type Listening } from '../helpers/http'
import { startTestService, type TestService } from '../helpers/service'

let api: TestService
let site: Listening
let browser: Browser
let fx: DisplayFixture
let timestamp = 1_900_000_000

async function v1(method: string, path: string, body?: unknown) {
  const response = await api.request(method, path, { key: fx.creatorKey, body })
  if (response.status >= 300) throw new Error(`${method} ${path}: ${response.status} ${response.text}`)
  return response.body.data
}

async function feed(componentId: string, data: unknown) {
  const response = await api.request('POST', '/api/component', { body: { componentId, apiKey: fx.creator.displayApiKey, timestamp: ++timestamp, data } })
  expect(response.status).toBe(200)
}

/** A signed-in reader's tab on the live page, once its stream is live. */
async function readerOn(path: string): Promise<Page> {
  const page = await browser.newPage({ viewport: { width: 1280, height: 900 } })
  await page.goto(`${site.url}/account/sign-in?next=${encodeURIComponent(path)}`)
  await page.fill('input[name=email]', fx.reader.email)
  await page.fill('input[name=password]', 'reader password')
  await Promise.all([page.waitForURL(`${site.url}${path}`), page.click('button[type=submit]')])
  await live(page)
  return page
}

const live = (page: Page) => page.waitForFunction(() => document.querySelector('[data-status]')?.textContent === 'live', undefined, { timeout: 5000 })

describe.skipIf(!chromiumAvailable)(`live dashboard, live in headless Chromium${chromiumAvailable ? '' : ' — skipped: /usr/bin/chromium is not installed (.ci/run installs it)'}`, () => {
  beforeAll(async () => {
    api = await startTestService()
    site = listen(api, 'localhost')
    fx = await createDisplayFixture(api, 'live-board')
    for (const type of Object.keys(SAMPLE_DATA) as Array<keyof typeof SAMPLE_DATA>) await feed(fx.components[type], SAMPLE_DATA[type])
    browser = await launchChromium()
  })
  afterAll(async () => {
    await browser?.close()
    site?.stop()
    await api?.stop()
  })

  test('an unsigned visit signs in and returns to the page it asked for, not the keys page', async () => {
    const page = await browser.newPage()
    await page.goto(`${site.url}/pages/${fx.pageName}?kiosk=1`)
    expect(new URL(page.url()).pathname).toBe('/account/sign-in')
    await page.fill('input[name=email]', fx.reader.email)
    await page.fill('input[name=password]', 'reader password')
    await Promise.all([page.waitForURL(`${site.url}/pages/${fx.pageName}?kiosk=1`), page.click('button[type=submit]')])
    expect(await page.locator('body').getAttribute('class')).toContain('kiosk')
    await page.close()
  })

  test("a component's title, a new component, a removed one and the page's title appear without reload", async () => {
    const page = await readerOn(`/pages/${fx.pageName}`)
    await page.evaluate(() => ((window as any).__marker = 'same page'))

    await v1('PATCH', `/api/v1/pages/${fx.pageId}/components/${fx.components.barChart}`, { title: 'Deploys per day' })
    await page.waitForFunction((id) => document.querySelector(`#component-${id} h2`)?.textContent === 'Deploys per day', fx.components.barChart, { timeout: 3000 })

    const added = await v1('POST', `/api/v1/pages/${fx.pageId}/components`, { type: 'verticalBox', title: 'Queue depth' })
    await page.waitForSelector(`#component-${added.id}`, { timeout: 3000 })
    expect(await page.locator(`#component-${added.id}`).textContent()).toContain('No data yet')
    await feed(added.id, { ...SAMPLE_DATA.verticalBox, topText: { value: 'Queue', size: 16, color: '#9a3412' }, bottomText: { value: '42', size: 28, color: '#ea580c' } })
    await page.waitForFunction((id) => document.querySelector(`#component-${id} text.bottom`)?.textContent === '42', added.id, { timeout: 3000 })

    await v1('DELETE', `/api/v1/pages/${fx.pageId}/components/${added.id}`)
    await page.waitForSelector(`#component-${added.id}`, { state: 'detached', timeout: 3000 })

    await v1('PATCH', `/api/v1/pages/${fx.pageId}`, { title: 'Operations wall' })
    await page.waitForFunction(() => document.querySelector('[data-title]')?.textContent === 'Operations wall' && document.title === 'Operations wall', undefined, { timeout: 3000 })
    expect(await page.evaluate(() => (window as any).__marker)).toBe('same page')
    await page.close()
  })

  test('a dropped stream shows "reconnecting", reconnects by itself and catches up with what changed meanwhile', async () => {
    const page = await readerOn(`/pages/${fx.pageName}`)
    await page.evaluate(() => ((window as any).__marker = 'same page'))
    const streams = (api.service.contextOf('display').bound as { streams: LiveStreams }).streams
    // Every stream closed (as a restart would) while a change lands that no stream carries.
    await page.evaluate(() => {
      ;(window as any).__states = []
      new MutationObserver(() => (window as any).__states.push(document.body.dataset.state)).observe(document.body, { attributes: true, attributeFilter: ['data-state'] })
    })
    streams.dropAll()
    await v1('PATCH', `/api/v1/pages/${fx.pageId}/components/${fx.components.pieChart}`, { title: 'Changed while away' })
    await page.waitForFunction((id) => document.querySelector(`#component-${id} h2`)?.textContent === 'Changed while away', fx.components.pieChart, { timeout: 8000 })
    await live(page)
    expect(await page.evaluate(() => (window as any).__states)).toContain('reconnecting')
    expect(await page.evaluate(() => (window as any).__marker)).toBe('same page')
    // And the reconnected stream carries the next change.
    await v1('PATCH', `/api/v1/pages/${fx.pageId}/components/${fx.components.pieChart}`, { title: 'Back live' })
    await page.waitForFunction((id) => document.querySelector(`#component-${id} h2`)?.textContent === 'Back live', fx.components.pieChart, { timeout: 3000 })
    await page.close()
  })

  test("an alert firing marks its component on open pages and on a kiosk share link at once; the mark stays through redraws, and a resolve missed while disconnected is caught up", async () => {
    const component = fx.components.verticalBox
    const box = (value: string) => ({ ...SAMPLE_DATA.verticalBox, bottomText: { value, size: 28, color: '#ea580c' } })
    const markOf = (page: Page) => page.evaluate((id) => document.querySelector(`#component-${id} > [data-marks]`)?.textContent ?? null, component)
    await feed(component, box('10'))
    const page = await readerOn(`/pages/${fx.pageName}`)
    expect(await markOf(page)).toBeNull()
    const alert = await v1('POST', `/api/v1/pages/${fx.pageId}/components/${component}/alerts`, { when: 'above', value: 50 })
    await feed(component, box('93'))
    await page.waitForFunction((id) => document.querySelector(`#component-${id} > [data-marks]`)?.textContent === '⚠ above 50', component, { timeout: 5000 })
    // Drawn in the warning colour, the cell outlined.
    const colours = await page.evaluate((id) => {
      const cell = document.querySelector(`#component-${id}`)!
      return { mark: getComputedStyle(cell.querySelector('.mark')!).backgroundColor, border: getComputedStyle(cell).borderTopColor, plain: getComputedStyle(document.querySelector(`.component:not(#component-${id})`)!).borderTopColor }
    }, component)
    expect(colours.mark).toBe(colours.border)
    expect(colours.border).not.toBe(colours.plain)
    // A kiosk share link opened now draws the mark with the page, before any event.
    const link = await v1('POST', `/api/v1/pages/${fx.pageId}/share-links`, {})
    const kiosk = await browser.newPage({ viewport: { width: 1920, height: 1080 } })
    await kiosk.route('**/events', (route) => route.abort())
    await kiosk.goto(`${site.url}${link.url}?kiosk=1`)
    expect(await markOf(kiosk)).toBe('⚠ above 50')
    expect(await kiosk.evaluate((id) => document.querySelector(`#component-${id} .mark`)!.getAttribute('title'), component)).toMatch(/^Firing since \d{4}-\d\d-\d\d \d\d:\d\d UTC$/)
    await kiosk.close()
    // A new value redraws the cell (a new version): the mark stays.
    const before = await page.evaluate((id) => document.querySelector<HTMLElement>(`#component-${id}`)!.dataset.version, component)
    await feed(component, box('97'))
    await page.waitForFunction(([id, version]) => document.querySelector<HTMLElement>(`#component-${id}`)!.dataset.version !== version, [component, before] as const, { timeout: 3000 })
    expect(await markOf(page)).toBe('⚠ above 50')
    // Resolved while the page was disconnected: the resynchronised page has no mark.
    const streams = (api.service.contextOf('display').bound as { streams: LiveStreams }).streams
    await page.evaluate(() => {
      ;(window as any).__states = []
      new MutationObserver(() => (window as any).__states.push(document.body.dataset.state)).observe(document.body, { attributes: true, attributeFilter: ['data-state'] })
    })
    streams.dropAll()
    await feed(component, box('20'))
    await page.waitForFunction((id) => !document.querySelector(`#component-${id} > [data-marks]`), component, { timeout: 8000 })
    await live(page)
    expect(await page.evaluate(() => (window as any).__states)).toContain('reconnecting')
    const history = await v1('GET', `/api/v1/pages/${fx.pageId}/components/${component}/alerts/${alert.id}/history`)
    expect(history.map((row: { transition: string }) => row.transition)).toEqual(['fired', 'resolved'])
    await v1('DELETE', `/api/v1/pages/${fx.pageId}/share-links/${link.id}`)
    await page.close()
  })

  test('a share link shows the live page without a session; revoked, the open viewer is closed within a second and the link is 404', async () => {
    const link = await v1('POST', `/api/v1/pages/${fx.pageId}/share-links`, {})
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 } })
    const page = await context.newPage()
    expect((await page.goto(`${site.url}${link.url}`))!.status()).toBe(200)
    await live(page)
    expect(await page.locator('.shared').textContent()).toContain('read-only')
    expect(await page.locator(`#component-${fx.components.barChart} rect.bar`).count()).toBeGreaterThan(0)
    expect(await context.cookies()).toEqual([])

    await feed(fx.components.horizontalBox, { ...SAMPLE_DATA.horizontalBox, middleText: { value: '2,048', size: 32, color: '#38bdf8' } })
    await page.waitForFunction((id) => document.querySelector(`#component-${id} text.middle`)?.textContent === '2,048', fx.components.horizontalBox, { timeout: 3000 })

    const revoked = Date.now()
    await v1('DELETE', `/api/v1/pages/${fx.pageId}/share-links/${link.id}`)
    await page.waitForFunction(() => document.body.dataset.state === 'ended', undefined, { timeout: 1500 })
    expect(Date.now() - revoked).toBeLessThan(1500)
    expect(await page.locator('[data-status]').textContent()).toContain('revoked')
    expect(await page.locator('section.component').count()).toBe(0)
    expect((await page.reload())!.status()).toBe(404)
    await context.close()
  })
})
