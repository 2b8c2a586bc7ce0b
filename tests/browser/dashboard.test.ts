/**
 * A live dashboard in a real browser: all five component types rendered as SVG with the posted
 * colors and values, and a chart that changes in place when an update arrives (no reload).
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import type { Browser } from 'playwright-core'
import { artifactPath, chromiumAvailable, launchChromium } from '../helpers/browser'
import { createDisplayFixture, SAMPLE_DATA, type DisplayFixture, type SampleType } from '../helpers/display-fixture'
import { listen, type Listening } from '../helpers/http'
import { startTestService, type TestService } from '../helpers/service'

let api: TestService
let site: Listening
let browser: Browser
let fx: DisplayFixture

describe.skipIf(!chromiumAvailable)(`live dashboard in headless Chromium${chromiumAvailable ? '' : ' — skipped: /usr/bin/chromium is not installed (.ci/run installs it)'}`, () => {
  beforeAll(async () => {
    api = await startTestService()
    site = listen(api, 'localhost')
    fx = await createDisplayFixture(api, 'ops-board')
    let timestamp = 1_900_000_000
    for (const type of Object.keys(SAMPLE_DATA) as SampleType[]) {
      const response = await api.request('POST', '/api/component', { body: { componentId: fx.components[type], apiKey: fx.creator.displayApiKey, timestamp: ++timestamp, data: SAMPLE_DATA[type] } })
      expect(response.status).toBe(200)
    }
    browser = await launchChromium()
  })
  afterAll(async () => {
    await browser?.close()
    site?.stop()
    await api?.stop()
  })

  test('renders all five types, then updates a chart in place', async () => {
    const page = await browser.newPage({ viewport: { width: 1280, height: 900 } })
    await page.goto(`${site.url}/account/sign-in`)
    await page.fill('input[name=email]', fx.reader.email)
    await page.fill('input[name=password]', 'reader password')
    await Promise.all([page.waitForURL(`${site.url}/account/keys`), page.click('button[type=submit]')])
    await page.goto(`${site.url}/pages/ops-board`)
    const cell = (type: SampleType) => page.locator(`#component-${fx.components[type]}`)

    const box = cell('horizontalBox')
    expect(await box.locator('rect.background').getAttribute('fill')).toBe('#1e293b')
    expect(await box.locator('text.middle').textContent()).toBe('1,204')
    expect(await box.locator('text.middle').getAttribute('fill')).toBe('#38bdf8')
    expect(await box.locator('text.middle').getAttribute('font-size')).toBe('32')
    expect(await cell('verticalBox').locator('text.bottom').textContent()).toBe('99.98%')
    const bars = cell('barChart').locator('rect.bar')
    expect(await bars.count()).toBe(3)
    expect(await bars.nth(1).getAttribute('fill')).toBe('#7c3aed')
    expect(await bars.nth(1).getAttribute('data-y')).toBe('19.5')
    expect(await cell('barChart').locator('svg').getAttribute('data-x-axis')).toBe('text')
    const line = cell('lineChart').locator('svg')
    expect(await line.getAttribute('data-curve')).toBe('cubic')
    expect(await line.getAttribute('data-x-axis')).toBe('number')
    expect(await cell('lineChart').locator('path.line').getAttribute('d')).toContain(' C ')
    expect(await cell('lineChart').locator('path.area').getAttribute('fill')).toBe('#67e8f9')
    const slices = cell('pieChart').locator('.slice')
    expect(await slices.count()).toBe(3)
    expect(await slices.nth(0).getAttribute('fill')).toBe('#ca8a04')
    expect(await slices.nth(1).getAttribute('fill')).toMatch(/^#[0-9a-f]{6}$/)
    await page.waitForFunction(() => document.querySelector('[data-status]')?.textContent === 'live')
    await page.screenshot({ path: artifactPath('dashboard.png'), fullPage: true })

    // A new bar chart arrives: the page changes without a reload.
    await page.evaluate(() => ((window as any).__marker = 'same page'))
    const updated = { ...SAMPLE_DATA.barChart, points: [...SAMPLE_DATA.barChart.points, { x: 'Thu', y: 25, color: '#16a34a' }] }
    const response = await api.request('POST', '/api/component', { body: { componentId: fx.components.barChart, apiKey: fx.creator.displayApiKey, timestamp: 1_999_999_999, data: updated } })
    expect(response.status).toBe(200)
    await page.waitForFunction((id) => document.querySelectorAll(`#component-${id} rect.bar`).length === 4, fx.components.barChart, { timeout: 3000 })
    expect(await cell('barChart').locator('rect.bar').nth(3).getAttribute('fill')).toBe('#16a34a')
    expect(await page.evaluate(() => (window as any).__marker)).toBe('same page')
    await page.screenshot({ path: artifactPath('dashboard-updated.png'), fullPage: true })
    await page.close()
  })
})
