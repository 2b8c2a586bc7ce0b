/** The pie chart: a pure function of its data, its width in columns and its mark budgets' scale. */
import { escapeHtml, html, Html } from '../../../src/http/html'
import type { ComponentDataOf } from '../model'
import { CHAR_WIDTH, clamp, contrastText, FONT, LABEL_GAP, PAD, plural, round, summaryItem, summaryList, textWidth } from './common'
import { joined, noPoints, variants } from './frame'
import { mark, markLength, MIN_MARK_UNITS, truncate, utf8Length, type Mark, type Point } from './marks'
import { formatFull, formatPercent, formatValue, type NumberFormat } from './number-format'

/** Fill of pie points posted without a color: no red, no black, neighbours differ. */
const PALETTE = ['#4e79a7', '#f28e2b', '#76b7b2', '#59a14f', '#edc948', '#b07aa1', '#9c755f', '#17becf', '#bcbd22', '#8c8c8c']
const MAX_LEGEND_ROWS = 8
const LEGEND_ROW = 18
const SWATCH = 10
const MIN_LEGEND_WIDTH = 60
const MAX_LEGEND_WIDTH = 280
/** Bytes of a slice's shape besides its mark's text. */
const SLICE_SHAPE = 110
/** Fill of the slice that gathers the pie's smallest slices when they are too many to draw. */
const OTHERS_COLOR = '#9ca3af'

interface Slice {
  point: Point
  color: string
  /** "60%", "<0.1%", "0%" or "—". */
  percent: string
  /** Its tooltip and attributes (made when first asked for: most slices of a large pie are never drawn). */
  readonly mark: Mark
}

/** Each point with its color (a palette color when posted without one) and its share of the positive total. */
function slices(points: Point[]): { slices: Slice[]; total: number } {
  const total = points.reduce((sum, point) => sum + Math.max(0, point.y), 0)
  return {
    total,
    slices: points.map((point, i) => {
      const color = point.color || PALETTE[i % PALETTE.length]!
      const percent = formatPercent(point.y, total)
      let made: Mark | undefined
      return {
        point,
        color,
        percent,
        get mark() {
          return (made ??= mark(point, color, ` (${percent})`))
        },
      }
    }),
  }
}

/** The legend rows that fit: every point in order, or the largest ones and a "N more" row. */
function legendRows(all: Slice[], height: number): { rows: Slice[]; more: number } {
  const fit = Math.floor((height - 2 * PAD) / LEGEND_ROW)
  if (all.length <= Math.min(fit, MAX_LEGEND_ROWS)) return { rows: all, more: 0 }
  const shown = Math.max(0, Math.min(fit - 1, MAX_LEGEND_ROWS))
  const rows = all
    .map((slice, i) => ({ slice, i }))
    .sort((a, b) => b.slice.point.y - a.slice.point.y || a.i - b.i)
    .slice(0, shown)
    .map((entry) => entry.slice)
  return { rows, more: all.length - shown }
}

/** Swatch, "Name 60%" and the value of each row, right of the pie. */
function legend(rows: Slice[], more: number, x: number, width: number, height: number, ink: string, format: NumberFormat | undefined): Html {
  const count = rows.length + (more ? 1 : 0)
  const top = round((height - count * LEGEND_ROW) / 2)
  const valueRight = round(x + width)
  return html`<g class="legend" font-size="${FONT}" fill="${ink}">${rows.map((slice, i) => {
    const y = top + i * LEGEND_ROW
    const value = formatValue(slice.point.y, format)
    const room = width - SWATCH - LABEL_GAP * 2 - textWidth(value) - textWidth(` ${slice.percent}`)
    const name = truncate(slice.point.x, Math.max(1, Math.floor(room / (FONT * CHAR_WIDTH))))
    return html`<g class="legend-row">${new Html(slice.mark.title)}<rect class="swatch" x="${x}" y="${round(y + 4)}" width="${SWATCH}" height="${SWATCH}" rx="2" fill="${slice.color}" /><text class="legend-label" x="${x + SWATCH + LABEL_GAP}" y="${round(y + 13)}">${name} ${slice.percent}</text><text class="legend-value" x="${valueRight}" y="${round(y + 13)}" text-anchor="end" fill-opacity="0.75">${value}</text></g>`
  })}${more ? html`<text class="legend-more" x="${x + SWATCH + LABEL_GAP}" y="${round(top + rows.length * LEGEND_ROW + 13)}">${rows.length ? `${more} more` : plural(more, 'item')}</text>` : ''}</g>`
}

/** The slice from angle `start` to `end` (radians), with its tooltip: a circle when it is the whole pie. */
function sliceShape(slice: Slice, cx: number, cy: number, radius: number, start: number, end: number): string {
  const { attributes, title } = slice.mark
  if (end - start >= 2 * Math.PI - 1e-6) return `<circle class="slice"${attributes} cx="${cx}" cy="${cy}" r="${radius}">${title}</circle>`
  const large = end - start > Math.PI ? 1 : 0
  const [x1, y1] = [round(cx + radius * Math.cos(start)), round(cy + radius * Math.sin(start))]
  const [x2, y2] = [round(cx + radius * Math.cos(end)), round(cy + radius * Math.sin(end))]
  return `<path class="slice"${attributes} d="M ${cx} ${cy} L ${x1} ${y1} A ${radius} ${radius} 0 ${large} 1 ${x2} ${y2} Z">${title}</path>`
}

