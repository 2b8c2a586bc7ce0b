/**
 * Large series in a real browser (headless Chromium), through a share link: charts of 1,000
 * points are drawn summarised (a bar per group, its tooltip naming the group's range), readable
 * (labels apart, no horizontal scroll) and live; the largest page a default service allows loads
 * whole and goes live; past the per-address view limit the link answers a page saying to wait.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import type { Browser } from 'playwright-core'
import { artifactPath, chromiumAvailable, launchChromium } from '../helpers/browser'
import { largestFill } from '../helpers/display-fixture'
import { listen, type Listening } from '../helpers/http'
import { startTestService, type TestService } from '../helpers/service'
import { timeLimit } from '../helpers/database'

const skip = chromiumAvailable ? undefined : 'needs /usr/bin/chromium'
let api: TestService
let site: Listening
let browser: Browser
let key: string
let apiKey: string
let timestamp = 1_700_000_000

async function v1(method: string, path: string, body?: unknown) {
  const response = await api.request(method, path, { key, body, unchecked: true })
  if (response.status >= 300) throw new Error(`${method} ${path}: ${response.status} ${response.text}`)
  return response.body.data
}

/** A page of `count` components of `data`'s type, each fed `data`; its share link's URL. */
async function sharedPage(name: string, data: Record<string, any> & { type: string }, count: number, width = 12): Promise<string> {
  const page = await v1('POST', '/api/v1/pages', { name })
  for (let i = 0; i < count; i++) {
    const component = await v1('POST', `/api/v1/pages/${page.id}/components`, { type: data.type, title: `${data.type} ${i}`, width })
    const posted = await api.request('POST', '/api/component', { body: { componentId: component.id, apiKey, timestamp: ++timestamp, data }, unchecked: true })
    if (posted.status !== 200) throw new Error(`POST /api/component: ${posted.status} ${posted.text}`)
  }
  return (await v1('POST', `/api/v1/pages/${page.id}/share-links`, {})).url
}

beforeAll(async () => {
  if (skip) return
  api = await startTestService({ plugins: ['auth', 'teams', 'display'], config: { display: { sharedViewsPerAddressPerMinute: 12 } } })
  site = listen(api)
  const organizationId = await api.createOrganization()
  const user = await api.createUser(organizationId)
  apiKey = user.displayApiKey!
  key = (await api.createKey(user.id, ['dashboards:read', 'dashboards:write'])).secret
  browser = await launchChromium()
}, timeLimit(60_000))
afterAll(async () => {
  await browser?.close()
  site?.stop()
  await api?.stop()
})

describe('large series in Chromium', () => {
  test.skipIf(Boolean(skip))(`1,000-point charts are drawn summarised, readable and live${skip ? ` (skipped: ${skip})` : ''}`, async () => {
    const points = Array.from({ length: 1000 }, (_, i) => ({ x: `2026-01-${String((i % 28) + 1).padStart(2, '0')} ${String(i % 24).padStart(2, '0')}:00 sensor ${i}`, y: i === 500 ? 900 : Math.round(200 + Math.sin(i / 40) * 150), color: '#2563eb' }))
    const url = await sharedPage('thousand-bars', { type: 'barChart', backgroundColor: '#ffffff', xNumber: false, height: 260, points }, 2)
    for (const [width, height] of [[1280, 900], [390, 844]] as const) {
      const context = await browser.newContext({ viewport: { width, height } })
      const page = await context.newPage()
      await page.goto(`${site.url}${url}`)
      await page.waitForFunction(() => document.body.dataset.state === 'live')
      const shown = await page.evaluate(() => {
        const svg = [...document.querySelectorAll('section.component svg.chart')].find((element) => element.getClientRects().length > 0)!
        const bars = [...svg.querySelectorAll('rect.bar')]
        const labels = [...svg.querySelectorAll('text.x-label')].map((label) => label.getBoundingClientRect())
        return {
          bars: bars.length,
          counted: bars.reduce((sum, bar) => sum + Number(bar.getAttribute('data-count') ?? 1), 0),
          peak: bars.find((bar) => bar.getAttribute('data-y') === '900')?.querySelector('title')?.textContent ?? null,
          labelsApart: labels.every((label, i) => i === 0 || label.left >= labels[i - 1]!.right),
          scrolls: document.documentElement.scrollWidth > window.innerWidth,
        }
      })
      expect(shown.bars).toBeGreaterThan(10)
      expect(shown.bars).toBeLessThan(1000)
      expect(shown.counted).toBe(1000)
      expect(shown.peak).toMatch(/^2026-01-\d\d \d\d:00 sensor \d+ – 2026-01-\d\d \d\d:00 sensor \d+: [\d,.]+ to 900 \(\d+ bars\)$/)
      expect(shown.labelsApart).toBe(true)
      expect(shown.scrolls).toBe(false)
      await page.screenshot({ path: artifactPath(`display-thousand-bars-${width}.png`) })
      await context.close()
    }
  }, timeLimit(60_000))

  test.skipIf(Boolean(skip))(`the largest page loads whole and goes live; past the per-address limit the link says to wait${skip ? ` (skipped: ${skip})` : ''}`, async () => {
    const url = await sharedPage('largest-shared', largestFill(), 100, 24)
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 } })
    const page = await context.newPage()
    const errors: string[] = []
    page.on('pageerror', (error) => errors.push(error.message))
    await page.goto(`${site.url}${url}`)
    await page.waitForFunction(() => document.body.dataset.state === 'live', undefined, { timeout: 30_000 })
    expect(await page.evaluate(() => document.querySelectorAll('section.component svg.chart').length)).toBe(200)
    expect(errors).toEqual([])
    // Views of shared pages from this address so far: the pages and streams above; the rest of 12 now.
    let answer = await page.goto(`${site.url}${url}`)
    for (let views = 1; views < 12 && answer!.status() === 200; views++) answer = await page.goto(`${site.url}${url}`)
    expect(answer!.status()).toBe(429)
    expect(Number(answer!.headers()['retry-after'])).toBeGreaterThan(0)
    expect(await page.textContent('body')).toMatch(/Too many views of shared pages; try again in \d+ s\./)
    await context.close()
  }, 120_000)
})
