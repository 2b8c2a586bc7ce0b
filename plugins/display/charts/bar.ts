/** The bar chart: a pure function of its data, its width in columns and its mark budgets' scale. */
import { html, type Html } from '../../../src/http/html'
import type { ComponentDataOf } from '../model'
import { axes, plot, series, subseries } from './bar-line'
import { FONT, plural, round, summaryItem, summaryList, textWidth } from './common'
import { joined, markRoom, noPoints, variants } from './frame'
import { fitMarks, PointMarks } from './marks'
import { formatValue } from './number-format'

const MAX_BAR_WIDTH = 96
const MAX_VALUE_LABELS = 60
/** Bytes of a bar's shape besides its mark's text. */
const BAR_SHAPE = { point: 80, group: 80 }

/**
 * Bars from the zero line, their values above (below, if negative) when every value fits its
 * slot. More bars than fit (marks.ts) are drawn in groups: each group's bar is its peak.
 */
export function barChart(data: ComponentDataOf<'barChart'>, columns: number, scale: number): Html {
  const bars = series(data)
  const label = bars.points.length
    ? `Bar chart, ${plural(bars.points.length, 'bar')}: ${summaryList(bars.points.map((point) => summaryItem(point.x, formatValue(point.y, data.format))))}`
    : 'Bar chart, no points'
  const attributes = html` data-x-axis="${bars.numeric ? 'number' : 'text'}"`
  const singles = new PointMarks(bars.points)
  const values = bars.points.length <= MAX_VALUE_LABELS ? bars.points.map((point) => formatValue(point.y, data.format)) : []
  return variants(data, columns, scale, label, attributes, (width, ink, markBytes) => {
    if (!bars.points.length) return noPoints(width, data.height, ink)
    const fitted = fitMarks(bars.points, singles, markRoom(width), markBytes, BAR_SHAPE, 'bar')
    const shown = fitted.groups ? subseries(bars, fitted.groups.map((group) => group.peak)) : bars
    const marks = fitted.marks
    const geometry = plot(shown, width, data.height, true)
    const barWidth = round(Math.max(1, Math.min(geometry.spacing * 0.7, MAX_BAR_WIDTH)))
    const labelled = !fitted.groups && geometry.axes && values.length > 0 && values.every((value) => textWidth(value) + 2 <= geometry.spacing)
    return html`${axes(geometry, ink)}
  <g class="bars">${joined(
    shown.points.map((point, i) => {
      const y = geometry.y(point.y)
      return `<rect class="bar"${marks[i]!.attributes} x="${round(geometry.xs[i]! - barWidth / 2)}" y="${Math.min(y, geometry.zero)}" width="${barWidth}" height="${round(Math.abs(geometry.zero - y))}">${marks[i]!.title}</rect>`
    }),
  )}</g>
  ${labelled
    ? html`<g class="value-labels" text-anchor="middle" font-size="${FONT}" fill="${ink}">${bars.points.map((point, i) => {
        const y = geometry.y(point.y)
        return html`<text class="value-label" x="${geometry.xs[i]}" y="${round(point.y < 0 ? y + FONT + 2 : y - 4)}">${values[i]}</text>`
      })}</g>`
    : ''}`
  })
}
