/**
 * How charts are drawn, read back from the SVG: a cubic line is a monotone curve that
 * never leaves the range of the points it joins, `format: "exact"` writes every digit, and each
 * drawing says whether its background is light (`data-tone`) for the live page's dark mode.
 */
import { describe, expect, test } from 'bun:test'
import { TypeCompiler } from '@sinclair/typebox/compiler'
import { ComponentData } from '../../plugins/display/model'
import { formatBoxValue, formatExact, formatValue } from '../../plugins/display/charts/number-format'
import { renderComponent, toneOf, type Data } from '../../plugins/display/charts/render'

const line = (ys: number[], extra: Record<string, unknown> = {}): Data => ({
  type: 'lineChart',
  backgroundColor: '#ffffff',
  cubic: true,
  xNumber: false,
  fillColor: '#67e8f9',
  height: 240,
  points: ys.map((y, i) => ({ x: `p${i}`, y, color: '#2563eb' })),
  ...extra,
})

/** The points (start, controls, end) of each cubic segment of the `path.line` of every variant. */
function segments(markup: string): Array<Array<[number, number]>> {
  const found: Array<Array<[number, number]>> = []
  for (const [, d] of markup.matchAll(/<path class="line" d="([^"]*)"/g)) {
    const numbers = d!.match(/-?\d+(?:\.\d+)?/g)!.map(Number)
    const pairs: Array<[number, number]> = []
    for (let i = 0; i < numbers.length; i += 2) pairs.push([numbers[i]!, numbers[i + 1]!])
    for (let i = 0; i + 3 < pairs.length; i += 3) found.push(pairs.slice(i, i + 4))
  }
  return found
}

/** Samples of a cubic Bézier's y. */
const curveYs = ([p0, p1, p2, p3]: Array<[number, number]>) =>
  Array.from({ length: 21 }, (_, k) => {
    const t = k / 20
    return (1 - t) ** 3 * p0![1] + 3 * (1 - t) ** 2 * t * p1![1] + 3 * (1 - t) * t ** 2 * p2![1] + t ** 3 * p3![1]
  })

