/**
 * How the live page lays charts out: in dark mode a light component keeps a light card with dark text, kiosk
 * titles grow with the screen, automatic placement fills the half row beside a wide box, and the
 * display model describes the chart fields it documents in OpenAPI.
 */
import { describe, expect, test } from 'bun:test'
import { place, type Placement } from '../../plugins/display/pages/layout'
import { LIGHT_TONE_CARD, LIGHT_TONE_TEXT, LIVE_CSS } from '../../plugins/display/live/client'
import { Component, ComponentData, ComponentInput } from '../../plugins/display/model'
import { contrastText } from '../../plugins/display/charts/render'

/** The declarations of the rule whose selector is exactly `selector`, inside `css`. */
function declarations(css: string, selector: string): Record<string, string> {
  const start = css.indexOf(`${selector} {`)
  expect(start).toBeGreaterThanOrEqual(0)
  const body = css.slice(css.indexOf('{', start) + 1, css.indexOf('}', start))
  return Object.fromEntries(body.split(';').map((part) => part.split(':').map((side) => side.trim())).filter((pair) => pair[0]) as Array<[string, string]>)
}

/** WCAG contrast of two #rrggbb colors. */
function contrast(a: string, b: string): number {
  const luminance = (hex: string) => {
    const [r, g, b] = [1, 3, 5].map((at) => {
      const channel = parseInt(hex.slice(at, at + 2), 16) / 255
      return channel <= 0.04045 ? channel / 12.92 : ((channel + 0.055) / 1.055) ** 2.4
    })
    return 0.2126 * r! + 0.7152 * g! + 0.0722 * b!
  }
  const [x, y] = [luminance(a), luminance(b)].sort((p, q) => q - p)
  return (x! + 0.05) / (y! + 0.05)
}

describe('dark mode', () => {
  test('a component on a light background (#ffffff) gets a light card and dark text in dark mode', () => {
    const dark = LIVE_CSS.slice(LIVE_CSS.indexOf('@media (prefers-color-scheme: dark)'))
    const rule = declarations(dark, '.component:has(> .component-svg[data-tone=light])')
    expect(rule.color).toBe(LIGHT_TONE_TEXT)
    expect(rule.background).toBe(LIGHT_TONE_CARD)
    expect(contrastText('#ffffff')).toBe('#1f2937')
    expect(contrast(LIGHT_TONE_TEXT, LIGHT_TONE_CARD)).toBeGreaterThan(7)
    expect(contrast(LIGHT_TONE_TEXT, '#ffffff')).toBeGreaterThan(7)
  })
})

describe('kiosk titles', () => {
  test('grow with the screen: at least 24 px, about 34 px across a 1920 px screen', () => {
    const size = declarations(LIVE_CSS, 'body.kiosk .component h2')['font-size']!
    const [, least, vw, rem, most] = /^clamp\(([\d.]+)rem, ([\d.]+)vw \+ ([\d.]+)rem, ([\d.]+)rem\)$/.exec(size)!.map(Number)
    const at = (screen: number) => Math.min(most! * 16, Math.max(least! * 16, (vw! * screen) / 100 + rem! * 16))
    expect(at(1280)).toBeGreaterThanOrEqual(24)
    expect(at(1920)).toBeGreaterThanOrEqual(32)
    expect(at(3840)).toBeLessThanOrEqual(48)
  })
})

describe('automatic placement', () => {
  test('the half row beside a wide box is filled by a later chart that fits its width', () => {
    const placed: Placement[] = [place([], { type: 'horizontalBox' })]
    placed.push(place(placed, { type: 'barChart', width: 24 }))
    expect(placed).toEqual([
      { x: 0, y: 0, width: 12, height: 3 },
      { x: 0, y: 3, width: 24, height: 6 },
    ])
    // The three rows beside the box: a chart (6 rows by default) takes them rather than a new row below.
    expect(place(placed, { type: 'lineChart' })).toEqual({ x: 12, y: 0, width: 12, height: 3 })
    expect(place(placed, { type: 'verticalBox' })).toEqual({ x: 12, y: 0, width: 6, height: 3 })
  })

  test('a given height is kept, and a gap under half the default height is left', () => {
    const placed: Placement[] = [
      { x: 0, y: 0, width: 12, height: 2 },
      { x: 0, y: 2, width: 24, height: 6 },
    ]
    expect(place(placed, { type: 'lineChart' })).toEqual({ x: 0, y: 8, width: 12, height: 6 })
    expect(place(placed, { type: 'horizontalBox' })).toEqual({ x: 12, y: 0, width: 12, height: 2 })
    expect(place(placed, { type: 'horizontalBox', height: 3 })).toEqual({ x: 0, y: 8, width: 12, height: 3 })
  })
})

describe('the display model describes its chart fields', () => {
  test('xNumber, cubic, fillColor and both heights say what they mean', () => {
    const line = ComponentData.lineChart.properties
    expect(line.xNumber.description).toContain('numbers')
    expect(ComponentData.barChart.properties.xNumber.description).toBe(line.xNumber.description)
    expect(line.cubic.description).toContain('monotone')
    expect(line.fillColor.description).toContain('zero line')
    expect(line.fillColor.pattern).toBe(line.backgroundColor.pattern)
    expect(line.height.description).toContain('pixels')
    expect(ComponentData.pieChart.properties.height.description).toContain('pixels')
    expect(ComponentInput.properties.height.description).toContain('Grid rows')
    expect(Component.properties.height.description).toContain('Grid rows')
  })
})
