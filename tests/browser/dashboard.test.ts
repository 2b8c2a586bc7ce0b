/**
 * A live dashboard in a real browser: all five component types rendered as SVG people can read
 * (axes with rounded ticks, legends, tooltips, formatted numbers) with the posted colors; the
 * layout at 1280 px and on a 390 px phone (no horizontal scroll, nothing overlapping, text big
 * enough to read); kiosk mode fitting a 1920×1080 screen; a chart that changes in place when an
 * update arrives (no reload).
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import type { Browser, Page } from 'playwright-core'
import { artifactPath, chromiumAvailable, launchChromium } from '../helpers/browser'
import { createDisplayFixture, SAMPLE_DATA, type DisplayFixture, type SampleType } from '../helpers/display-fixture'
import { listen, type Listening } from '../helpers/http'
import { startTestService, type TestService } from '../helpers/service'
import { signInForm } from '../helpers/sessions'

let api: TestService
let site: Listening
let browser: Browser
let fx: DisplayFixture
let cookie: { name: string; value: string; url: string }

/** A reader's page at `width` × `height` (signed in by cookie), once live. */
async function open(width: number, height: number, query = ''): Promise<Page> {
  const context = await browser.newContext({ viewport: { width, height } })
  await context.addCookies([cookie])
  const page = await context.newPage()
  await page.goto(`${site.url}/pages/${fx.pageName}${query}`)
  await page.waitForFunction(() => document.body.dataset.state === 'live')
  return page
}

/** Boxes (in CSS px) of the visible elements matching `selector`. */
const boxes = (page: Page, selector: string) =>
  page.evaluate((selector) => {
    return [...document.querySelectorAll(selector)]
      .filter((element) => (element as HTMLElement).getClientRects().length > 0 && getComputedStyle(element).visibility !== 'hidden')
      .map((element) => {
        const { left, top, right, bottom, height } = element.getBoundingClientRect()
        return { text: element.textContent ?? '', left, top, right, bottom, height }
      })
  }, selector)

type Box = Awaited<ReturnType<typeof boxes>>[number]
const overlap = (a: Box, b: Box) => a.left < b.right - 0.5 && b.left < a.right - 0.5 && a.top < b.bottom - 0.5 && b.top < a.bottom - 0.5

/** Pairs of overlapping boxes among `list` (none expected). */
function overlapping(list: Box[]) {
  const pairs: string[] = []
  for (let i = 0; i < list.length; i++) for (let j = i + 1; j < list.length; j++) if (overlap(list[i]!, list[j]!)) pairs.push(`${list[i]!.text} / ${list[j]!.text}`)
  return pairs
}