describe('a cubic line is monotone between its points', () => {
  test.each([
    ['a sharp peak', [0, 0, 100, 0, 0]],
    ['a step', [10, 10, 10, 90, 90, 90]],
    ['a valley below zero', [5, 5, -80, 5, 5]],
    ['a rise that flattens', [0, 80, 99, 100, 100, 100]],
  ])('%s: every segment stays between the y of the two points it joins', (_, ys) => {
    const drawn = segments(renderComponent('lineChart', line(ys)).value)
    expect(drawn.length).toBe(2 * (ys.length - 1))
    for (const segment of drawn) {
      const [low, high] = [Math.min(segment[0]![1], segment[3]![1]), Math.max(segment[0]![1], segment[3]![1])]
      for (const y of curveYs(segment)) {
        expect(y).toBeGreaterThanOrEqual(low - 1e-9)
        expect(y).toBeLessThanOrEqual(high + 1e-9)
      }
    }
  })

  test('the highest points are the highest drawn: no overshoot above a plateau (SVG y grows downwards)', () => {
    const markup = renderComponent('lineChart', line([0, 60, 100, 100, 40])).value
    const peak = Math.min(...[...markup.matchAll(/<circle class="point"[^>]* cy="([^"]+)"/g)].map(([, cy]) => Number(cy)))
    for (const segment of segments(markup)) for (const [, y] of segment) expect(y).toBeGreaterThanOrEqual(peak)
  })

  test('still smooth: a rising run bends through its points (not straight segments)', () => {
    const markup = renderComponent('lineChart', line([0, 30, 100, 130])).value
    const [first, second] = segments(markup)
    expect(first![2]![1]).not.toBe(first![3]![1] - (first![3]![1] - first![0]![1]) / 3)
    expect(markup).toContain('data-curve="cubic"')
    // Equal x on a numeric axis: finite coordinates, no NaN.
    const equal = renderComponent('lineChart', line([1, 5, 3], { xNumber: true, points: [1, 5, 3].map((y) => ({ x: '2', y, color: '#2563eb' })) })).value
    expect(/NaN|Infinity/.test(equal)).toBe(false)
    expect(second).toBeDefined()
  })
})

describe('format: "exact"', () => {
  const box = (value: string, format?: string): Data => ({
    type: 'verticalBox',
    backgroundColor: '#ffffff',
    topText: { value: 'Orders', size: 16, color: '#111111' },
    bottomText: { value, size: 28, color: '#111111' },
    ...(format ? { format } : {}),
  })
  const bottom = (markup: string) => /<text class="bottom"[^>]*>([^<]*)<\/text>/.exec(markup)![1]

  test('a box shows 51990 as 51,990 with exact, and as 52k by default or with compact', () => {
    expect(bottom(renderComponent('verticalBox', box('51990', 'exact')).value)).toBe('51,990')
    expect(bottom(renderComponent('verticalBox', box('51990')).value)).toBe('52k')
    expect(bottom(renderComponent('verticalBox', box('51990', 'compact')).value)).toBe('52k')
    expect(renderComponent('verticalBox', box('51990', 'exact')).value).toContain('aria-label="Vertical box: Orders, 51,990"')
  })

  test('exact keeps every posted digit, grouped; other texts stay as posted', () => {
    expect(formatBoxValue('-12500.50', 'exact')).toBe('-12,500.50')
    expect(formatBoxValue('1234567890123456789', 'exact')).toBe('1,234,567,890,123,456,789')
    expect(formatBoxValue('999', 'exact')).toBe('999')
    for (const text of ['1,204', '99.98%', 'Orders', '007', '1e5']) expect(formatBoxValue(text, 'exact')).toBe(text)
    expect(formatExact(51_990)).toBe('51,990')
    expect(formatExact(-0.125)).toBe('-0.125')
    expect(formatExact(1e21)).toBe('1e+21')
    expect(formatValue(51_990)).toBe('52k')
  })

  test('charts: bar value labels and pie legend values are exact too', () => {
    const bars = renderComponent('barChart', { type: 'barChart', backgroundColor: '#ffffff', xNumber: false, height: 240, format: 'exact', points: [{ x: 'Mon', y: 51_990, color: '#2563eb' }] }).value
    expect(bars).toContain('>51,990</text>')
    expect(bars).not.toContain('>52k</text>')
    const pie = renderComponent('pieChart', { type: 'pieChart', backgroundColor: '#ffffff', height: 240, format: 'exact', points: [{ x: 'A', y: 51_990, color: '' }] }).value
    expect(pie).toContain('>51,990</text>')
  })

  test('the model accepts format compact or exact (optional) on every type, and refuses any other', () => {
    const check = TypeCompiler.Compile(ComponentData.verticalBox)
    expect(check.Check(box('1'))).toBe(true)
    expect(check.Check(box('1', 'exact'))).toBe(true)
    expect(check.Check(box('1', 'compact'))).toBe(true)
    expect(check.Check(box('1', 'full'))).toBe(false)
    for (const schema of Object.values(ComponentData)) expect(Object.keys(schema.properties)).toContain('format')
  })
})

describe('light backgrounds in dark mode', () => {
  test('a light background by relative luminance is tone light (dark text), a dark one tone dark', () => {
    expect(toneOf('#ffffff')).toBe('light')
    expect(toneOf('#fff')).toBe('light')
    expect(toneOf('#fefce8')).toBe('light')
    expect(toneOf('#1e293b')).toBe('dark')
    expect(toneOf('#000000')).toBe('dark')
  })

  test('boxes and both chart variants carry their tone', () => {
    const white = renderComponent('horizontalBox', {
      type: 'horizontalBox',
      backgroundColor: '#ffffff',
      leftText: { value: 'a', size: 12, color: '#111111' },
      middleText: { value: 'b', size: 12, color: '#111111' },
      rightText: { value: 'c', size: 12, color: '#111111' },
    }).value
    expect(white).toContain('data-tone="light"')
    const dark = renderComponent('lineChart', line([1, 2, 3], { backgroundColor: '#0b1220' })).value
    expect(dark.match(/<svg [^>]*data-tone="dark"/g)?.length).toBe(2)
    expect(renderComponent('barChart', null).value).not.toContain('data-tone')
  })
})