/** The percent of a slice written on it, when the slice is wide enough to hold it. */
function sliceLabel(slice: Slice, cx: number, cy: number, radius: number, start: number, end: number): Html | '' {
  if (radius < 40 || (end - start) * radius * 0.62 < textWidth(slice.percent) + LABEL_GAP) return ''
  const middle = (start + end) / 2
  const x = round(cx + radius * 0.62 * Math.cos(middle))
  const y = round(cy + radius * 0.62 * Math.sin(middle))
  return html`<text class="slice-label" x="${x}" y="${round(y + FONT * 0.35)}" text-anchor="middle" font-size="${FONT}" fill="${contrastText(slice.color)}">${slice.percent}</text>`
}

/** Bytes of a slice's mark, counted without making it. */
const sliceBytes = (slice: Slice) => markLength(slice.point, slice.color, ` (${slice.percent})`)

/** The slice gathering `count` slices worth `value` of a pie's `total`: "N others". */
function othersSlice(count: number, value: number, total: number): Slice {
  const percent = formatPercent(value, total)
  return {
    point: { x: `${count} others`, y: value, color: OTHERS_COLOR },
    color: OTHERS_COLOR,
    percent,
    mark: {
      attributes: ` data-x="${count} others" data-y="${escapeHtml(String(value))}" data-count="${count}" fill="${OTHERS_COLOR}"`,
      title: `<title>${count} others: ${escapeHtml(`${formatFull(value)} (${percent})`)}</title>`,
    },
  }
}

/** The positive slices of a pie with what fitting them needs: each one's bytes, and their order from the largest. */
interface PieSlices {
  slices: Slice[]
  bytes: number[]
  largest: number[]
  total: number
}

/**
 * The slices a variant draws: every positive one while `room` slices and `budget` bytes hold them
 * all, otherwise the largest ones (in their order) and one slice gathering the rest, "N others".
 */
function fitSlices(pie: PieSlices, room: number, budget: number): Slice[] {
  const { slices: positive, bytes, largest } = pie
  if (positive.length <= room && bytes.reduce((sum, size) => sum + size, 0) + positive.length * SLICE_SHAPE <= budget) return positive
  // The most slices (the largest, then "others") whose bytes fit; "others" is about 200 bytes and is measured below.
  let count = 1
  for (let kept = 0; count < Math.min(room, positive.length) && kept + bytes[largest[count - 1]!]! + 200 + (count + 1) * SLICE_SHAPE <= budget; count++) kept += bytes[largest[count - 1]!]!
  for (;;) {
    const kept = new Set(largest.slice(0, count - 1))
    let rest = 0
    for (const [i, slice] of positive.entries()) if (!kept.has(i)) rest += slice.point.y
    const others = othersSlice(positive.length - kept.size, rest, pie.total)
    const size = [...kept].reduce((sum, i) => sum + bytes[i]!, sliceBytes(others)) + count * SLICE_SHAPE
    if (size <= budget || count === 1) return [...positive.filter((_, i) => kept.has(i)), others]
    count--
  }
}

/** Slices of the positive values from 12 o'clock clockwise, and a legend of every point beside the pie. */
export function pieChart(data: ComponentDataOf<'pieChart'>, columns: number, scale: number): Html {
  const points: Point[] = data.points
  const height: number = data.height
  const pie = slices(points)
  const positive = pie.slices.filter((slice) => slice.point.y > 0)
  const fitting: PieSlices = {
    slices: positive,
    bytes: positive.map(sliceBytes),
    largest: positive.map((_, i) => i).sort((a, b) => positive[b]!.point.y - positive[a]!.point.y || a - b),
    total: pie.total,
  }
  const label = points.length ? `Pie chart: ${summaryList(pie.slices.map((slice) => summaryItem(slice.point.x, slice.percent)))}` : 'Pie chart, no points'
  const { rows, more } = legendRows(pie.slices, height)
  const legendContent = Math.max(
    textWidth(`${more} more`),
    ...rows.map((slice) => textWidth(`${slice.point.x} ${slice.percent}`) + textWidth(formatValue(slice.point.y, data.format))),
  ) + SWATCH + 3 * LABEL_GAP
  return variants(data, columns, scale, label, html``, (width, ink, markBytes) => {
    if (!points.length) return noPoints(width, height, ink)
    const legendWidth = round(clamp(legendContent, MIN_LEGEND_WIDTH, Math.min(width * 0.45, MAX_LEGEND_WIDTH)))
    const radius = round(Math.max(2, Math.min(width - legendWidth - 4 * PAD, height - 2 * PAD) / 2))
    const cx = round(Math.max(PAD, (width - 2 * radius - 2 * PAD - legendWidth) / 2) + radius)
    const cy = round(height / 2)
    const key = legend(rows, more, cx + radius + 2 * PAD, legendWidth, height, ink, data.format)
    const drawn = fitSlices(fitting, Math.max(1, Math.floor((2 * Math.PI * radius) / MIN_MARK_UNITS)), markBytes - utf8Length(key.value))
    const shapes: string[] = []
    const labels: Array<Html | ''> = []
    let angle = -Math.PI / 2
    for (const slice of drawn) {
      const end = angle + (slice.point.y / pie.total) * 2 * Math.PI
      shapes.push(sliceShape(slice, cx, cy, radius, angle, end))
      labels.push(sliceLabel(slice, cx, cy, radius, angle, end))
      angle = end
    }
    return html`${pie.total > 0 ? '' : html`<circle class="no-slices" cx="${cx}" cy="${cy}" r="${radius}" fill="none" stroke="${ink}" stroke-opacity="0.3" stroke-dasharray="4 4" />`}
  <g class="slices">${joined(shapes)}</g>
  <g class="slice-labels">${labels}</g>
  ${key}`
  })
}