/** What a reader must be able to read at any width: no horizontal scroll, cells and texts apart, text at least 9 px tall. */
async function expectReadable(page: Page) {
  expect(await page.evaluate(() => document.documentElement.scrollWidth <= window.innerWidth)).toBe(true)
  expect(overlapping(await boxes(page, 'section.component'))).toEqual([])
  for (const type of Object.keys(SAMPLE_DATA) as SampleType[]) {
    const texts = await boxes(page, `#component-${fx.components[type]} svg text`)
    expect(texts.length).toBeGreaterThan(0)
    expect(overlapping(texts)).toEqual([])
    for (const text of texts) expect(text.height).toBeGreaterThanOrEqual(9)
  }
}

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
    const session = await api.request('POST', '/account/api/sessions', { body: { email: fx.reader.email, password: 'reader password' } })
    expect(session.status).toBe(201)
    // The web pages take the web session of the sign-in form; the mobile token is not one.
    const { token } = await signInForm(api, fx.reader)
    cookie = { name: 'wt_session', value: token, url: site.url }
    browser = await launchChromium()
  })
  afterAll(async () => {
    await browser?.close()
    site?.stop()
    await api?.stop()
  })

  test('every type shows its values: box texts and colors, axes with rounded ticks, a pie legend with shares, a tooltip on every mark', async () => {
    const page = await open(1280, 900)
    const cell = (type: SampleType) => page.locator(`#component-${fx.components[type]}`)
    const wide = (type: SampleType) => cell(type).locator('svg.wide')

    const box = cell('horizontalBox')
    expect(await box.locator('rect.background').getAttribute('fill')).toBe('#1e293b')
    expect(await box.locator('text.middle').textContent()).toBe('1,204')
    expect(await box.locator('text.middle').getAttribute('fill')).toBe('#38bdf8')
    expect(await box.locator('text.middle').getAttribute('font-size')).toBe('32')
    expect(await cell('verticalBox').locator('text.bottom').textContent()).toBe('99.98%')

    // Bar chart 12, 19.5, 7: ticks 0..20 by 5, a gridline each, a value label and a tooltip per bar.
    const bars = wide('barChart').locator('rect.bar')
    expect(await bars.count()).toBe(3)
    expect(await bars.nth(1).getAttribute('fill')).toBe('#7c3aed')
    expect(await wide('barChart').locator('text.tick').allTextContents()).toEqual(['0', '5', '10', '15', '20'])
    expect(await wide('barChart').locator('line.grid').count()).toBe(5)
    expect(await wide('barChart').locator('text.x-label').allTextContents()).toEqual(['Mon', 'Tue', 'Wed'])
    expect(await wide('barChart').locator('text.value-label').allTextContents()).toEqual(['12', '19.5', '7'])
    expect(await wide('barChart').locator('rect.bar > title').allTextContents()).toEqual(['Mon: 12', 'Tue: 19.5', 'Wed: 7'])
    expect(await wide('barChart').getAttribute('role')).toBe('img')
    expect(await wide('barChart').getAttribute('aria-label')).toBe('Bar chart, 3 bars: Mon 12, Tue 19.5, Wed 7')
    // A bar's height matches its value on the axis: 19.5 / 20 of the 0..20 span.
    const [zero, twenty] = await Promise.all([wide('barChart').locator('text.tick').first().boundingBox(), wide('barChart').locator('text.tick').last().boundingBox()])
    const tallest = (await bars.nth(1).boundingBox())!
    const span = zero!.y - twenty!.y
    expect(Math.abs(tallest.height - (span * 19.5) / 20)).toBeLessThan(2)

    // Line chart 3, 8, 5 on a numeric x axis: ticks 0..8, a tooltip per point, the cubic path.
    const line = wide('lineChart')
    expect(await line.getAttribute('data-curve')).toBe('cubic')
    expect(await line.getAttribute('data-x-axis')).toBe('number')
    expect(await line.locator('path.line').getAttribute('d')).toContain(' C ')
    expect(await line.locator('path.area').getAttribute('fill')).toBe('#67e8f9')
    expect(await line.locator('text.tick').allTextContents()).toEqual(['0', '2', '4', '6', '8'])
    expect(await line.locator('circle.point > title').allTextContents()).toEqual(['1: 3', '2: 8', '4: 5'])

    // Pie 60 / 30 / 10 with one empty color: a legend with the shares, a palette color, tooltips.
    const pie = wide('pieChart')
    const slices = pie.locator('.slice')
    expect(await slices.count()).toBe(3)
    expect(await slices.nth(0).getAttribute('fill')).toBe('#ca8a04')
    const palette = await slices.nth(1).getAttribute('fill')
    expect(palette).toMatch(/^#[0-9a-f]{6}$/)
    expect(['#ff0000', '#000000', '#e15759']).not.toContain(palette!)
    expect(await pie.locator('g.legend text.legend-label').allTextContents()).toEqual(['A 60%', 'B 30%', 'C 10%'])
    expect(await pie.locator('.slice > title').allTextContents()).toEqual(['A: 60 (60%)', 'B: 30 (30%)', 'C: 10 (10%)'])
    expect(await pie.getAttribute('aria-label')).toBe('Pie chart: A 60%, B 30%, C 10%')

    // Hovering a bar shows its tooltip: the browser reads it from the <title>.
    expect(await bars.nth(0).evaluate((bar) => bar.querySelector('title')?.textContent)).toBe('Mon: 12')
    await page.screenshot({ path: artifactPath('dashboard.png'), fullPage: true })
    await page.context().close()
  })

  test('at 1280 px: components side by side in their grid places, nothing overlaps, no horizontal scroll', async () => {
    const page = await open(1280, 900)
    await expectReadable(page)
    const bar = (await page.locator(`#component-${fx.components.barChart}`).boundingBox())!
    const line = (await page.locator(`#component-${fx.components.lineChart}`).boundingBox())!
    expect(Math.abs(bar.y - line.y)).toBeLessThan(1)
    expect(line.x).toBeGreaterThan(bar.x + bar.width)
    expect(await page.locator(`#component-${fx.components.barChart} svg.wide`).isVisible()).toBe(true)
    expect(await page.locator(`#component-${fx.components.barChart} svg.narrow`).isVisible()).toBe(false)
    await page.context().close()
  })

  test('at 390 px: one column in grid order, the narrow charts, readable text, no horizontal scroll', async () => {
    const page = await open(390, 844)
    await expectReadable(page)
    const cells = await boxes(page, 'section.component')
    expect(cells.length).toBe(5)
    for (const cell of cells) {
      expect(Math.abs(cell.left - cells[0]!.left)).toBeLessThan(1)
      expect(cell.right).toBeLessThanOrEqual(390)
    }
    for (let i = 1; i < cells.length; i++) expect(cells[i]!.top).toBeGreaterThanOrEqual(cells[i - 1]!.bottom)
    expect(await page.locator(`#component-${fx.components.barChart} svg.narrow`).isVisible()).toBe(true)
    expect(await page.locator(`#component-${fx.components.barChart} svg.wide`).isVisible()).toBe(false)
    expect(await page.locator(`#component-${fx.components.pieChart} svg.narrow text.legend-label`).allTextContents()).toEqual(['A 60%', 'B 30%', 'C 10%'])
    await page.screenshot({ path: artifactPath('dashboard-390.png'), fullPage: true })
    await page.context().close()
  })

  test('kiosk at 1920×1080: no header, the components fill the screen without scrolling, larger titles and chart text, box numbers bigger still', async () => {
    const page = await open(1920, 1080, '?kiosk=1')
    expect(await page.locator('header').isVisible()).toBe(false)
    expect(await page.evaluate(() => document.documentElement.scrollHeight <= window.innerHeight && document.documentElement.scrollWidth <= window.innerWidth)).toBe(true)
    for (const cell of await boxes(page, 'section.component')) {
      expect(cell.bottom).toBeLessThanOrEqual(1080 + 0.5)
      expect(cell.right).toBeLessThanOrEqual(1920 + 0.5)
    }
    expect(overlapping(await boxes(page, 'section.component'))).toEqual([])
    // Fitted, not shrunk: the components fill the screen's height and their text is larger than on the desktop page.
    const cells = await boxes(page, 'section.component')
    expect(Math.max(...cells.map((cell) => cell.bottom))).toBeGreaterThan(1080 * 0.9)
    const tick = (await boxes(page, `#component-${fx.components.barChart} svg.wide text.tick`))[0]!
    expect(tick.height).toBeGreaterThan(13)
    const kioskTitle = await page.locator('section.component h2').first().evaluate((title) => parseFloat(getComputedStyle(title).fontSize))
    expect(kioskTitle).toBeGreaterThan(18)
    // A box's number reads across the room: drawn at twice its card's title or more (its size on
    // screen: the text's font size in the SVG's units times the scale the fitted SVG is drawn at),
    // and clear of the box's other texts.
    for (const [type, part] of [['horizontalBox', 'middle'], ['verticalBox', 'bottom']] as const) {
      const sizes = await page.locator(`#component-${fx.components[type]}`).evaluate((cell, part) => {
        const value = cell.querySelector<SVGTextElement>(`svg text.${part}`)!
        return { title: parseFloat(getComputedStyle(cell.querySelector('h2')!).fontSize), value: parseFloat(getComputedStyle(value).fontSize) * value.getScreenCTM()!.a }
      }, part)
      expect({ type, twiceTheTitle: sizes.value >= 2 * sizes.title, ...sizes }).toMatchObject({ type, twiceTheTitle: true })
      expect(overlapping(await boxes(page, `#component-${fx.components[type]} svg text`))).toEqual([])
    }
    await page.screenshot({ path: artifactPath('dashboard-kiosk.png') })
    await page.context().close()
  })

  test('the landing page and a missing dashboard page are styled like the others: their stylesheets load under the pages\' CSP', async () => {
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 } })
    await context.addCookies([cookie])
    const page = await context.newPage()
    const refusals: string[] = []
    page.on('console', (message) => void (/Content Security Policy|Refused to/i.test(message.text()) && refusals.push(message.text())))
    /** What a stylesheet changed: the body's margin and font (the browser's own are 8px and a serif), and its rules. */
    const look = () =>
      page.evaluate(() => ({
        margin: getComputedStyle(document.body).margin,
        system: getComputedStyle(document.body).fontFamily.includes('system-ui'),
        rules: [...document.styleSheets].reduce((count, sheet) => count + sheet.cssRules.length, 0),
      }))

    expect((await page.goto(`${site.url}/`))!.status()).toBe(200)
    expect(await look()).toMatchObject({ margin: '0px', system: true })
    expect((await look()).rules).toBeGreaterThan(10)
    expect(await page.locator('ul.cards li.card').count()).toBeGreaterThanOrEqual(3)
    expect(await page.locator('ul.cards').evaluate((list) => getComputedStyle(list).display)).toBe('grid')

    expect((await page.goto(`${site.url}/pages/no-such-page`))!.status()).toBe(404)
    expect(await look()).toMatchObject({ margin: '0px', system: true })
    expect(await page.locator('main').textContent()).toContain('No such page, or not one you can see.')
    expect(await page.locator('header a[href="/pages"]').count()).toBe(1)
    expect(refusals).toEqual([])
    await context.close()
  })

  test('an update changes a chart in place, without a reload', async () => {
    const page = await open(1280, 900)
    await page.evaluate(() => ((window as any).__marker = 'same page'))
    const updated = { ...SAMPLE_DATA.barChart, points: [...SAMPLE_DATA.barChart.points.map((point) => ({ ...point, y: point.y * 2 })), { x: 'Thu', y: 25, color: '#16a34a' }] }
    const response = await api.request('POST', '/api/component', { body: { componentId: fx.components.barChart, apiKey: fx.creator.displayApiKey, timestamp: 1_999_999_999, data: updated } })
    expect(response.status).toBe(200)
    const bars = `#component-${fx.components.barChart} svg.wide rect.bar`
    await page.waitForFunction((selector) => document.querySelectorAll(selector).length === 4, bars, { timeout: 3000 })
    expect(await page.locator(bars).nth(3).getAttribute('fill')).toBe('#16a34a')
    // Doubled values: the axis says so.
    expect(await page.locator(`#component-${fx.components.barChart} svg.wide text.tick`).allTextContents()).toEqual(['0', '10', '20', '30', '40'])
    expect(await page.evaluate(() => (window as any).__marker)).toBe('same page')
    await page.screenshot({ path: artifactPath('dashboard-updated.png'), fullPage: true })
    await page.context().close()
  })
})
